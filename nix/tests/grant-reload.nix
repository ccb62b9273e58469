# A grant-only change reloads brokerd alone; a changed setting restarts the roles (the core's
# `triggers` in nix/units.nix, which tests/units/core.sh checks without NixOS). The node
# switches at run time to specialisations that differ from it in one grant or one setting,
# as `nixos-rebuild switch` would.
{
  nodes.machine = {
    imports = [ ./lib/node.nix ];
    specialisation.grant-added.configuration.services.boxmaker.grants.inbox-list = {
      tool = "list_dir";
      mode = "auto";
      max_taint = "secret";
      untrusted = true;
      constraints.paths = [ "/srv/inbox" ];
    };
    specialisation.setting-changed.configuration.services.boxmaker.settings.loop.max_tool_calls = 3;
  };

  testScript = ''
    ROLES = ["boxmaker-brokerd", "boxmaker-loopd", "boxmaker-inferproxy"]

    def owner(command: str) -> str:
        return machine.succeed(f"runuser -u owner -- {command}")

    def main_pids() -> dict[str, str]:
        return {r: machine.succeed(f"systemctl show -p MainPID --value {r}").strip() for r in ROLES}

    def switch(to: str) -> dict[str, list[str]]:
        """Switches to a specialisation; the units switch-to-configuration named per verb."""
        out = machine.succeed(f"/run/booted-system/specialisation/{to}/bin/switch-to-configuration test 2>&1")
        print(out)
        verbs: dict[str, list[str]] = {}
        for line in out.splitlines():
            for verb in ("stopping", "starting", "restarting", "reloading"):
                prefix = f"{verb} the following units: "
                if line.startswith(prefix):
                    verbs[verb] = line[len(prefix):].split(", ")
        return verbs

    machine.wait_for_unit("boxmaker-loopd.socket")
    machine.wait_for_unit("boxmaker-fake-llama-server.service")
    machine.wait_for_open_port(8080)

    with subtest("a chat starts every role"):
        assert "buy milk" in owner("bxctl chat -m 'what is on my todo list?'")
        before = main_pids()
        assert "0" not in before.values(), before

    with subtest("a grant-only change reloads brokerd and restarts no role"):
        assert "inbox-list" not in owner("bxctl grants show")
        verbs = switch("grant-added")
        assert verbs.get("reloading") == ["boxmaker-brokerd.service"], verbs
        for verb in ("stopping", "restarting", "starting"):
            assert not any(u.startswith("boxmaker-") for u in verbs.get(verb, [])), verbs
        assert main_pids() == before, (before, main_pids())
        machine.wait_until_succeeds("runuser -u owner -- bxctl grants show | grep -q inbox-list")
        assert main_pids() == before, (before, main_pids())

    with subtest("a changed setting restarts the roles"):
        verbs = switch("setting-changed")
        stopped = verbs.get("stopping", []) + verbs.get("restarting", [])
        for role in ROLES:
            assert f"{role}.service" in stopped, (role, verbs)
        assert "buy milk" in owner("bxctl chat -m 'what is on my todo list?'")
        after = main_pids()
        for role in ROLES:
            assert after[role] != before[role], (role, before, after)
  '';
}
