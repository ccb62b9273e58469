# The hands' part of brokerd's [broker] section in the unit core (nix/units.nix imports
# this; builtins only, BRIEF decision 2; docs/tools.md, docs/decisions.md H11, H15): the
# account the write units run as, the programs run grants may name with their closures, and
# the systemd version the units are written for.
{
  # The write units' account (null: no write grant can load under systemd), never root.
  handsUser,
  # Name -> absolute path; for each, the file listing its closure (Nix's closureInfo
  # store-paths), all of the store its unit binds.
  programs,
  programClosures,
  # On a systemd older than 257 (no PrivatePIDs=): may the write units share the PID
  # namespace (the container tier's bookworm only).
  handsSharedPids,
  systemdVersion,
}:
let
  # The major version: 257 of "257.5".
  systemdMajor = builtins.fromJSON (builtins.head (builtins.split "[.]" (toString systemdVersion)));
in
if handsUser == "root" then
  throw "services.boxmaker.hands.user must not be root: the write units would run with root's rights over the granted directories"
else
  { systemd_version = systemdMajor; }
  // (if handsUser == null then { } else { hands_user = handsUser; })
  // (if programs == { } then { } else { inherit programs; })
  // (if programClosures == { } then { } else { program_closures = programClosures; })
  // (if handsSharedPids then { hands_shared_pids = true; } else { })
