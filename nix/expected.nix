# What the module generated, for `bxctl verify` (docs/verify.md): each unit of the unit core
# with its own section (the assignments of [Service], [Socket], [Timer] or [Path], each key's
# values in unit-file syntax and order) and, for a service, the most exposure `systemd-analyze
# security` may give it (nix/limits.nix, in tenths). `bxctl verify` compares each live unit's
# `systemctl show` with it, so a drop-in or a runtime change that loosens a unit is found.
#
# A unit's section comes from the unit file as installed when `texts` has it: the NixOS
# module passes the text of each unit NixOS writes (config.systemd.units.<name>.text), which
# holds what NixOS adds to every service (its Environment= PATH and the like) besides what
# the core says. Otherwise it comes from the core, as nix/render-units.nix writes the files
# the container tier installs. tests/units/check.sh checks that the two agree on those files.
# Builtins only (BRIEF decision 2).
{
  # The unit core (nix/units.nix), evaluated.
  core,
  # Unit name (`boxmaker-brokerd.service`) -> the unit file's text, where known.
  texts ? { },
}:
let
  inherit (builtins)
    attrNames
    isBool
    isList
    listToAttrs
    map
    ;
  limits = import ./limits.nix;

  value = v: if isBool v then (if v then "yes" else "no") else toString v;
  # Each key's values; a key with none (an empty list) is not in the file, so not here.
  assignments =
    attrs:
    let
      all = builtins.mapAttrs (_: v: map value (if isList v then v else [ v ])) attrs;
    in
    removeAttrs all (builtins.filter (k: all.${k} == [ ]) (attrNames all));

  parse = import ./unit-text.nix;

  sectionOf = { service = "Service"; socket = "Socket"; timer = "Timer"; path = "Path"; };
  setOf = suffix: name: attrs: let unit = "${name}.${suffix}"; in
    if texts ? ${unit} then parse sectionOf.${suffix} texts.${unit} else assignments attrs;

  limit = name: s: limits.units.${name} or (if (s.PrivateNetwork or true) == false then limits.withNetwork else limits.withoutNetwork);

  service = name: {
    name = "${name}.service";
    value = {
      max_exposure = limit name core.services.${name}.service;
      set = setOf "service" name core.services.${name}.service;
    };
  };
  other = suffix: set: map (name: {
    name = "${name}.${suffix}";
    value.set = setOf suffix name set.${name}.${suffix};
  }) (attrNames set);
in
{
  version = 1;
  units = listToAttrs (
    map service (attrNames core.services)
    ++ other "socket" core.sockets
    ++ other "timer" core.timers
    ++ other "path" core.paths
  );
}
