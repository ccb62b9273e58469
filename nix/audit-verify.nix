# The daily full verification of brokerd's audit log in the unit core (nix/units.nix
# imports this; builtins only, BRIEF decision 2; docs/decisions.md A8). brokerd's start
# verifies only the lines after its checkpoint, so that its start time does not grow with
# its history; the whole chain is verified here instead, once a day: the oneshot asks
# brokerd on its admin socket (`bxctl audit verify --brokerd`), which reads every line up
# to its last, checks the checkpoint against the bytes and moves it there. A failure is
# logged by brokerd at error level (the journal), posted on Mattermost through gatewayd when
# the gateway is on, and fails this unit (bxctl exits 1), so `systemctl --failed` shows it.
{
  package,
  configFile,
  hardening,
  adminGroup,
  # When it runs (OnCalendar=); `services.boxmaker.auditVerify.schedule`.
  schedule,
}:
{
  service = {
    unit = {
      Description = "boxmaker: brokerd verifies its whole audit chain";
      # brokerd is socket-activated: the request starts it when it is not running.
      Wants = [ "boxmaker-brokerd-admin.socket" ];
      After = [ "boxmaker-brokerd-admin.socket" ];
    };
    # The hardening block as it is: no network, no state, nothing written; it speaks to
    # brokerd's admin socket only.
    service = hardening // {
      Type = "oneshot";
      ExecStart = "${package}/bin/bxctl --config ${configFile} audit verify --brokerd";
      User = "boxmaker-audit-verify";
      # Loosening: the owner's admin group as its primary group (static, so systemd takes it
      # instead of a dynamic one): the admin pair directory is entered by it, and brokerd
      # admits a peer whose SO_PEERCRED gid it is (a supplementary group is not in it). The
      # unit runs this one fixed command; brokerd decides what the request may do.
      Group = adminGroup;
      # brokerd reads about 200 MiB/s of log on these machines; a year of a busy one is a
      # few GiB. A run that hangs ends here, and fails the unit.
      TimeoutStartSec = "1h";
    };
  };

  timer = {
    unit.Description = "boxmaker: brokerd verifies its whole audit chain (${schedule})";
    timer = {
      OnCalendar = schedule;
      # A run missed while the machine was off happens after boot.
      Persistent = true;
      RandomizedDelaySec = "30min";
      Unit = "boxmaker-audit-verify.service";
    };
    install.WantedBy = [ "timers.target" ];
  };
}
