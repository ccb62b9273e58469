# (c) A tool call no grant covers is denied, the model is told so, and the audit chain
# that records it verifies; a tampered copy of the chain does not. The daily verification
# (boxmaker-audit-verify, docs/decisions.md A8) asks brokerd, which verifies the whole chain
# and moves its checkpoint; a changed line before the checkpoint leaves brokerd's start
# untroubled and fails the daily run, in the journal.
{
  nodes.machine.imports = [ ./lib/node.nix ];

  testScript = ''
    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)

    with subtest("read_file on /etc/passwd is denied"):
        out = machine.succeed("runuser -u owner -- bxctl chat -m 'show me /etc/passwd'")
        print(out)
        assert "denied" in out, out
        assert "I am not allowed to do that." in out, out
        assert "root:" not in out, out

    with subtest("the denial is audited and the chain verifies"):
        machine.succeed("bxctl audit show | grep -q DENIED")
        machine.succeed("bxctl audit verify | grep -q 'audit chain good'")

    with subtest("a changed record breaks the chain"):
        machine.succeed("cp -r /var/lib/private/boxmaker/audit /root/audit-copy")
        # Control: the untouched copy verifies, so the failure below is the change's.
        machine.succeed("bxctl audit verify --dir /root/audit-copy | grep -q 'audit chain good'")
        # Change the first record (the grant snapshot), which the denial's `prev` links to.
        # Not the denial itself: the last record has no successor, so a change there shows
        # only as a different head (measured in tests/container/inside.sh).
        machine.succeed("sed -i '1s/\"time\":\"2/\"time\":\"1/' /root/audit-copy/*.jsonl")
        machine.fail("bxctl audit verify --dir /root/audit-copy")

    with subtest("the daily verification: brokerd verifies the whole chain, its unit succeeds"):
        machine.succeed("systemctl is-active boxmaker-audit-verify.timer")
        machine.succeed("systemctl start boxmaker-audit-verify.service")
        machine.succeed("journalctl -u boxmaker-audit-verify.service | grep -q 'audit chain good (verified by brokerd)'")
        machine.succeed("bxctl audit verify | grep -q 'checkpoint at seq .* agrees'")

    with subtest("a changed line before the checkpoint: brokerd starts, the daily run fails"):
        machine.succeed("cp -p /var/lib/private/boxmaker/audit/*.jsonl /root/")
        machine.succeed("sed -i '1s/\"time\":\"2/\"time\":\"1/' /var/lib/private/boxmaker/audit/*.jsonl")
        machine.succeed("systemctl restart boxmaker-brokerd.service")
        machine.succeed("journalctl -u boxmaker-brokerd.service | grep -q 'verified past its checkpoint'")
        machine.fail("systemctl start boxmaker-audit-verify.service")
        machine.succeed("journalctl -u boxmaker-brokerd.service -p err | grep -q 'verification of the whole chain FAILED'")
        machine.succeed("cp -p /root/*.jsonl /var/lib/private/boxmaker/audit/")
        machine.succeed("systemctl start boxmaker-audit-verify.service")

    with subtest("the audit log is brokerd's alone"):
        machine.fail("runuser -u owner -- ls /var/lib/private/boxmaker/audit")
  '';
}
