# (a) Socket activation: systemd holds every role's socket from boot, and brokerd does not
# run until the first bxctl connection starts it; it reports READY only once it serves.
{
  nodes.machine.imports = [ ./lib/node.nix ];

  testScript = ''
    machine.wait_for_unit("sockets.target")
    for socket in ["boxmaker-brokerd-loop", "boxmaker-brokerd-admin", "boxmaker-brokerd-chat", "boxmaker-brokerd-witness", "boxmaker-loopd", "boxmaker-inferproxy"]:
        machine.wait_for_unit(f"{socket}.socket")

    with subtest("no role runs before a connection"):
        for role in ["brokerd", "loopd", "inferproxy"]:
            machine.fail(f"systemctl is-active --quiet boxmaker-{role}.service")

    with subtest("each pair directory admits only its pair's group"):
        for d, group in [("loop-broker", "boxmaker-loop-broker"), ("admin-broker", "boxmaker-admin"),
                         ("loop-infer", "boxmaker-loop-infer"), ("chat-loop", "boxmaker-chat"),
                         ("chat-broker", "boxmaker-chat"),
                         ("infer-broker", "boxmaker-infer-broker")]:
            machine.succeed(f"test \"$(stat -c '%a %U %G' /run/boxmaker/{d})\" = '750 root {group}'")
        machine.succeed("test -S /run/boxmaker/admin-broker/broker.sock")
        machine.succeed("test \"$(stat -c '%a' /run/boxmaker/admin-broker/broker.sock)\" = 660")

    with subtest("the first bxctl connection starts brokerd"):
        machine.succeed("runuser -u owner -- bxctl approvals | grep -q 'no approvals waiting'")
        machine.wait_for_unit("boxmaker-brokerd.service")
        # Type=notify: active means brokerd said READY=1, sent once both sockets serve.
        machine.succeed("systemctl show -p StatusText --value boxmaker-brokerd | grep -q '^serving'")
        machine.succeed("systemctl show -p User --value boxmaker-brokerd | grep -qx boxmaker-brokerd")
        # Only the admin side was used: the chat side has not started anything.
        machine.fail("systemctl is-active --quiet boxmaker-loopd.service")

    with subtest("someone outside the admin group cannot reach brokerd"):
        machine.fail("runuser -u stranger -- bxctl approvals")

    with subtest("a chat starts loopd and inferproxy on demand"):
        machine.wait_for_unit("boxmaker-fake-llama-server.service")
        machine.wait_for_open_port(8080)
        machine.succeed("runuser -u owner -- bxctl chat -m hello | grep -q \"test model\"")
        machine.wait_for_unit("boxmaker-loopd.service")
        machine.wait_for_unit("boxmaker-inferproxy.service")
  '';
}
