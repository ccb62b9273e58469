# (d) A grant in `ask` mode: the call waits for the owner, `bxctl approve` lets it run, and
# the approval is single use and bound to the request it was shown with.
{
  nodes.machine.imports = [ ./lib/node.nix ];

  testScript = ''
    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)

    # The chat blocks until the owner answers, so it runs in the background.
    machine.succeed(
        "runuser -u owner -- sh -c \"bxctl chat -m 'list my notes' > /tmp/list.out 2>&1 &\""
    )

    with subtest("the call waits for the owner"):
        machine.wait_until_succeeds("runuser -u owner -- bxctl approvals | grep -q '^approval '")
        machine.wait_until_succeeds("grep -q 'waits for your approval' /tmp/list.out")
        approval = machine.succeed(
            "runuser -u owner -- bxctl approvals | awk '/^approval /{print $2; exit}'"
        ).strip()

    with subtest("nobody outside the admin group can answer"):
        machine.fail(f"runuser -u stranger -- bxctl approve {approval}")

    with subtest("an unknown approval is refused"):
        machine.fail("runuser -u owner -- bxctl approve 00000000000000000000000000000000")

    with subtest("bxctl approve lets the call run"):
        machine.succeed(f"runuser -u owner -- bxctl approve {approval} | grep -q approved")
        machine.wait_until_succeeds("grep -q 'Your notes directory holds todo.md.' /tmp/list.out")
        machine.succeed("bxctl audit show | grep -q APPROVED")

    with subtest("an approval is used once"):
        machine.fail(f"runuser -u owner -- bxctl approve {approval}")
        machine.succeed("bxctl audit verify | grep -q 'audit chain good'")
  '';
}
