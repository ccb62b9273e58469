# The one hardening block every role starts from (nix/units.nix imports this; builtins only,
# BRIEF decision 2). A role that needs more says so in nix/units.nix, with the reason, by
# overriding a key; nothing else differs between roles. `execPaths`: where programs may be
# executed from (the store on NixOS; elsewhere /usr, the loader's paths and the package).
{ execPaths }:
{
  # A fresh uid per start, no files owned elsewhere, RemoveIPC, ProtectSystem=strict,
  # PrivateTmp. Names are prefixed: a DynamicUser named like a static user runs as it.
  DynamicUser = true;
  ProtectSystem = "strict";
  ProtectHome = true;
  PrivateTmp = true;
  PrivateDevices = true;
  DevicePolicy = "closed";
  PrivateMounts = true;
  PrivateIPC = true;
  UMask = "0077";
  NoExecPaths = [ "/" ];
  ExecPaths = execPaths;
  # The system bus is brokerd's alone (to start tool units); no other role has any
  # business with D-Bus or systemd's own sockets.
  InaccessiblePaths = [ "-/run/dbus" "-/run/systemd/private" ];
  ProtectProc = "invisible";
  ProcSubset = "pid";
  ProtectKernelTunables = true;
  ProtectKernelModules = true;
  ProtectKernelLogs = true;
  ProtectControlGroups = true;
  ProtectClock = true;
  ProtectHostname = true;
  KeyringMode = "private";
  RestrictNamespaces = true;
  RestrictRealtime = true;
  RestrictSUIDSGID = true;
  LockPersonality = true;
  # Plain Rust, no JIT.
  MemoryDenyWriteExecute = true;
  NoNewPrivileges = true;
  CapabilityBoundingSet = "";
  AmbientCapabilities = "";
  SystemCallArchitectures = "native";
  SystemCallFilter = [ "@system-service" "~@privileged @resources" ];
  SystemCallErrorNumber = "EPERM";
  # AF_UNIX only: sd_notify and the pair sockets are Unix sockets. No IP at all, and no
  # listening socket of its own: systemd binds every socket a role serves.
  RestrictAddressFamilies = "AF_UNIX";
  PrivateNetwork = true;
  IPAddressDeny = "any";
  SocketBindDeny = "any";
  LimitCORE = "0";
  # Not PrivateUsers=: inside a user namespace SO_PEERCRED reports every peer outside it
  # as `nobody`, which would defeat the peer checks every role makes (daemon::peer), and
  # the unmapped SupplementaryGroups could not be set.
}
