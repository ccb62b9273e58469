# Part of the unit core (nix/units.nix), builtins only: what a change of the configuration
# restarts or reloads, and what a configuration cannot do. The NixOS module maps `triggers`
# onto restartTriggers and reloadTriggers and `warnings` onto its warnings;
# tests/units/core.sh evaluates both.
{
  # config.toml's content, as the core writes it.
  config,
  # The grants, id -> the attributes of its file (docs/grants.md).
  grants,
  # null when gatewayd is not deployed.
  gateway,
  # Who is in adminGroup as far as the caller knows, or null when it cannot know.
  adminMembers,
  adminGroup,
}:
let
  inherit (builtins) attrNames concatStringsSep filter listToAttrs map toJSON;

  # The roles that read config.toml at start (their ExecStart names it).
  configReaders = [ "boxmaker-brokerd" "boxmaker-loopd" "boxmaker-inferproxy" ]
    ++ (if gateway == null then [ ] else [ "boxmaker-gatewayd" ]);

  asks = g: (g.mode or "") == "ask" || (g.if_untrusted or "") == "ask";
  askGrants = filter (id: asks grants.${id}) (attrNames grants);
in
{
  # Per service: each role reads config.toml only at start, so a change of its content
  # restarts the roles that read it; brokerd reads the grants again on SIGHUP (ExecReload),
  # so a grant change reloads brokerd alone. config.toml names the grants directory by path,
  # never by content, so a grant change leaves it as it was.
  triggers = {
    restart = listToAttrs (map (name: { inherit name; value = [ (toJSON config) ]; }) configReaders);
    reload.boxmaker-brokerd = [ (toJSON grants) ];
  };

  # Configurations that work but cannot do what they say: an `ask` grant waits for an answer
  # that only the admin group (bxctl) or the gateway can give.
  warnings =
    if askGrants != [ ] && gateway == null && adminMembers == [ ] then
      [
        ("boxmaker: the grants ${concatStringsSep ", " askGrants} ask the owner, but nobody can answer:"
          + " the gateway is off and no user is in the admin group ${adminGroup}, so every call they"
          + " ask for waits until its approval expires. Add the owner to the group"
          + " (users.users.<owner>.extraGroups = [ \"${adminGroup}\" ]), or enable"
          + " services.boxmaker.gateway, or give these grants mode = \"auto\" or \"deny\".")
      ]
    else
      [ ];
}
