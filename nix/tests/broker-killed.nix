# (f) brokerd killed mid-session (SIGKILL while a call waits for the owner): systemd
# restarts it, the session's taint and untrusted flag survive and still decide, and the
# audit chain verifies.
{
  nodes.machine.imports = [ ./lib/node.nix ];

  testScript = ''
    import re

    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)

    def owner(command):
        return machine.succeed(f"runuser -u owner -- {command}")

    with subtest("reading the inbox marks the session untrusted"):
        out = owner("bxctl chat -m 'read my inbox'")
        print(out)
        assert "Your inbox has one mail." in out, out
        found = re.search(r"\[session ([^\]]+)\]", out)
        assert found is not None, out
        session = found.group(1)
        info = owner(f"bxctl session {session}")
        assert "taint private" in info and "untrusted true" in info, info

    with subtest("brokerd is killed while a call waits for the owner"):
        owner(f"sh -c \"bxctl chat --session {session} -m 'list my notes' > /tmp/list.out 2>&1 &\"")
        machine.wait_until_succeeds("runuser -u owner -- bxctl approvals | grep -q '^approval '")
        machine.succeed("systemctl kill --signal=KILL boxmaker-brokerd.service")
        # Restart=on-failure brings it back without waiting for a connection.
        machine.wait_until_succeeds("test \"$(systemctl show -p NRestarts --value boxmaker-brokerd)\" -ge 1")
        machine.wait_for_unit("boxmaker-brokerd.service")

    with subtest("the taint survives and still decides"):
        info = owner(f"bxctl session {session}")
        assert "taint private" in info and "untrusted true" in info, info
        # notes-read has if_untrusted = "deny": the tainted session may not read the notes...
        out = owner(f"bxctl chat --session {session} -m 'what is on my todo list?'")
        assert "denied" in out and "buy milk" not in out, out
        # ...while a fresh session may.
        assert "buy milk" in owner("bxctl chat -m 'what is on my todo list?'")

    with subtest("the audit chain survives"):
        machine.succeed("bxctl audit verify | grep -q 'audit chain good'")
        machine.succeed("bxctl audit show | grep -q 'ALLOWED by grant inbox-read'")
  '';
}
