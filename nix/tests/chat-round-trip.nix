# (b) A chat round trip against the fake llama-server: the model asks for read_file on a
# granted directory, brokerd allows it, the tool runs in a transient unit, and the answer
# built from the file comes back to `bxctl chat`.
{
  nodes.machine.imports = [ ./lib/node.nix ];

  testScript = ''
    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)

    with subtest("an allowed tool call answers from the file"):
        out = machine.succeed("runuser -u owner -- bxctl chat -m 'what is on my todo list?'")
        print(out)
        assert "[tool read_file" in out, out
        assert "Your todo list says: buy milk." in out, out

    with subtest("the tool ran in its own transient unit, not in brokerd"):
        machine.succeed("journalctl -b --no-pager | grep -q 'boxmaker-tool-.*\\.service'")
        # --collect: nothing of the run is left behind.
        machine.fail("systemctl list-units --all --no-legend 'boxmaker-tool-*' | grep -q .")

    with subtest("the decision is audited"):
        machine.succeed("bxctl audit show | grep -q 'ALLOWED by grant notes-read'")

    with subtest("the session is kept by loopd"):
        machine.succeed("runuser -u owner -- bxctl sessions | grep -v -q 'no sessions'")
  '';
}
