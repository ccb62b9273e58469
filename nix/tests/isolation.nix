# (e) Isolation: no role's user can read another role's state, only brokerd can reach the
# system bus, and a tool unit reaches neither D-Bus, systemd's sockets nor the network
# when its grant names no host.
{
  nodes.machine.imports = [ ./lib/node.nix ];

  testScript = ''
    import shlex

    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)
    # One chat starts every role, so each has its user and its state directories.
    machine.succeed("runuser -u owner -- bxctl chat -m 'what is on my todo list?'")
    for role in ["brokerd", "loopd", "inferproxy"]:
        machine.wait_for_unit(f"boxmaker-{role}.service")

    def pid(role):
        return machine.succeed(f"systemctl show -p MainPID --value boxmaker-{role}").strip()

    def as_user(role, command):
        uid = machine.succeed(f"id -u boxmaker-{role}").strip()
        gid = machine.succeed(f"id -g boxmaker-{role}").strip()
        return f"setpriv --reuid={uid} --regid={gid} --clear-groups {command}"

    with subtest("each role has its own user and state directory"):
        users = {machine.succeed(f"id -u boxmaker-{r}").strip() for r in ["brokerd", "loopd", "inferproxy"]}
        assert len(users) == 3, users
        machine.succeed("test \"$(stat -c %a /var/lib/private)\" = 700")
        machine.succeed("test \"$(stat -c '%U %a' /var/lib/private/boxmaker/audit)\" = 'boxmaker-brokerd 700'")
        machine.succeed("test \"$(stat -c '%U %a' /var/lib/private/boxmaker/sessions)\" = 'boxmaker-loopd 700'")

    with subtest("no role's user can read another role's state"):
        machine.fail(as_user("loopd", "ls /var/lib/private/boxmaker/audit"))
        machine.fail(as_user("inferproxy", "ls /var/lib/private/boxmaker/sessions"))
        machine.fail(as_user("brokerd", "ls /var/lib/private/boxmaker/sessions"))
        # Inside its own mount namespace a role does not even see the others' directories.
        machine.succeed(f"nsenter -t {pid('loopd')} -m test -d /var/lib/private/boxmaker/sessions")
        machine.fail(f"nsenter -t {pid('loopd')} -m test -e /var/lib/private/boxmaker/audit")
        machine.fail(f"nsenter -t {pid('brokerd')} -m test -e /var/lib/private/boxmaker/sessions")
        machine.fail(f"nsenter -t {pid('inferproxy')} -m test -e /var/lib/private/boxmaker/audit")

    with subtest("only brokerd can reach the system bus"):
        bus = "UNIX-CONNECT:/run/dbus/system_bus_socket"
        # Control: any user on the host may connect to the bus socket itself.
        machine.succeed(f"setpriv --reuid=65534 --regid=65534 --clear-groups socat -u OPEN:/dev/null {bus}")
        for role in ["loopd", "inferproxy"]:
            uid = machine.succeed(f"id -u boxmaker-{role}").strip()
            machine.fail(f"nsenter -t {pid(role)} -m -S {uid} -G {uid} socat -u OPEN:/dev/null {bus}")

    with subtest("a tool unit reaches no socket and no network without a host grant"):
        # The unit brokerd would start for notes-read, with a probe in place of the tool.
        unit = machine.succeed("brokerd --print-tool-unit notes-read")
        props = [
            line for line in unit.split("[Service]", 1)[1].splitlines()
            if "=" in line and not line.startswith(("Type=", "ExecStart=", "#"))
        ]
        args = " ".join("-p " + shlex.quote(p) for p in props)

        def probe(command):
            return f"systemd-run --wait --pipe --quiet --collect --service-type=exec {args} -- {command}"

        cat = "$(readlink -f /run/current-system/sw/bin/cat)"
        socat = "$(readlink -f /run/current-system/sw/bin/socat)"
        # Control: the probe runs and reads the granted path.
        machine.succeed(probe(f"{cat} /srv/notes/todo.md") + " | grep -q 'buy milk'")
        machine.fail(probe(f"{cat} /etc/passwd"))
        for target in [
            "UNIX-CONNECT:/run/dbus/system_bus_socket",
            "UNIX-CONNECT:/run/systemd/private",
            "UNIX-CONNECT:/run/systemd/notify",
            "UNIX-CONNECT:/run/boxmaker/admin-broker/broker.sock",
            "TCP:127.0.0.1:8080",
        ]:
            machine.fail(probe(f"{socat} -u OPEN:/dev/null {target}"))
        # Control: from the host the fake llama-server is reachable.
        machine.succeed("socat -u OPEN:/dev/null TCP:127.0.0.1:8080")

    with subtest("brokerd's polkit rule admits only boxmaker-tool units"):
        machine.succeed("grep -q 'boxmaker-tool-' /etc/polkit-1/rules.d/*.rules")
        run = "systemd-run --wait --quiet --no-ask-password -p DynamicUser=yes"
        # Control: brokerd's user may start a tool unit.
        machine.succeed(as_user("brokerd", f"{run} --unit=boxmaker-tool-probe-1 true"))
        # Nobody else may, whatever the name.
        machine.fail(f"runuser -u owner -- {run} --unit=boxmaker-tool-probe-2 true")
        # systemd 257 and later pass the unit name: another name is refused even for brokerd.
        machine.fail(as_user("brokerd", f"{run} --unit=not-a-tool true"))
  '';
}
