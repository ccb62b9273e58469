# The daily `bxctl verify` in the unit core (nix/units.nix imports this; builtins only, BRIEF
# decision 2; docs/verify.md). A oneshot started by its timer runs the whole verification of
# the live deployment (the model server through the stack, every unit against what the
# module generated, the audit log, the grants, the approvals); each check is a line in the
# journal, a FAIL at error priority, and a FAIL fails the unit (`systemctl --failed`).
#
# It needs both of the owner's sides: brokerd's admin side (the grants, the approvals, the
# audit verification) and loopd's chat side (the model through inferproxy, the replay). Each
# admits a peer by SO_PEERCRED against a group: brokerd's admin side by the peer's group id or
# its user's membership, loopd's chat side the same. A DynamicUser has one group the kernel
# reports (its primary) and no membership NSS knows, so it could use one side only; the unit
# runs instead as a static system user, `boxmaker-verify`, whose primary group is adminGroup
# and who is a member of chatGroup (the module declares it; the container tier's sysusers.conf
# makes it). It runs this one fixed command and writes nothing. With the gateway on it passes
# `--alert`: a run with a FAIL hands its FAIL lines to brokerd's admin side, which audits
# them and has gatewayd post them in the owner's channel (docs/verify.md, decisions V18).
{
  package,
  configFile,
  hardening,
  adminGroup,
  chatGroup,
  # When it runs (OnCalendar=); `services.boxmaker.verify.schedule`.
  schedule,
  # Whether gatewayd is deployed: then a failure is posted in the owner's channel.
  gatewayOn,
}:
let
  sides = [ "boxmaker-brokerd-admin.socket" "boxmaker-brokerd-chat.socket" "boxmaker-loopd.socket" ];
in
{
  # The static user (nix/module.nix maps it onto users.users, nix/render-units.nix onto
  # sysusers.conf). Not an owner: nix/changes.nix does not count it as one who can answer.
  user = {
    name = "boxmaker-verify";
    group = adminGroup;
    extraGroups = [ chatGroup ];
    description = "boxmaker's daily verification (bxctl verify)";
  };

  service = {
    unit = {
      Description = "boxmaker: bxctl verify, the live deployment checked";
      # The roles are socket-activated: the checks start what is not running.
      Wants = sides;
      After = sides;
    };
    service = hardening // {
      Type = "oneshot";
      ExecStart = "${package}/bin/bxctl --config ${configFile} verify${if gatewayOn then " --alert" else ""}";
      # Loosening: a static user (above) instead of DynamicUser, in adminGroup (primary, for
      # brokerd's admin side) and chatGroup (a member, for loopd's chat side). What
      # DynamicUser implied and the block does not set is set here.
      DynamicUser = false;
      User = "boxmaker-verify";
      Group = adminGroup;
      SupplementaryGroups = [ chatGroup ];
      RemoveIPC = true;
      # Loosening: the system bus, over which systemctl, busctl and systemd-analyze ask
      # systemd about the units (queries any user may make; polkit gates no query).
      InaccessiblePaths = [ "-/run/systemd/private" ];
      # Loosening: llama-server's /props on loopback TCP, so the host's network namespace
      # with IP sockets, and the kernel's filter admits loopback only.
      PrivateNetwork = false;
      RestrictAddressFamilies = "AF_UNIX AF_INET AF_INET6";
      IPAddressAllow = "localhost";
      # The replay waits for the model, and brokerd reads the whole audit log.
      TimeoutStartSec = "1h";
    };
  };

  timer = {
    unit.Description = "boxmaker: bxctl verify, the live deployment checked (${schedule})";
    timer = {
      OnCalendar = schedule;
      # A run missed while the machine was off happens after boot.
      Persistent = true;
      RandomizedDelaySec = "30min";
      Unit = "boxmaker-verify.service";
    };
    install.WantedBy = [ "timers.target" ];
  };
}
