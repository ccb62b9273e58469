# The unit core (nix/units.nix) rendered to files, builtins only: what the container tests
# install on a systemd that is not NixOS, and what tests/units/check.sh scores.
#
#   nix-instantiate --eval --strict --json nix/render-units.nix --arg package '"/opt/boxmaker"'
#
# prints one JSON object, file name -> text: every .service, .socket, .timer and .path unit,
# `tmpfiles.conf`, `sysusers.conf` (the static groups and users, which NixOS makes with
# users.groups and users.users), `polkit.rules`, `config.toml` and `units.json` (what
# `bxctl verify` compares the live units with: nix/expected.nix). Every argument of
# nix/units.nix may be passed.
{ ... }@args:
let
  inherit (builtins)
    attrNames
    concatMap
    concatStringsSep
    filter
    isAttrs
    isBool
    isInt
    isList
    isString
    length
    listToAttrs
    map
    replaceStrings
    toJSON
    ;

  core = import ./units.nix args;

  # One `Key=value` line per value; a list repeats the key in order.
  value = v: if isBool v then (if v then "yes" else "no") else toString v;
  lines = attrs: concatMap (k: map (v: "${k}=${value v}") (if isList attrs.${k} then attrs.${k} else [ attrs.${k} ])) (attrNames attrs);
  section = name: attrs: if attrs == { } then [ ] else [ "[${name}]" ] ++ lines attrs ++ [ "" ];

  unitFile =
    kind: u:
    concatStringsSep "\n" (
      [ "# Generated from nix/units.nix by nix/render-units.nix; edit the Nix, not this file." ]
      ++ section "Unit" (u.unit or { })
      ++ section kind (u.${{ Service = "service"; Socket = "socket"; Timer = "timer"; Path = "path"; }.${kind}})
      ++ section "Install" (u.install or { })
    );

  files = kind: suffix: set: map (name: { name = "${name}.${suffix}"; value = unitFile kind set.${name}; }) (attrNames set);

  # TOML for config.toml, enough for its shapes: strings, integers, booleans, lists of
  # those, and tables (written as [a.b] sections after the table's own keys).
  tomlString = s: toJSON s; # JSON string escapes are valid TOML basic-string escapes
  tomlValue =
    v:
    if isString v then tomlString v
    else if isBool v then (if v then "true" else "false")
    else if isInt v then toString v
    else if isList v then "[" + concatStringsSep ", " (map tomlValue v) + "]"
    else throw "config.toml: cannot write ${builtins.typeOf v} values";
  toml =
    prefix: attrs:
    let
      keys = attrNames attrs;
      # A list of tables is an array of tables, [[key]] (the top level's `jobs`).
      arrays = filter (k: isList attrs.${k} && attrs.${k} != [ ] && isAttrs (builtins.head attrs.${k})) keys;
      plain = filter (k: !isAttrs attrs.${k} && !(builtins.elem k arrays)) keys;
      tables = filter (k: isAttrs attrs.${k}) keys;
      own = map (k: "${k} = ${tomlValue attrs.${k}}") plain;
      header = if prefix == "" || (plain == [ ] && tables != [ ]) then [ ] else [ "[${prefix}]" ];
      sub = k: toml (if prefix == "" then k else "${prefix}.${k}") attrs.${k};
      array = k: concatMap (t: [ "[[${k}]]" ] ++ map (f: "${f} = ${tomlValue t.${f}}") (attrNames t) ++ [ "" ]) attrs.${k};
    in
    concatStringsSep "\n" (header ++ own ++ [ "" ] ++ map sub tables ++ concatMap array arrays);
  # What the core refuses (nix/jobs.nix) is refused here too, each reason on its own line.
  checked = if core.jobProblems == [ ] then core else throw ("nix/units.nix:\n" + concatStringsSep "\n" core.jobProblems);
in
listToAttrs (
  files "Service" "service" checked.services
  ++ files "Socket" "socket" core.sockets
  ++ files "Timer" "timer" core.timers
  ++ files "Path" "path" core.paths
  ++ [
    {
      name = "tmpfiles.conf";
      value = concatStringsSep "\n" ([ "# boxmaker's runtime directories (nix/units.nix)." ] ++ core.tmpfiles) + "\n";
    }
    {
      name = "sysusers.conf";
      value =
        concatStringsSep "\n" (
          [ "# boxmaker's static groups and users (nix/units.nix); the roles' users are DynamicUser." ]
          ++ map (g: "g ${g} -") core.groups
          ++ concatMap (u: [ "u ${u.name} -:${u.group} ${toJSON u.description} - -" ] ++ map (g: "m ${u.name} ${g}") u.extraGroups) core.users
        )
        + "\n";
    }
    {
      name = "units.json";
      value = toJSON (import ./expected.nix { core = checked; });
    }
    {
      name = "polkit.rules";
      value = core.polkitRules;
    }
    {
      name = "config.toml";
      value = "# Generated from nix/units.nix; the roles' shared configuration.\n" + toml "" core.config;
    }
  ]
)
