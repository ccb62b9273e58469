# `bxctl verify` on NixOS (docs/verify.md): the units NixOS installed from the module, held to
# /etc/boxmaker/units.json, which the module wrote from the unit files NixOS writes (their
# Environment= included: nix/expected.nix). As root every check passes; the daily oneshot
# passes as its static user; a runtime drop-in that puts loopd in the admin group fails both,
# named, and taken back they pass again.
{
  nodes.machine = {
    imports = [ ./lib/node.nix ];
  };

  testScript = ''
    DROPIN = "/run/systemd/system/boxmaker-loopd.service.d"

    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)

    with subtest("sudo bxctl verify passes against the installed units"):
        out = machine.succeed("bxctl verify")
        print(out)
        assert "FAIL" not in out, out
        for line in (
            "ok    units  boxmaker-brokerd.service: exposure 0.4 (limit 1.0)",
            "ok    units  boxmaker-verify.service: exposure",
            "ok    model  replay: 3 turn(s) through loopd",
            "ok    state  audit: audit chain good",
        ):
            assert line in out, (line, out)

    with subtest("the daily oneshot passes, as the static user boxmaker-verify"):
        machine.succeed("systemctl start boxmaker-verify.service")
        user = machine.succeed("systemctl show -p User --value boxmaker-verify.service").strip()
        assert user == "boxmaker-verify", user
        machine.succeed("journalctl -u boxmaker-verify.service | grep -q 'ok    model  replay: '")

    with subtest("a drop-in putting loopd in the admin group fails it"):
        machine.succeed(f"mkdir -p {DROPIN}")
        machine.succeed(f"printf '[Service]\\nSupplementaryGroups=boxmaker-admin\\n' > {DROPIN}/50-loosen.conf")
        machine.succeed("systemctl daemon-reload")
        out = machine.fail("bxctl verify --only units")
        print(out)
        assert "FAIL  units  boxmaker-loopd.service: SupplementaryGroups=boxmaker-admin" in out, out
        machine.fail("systemctl start boxmaker-verify.service")
        machine.succeed("journalctl -u boxmaker-verify.service -p err | grep -q 'FAIL  units  boxmaker-loopd.service'")

    with subtest("taken back, it passes again"):
        machine.succeed(f"rm -r {DROPIN}")
        machine.succeed("systemctl daemon-reload")
        machine.succeed("bxctl verify --only units")
  '';
}
