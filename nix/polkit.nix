# Part of the unit core (nix/units.nix), builtins only: the polkit rule (BRIEF decision 1)
# for the target's systemd. Only brokerd's user may manage units, with the verbs start, stop
# and kill. systemd 257 and later pass the unit's name (`unit`) and the verb for every call
# on a unit, StartTransientUnit included (measured in the VM tier, docs/vm-tests.md); then
# only boxmaker-tool-*.service units are admitted, and a call that carries no unit (a
# manager method such as ClearJobs) is refused. Older systemd (Debian bookworm's 252)
# passes no unit name for StartTransientUnit: the rule then keeps a fallback that admits a
# call carrying no unit, and brokerd's own check of the unit name (runner::systemd) is the
# only name check. polkit never sees a unit's properties.
{
  # A string like "257.5", or an integer.
  systemdVersion,
}:
let
  namesPassed = builtins.compareVersions (toString systemdVersion) "257" >= 0;
  noUnit =
    if namesPassed then
      "  // systemd >= 257 passes the unit's name: a call that carries none is refused below."
    else
      "  if (!unit) {\n    // systemd < 257: the name of a transient unit is not passed.\n"
      + "    return polkit.Result.YES;\n  }";
in
''
  // boxmaker (nix/polkit.nix), for systemd ${toString systemdVersion}: brokerd starts one
  // transient unit per tool call.
  polkit.addRule(function(action, subject) {
    if (action.id != "org.freedesktop.systemd1.manage-units" ||
        subject.user != "boxmaker-brokerd") {
      return polkit.Result.NOT_HANDLED;
    }
    var unit = action.lookup("unit");
    var verb = action.lookup("verb");
    if (verb && ["start", "stop", "kill"].indexOf(verb) < 0) {
      return polkit.Result.NO;
    }
  ${noUnit}
    if (unit && /^boxmaker-tool-[a-z0-9-]+\.service$/.test(unit)) {
      return polkit.Result.YES;
    }
    return polkit.Result.NO;
  });
''
