# The unit core: every systemd unit, group, directory and polkit rule boxmaker needs, as
# plain data. BRIEF decision 2: builtins only (no nixpkgs, no lib), so a bare
# `nix-instantiate` (Debian's nix 2.8) can evaluate it. The NixOS module (nix/module.nix)
# maps it onto systemd.services/sockets, users.groups, tmpfiles and polkit;
# nix/render-units.nix renders the same data to unit files for the container tests. What
# is tested there is therefore what NixOS deploys.
#
# Values follow NixOS's serviceConfig conventions: a list is one line per element (order
# kept), `true`/`false` are yes/no, "" is an empty assignment (which resets a setting).
{
  # The workspace package: $package/bin holds every role binary.
  package ? "/nix/store/00000000000000000000000000000000-boxmaker",
  # StateDirectory= prefix under /var/lib; each role gets its own subdirectory.
  stateDir ? "boxmaker",
  # /run/<runName> holds the socket directories and the tool units' empty root.
  runName ? "boxmaker",
  configFile ? "/etc/boxmaker/config.toml",
  # The owner's groups: who may use bxctl's admin side (approvals) and who may chat.
  adminGroup ? "boxmaker-admin",
  chatGroup ? "boxmaker-chat",
  # Credentials for brokerd, name -> file outside the store (BRIEF decision 3).
  secrets ? { },
  # The fake llama-server for tests: null, or { script = PATH; listen = "127.0.0.1:8080"; }.
  fakeLlama ? null,
  # The Mattermost gateway (gatewayd): null, or { server; owners; channel; tokenFile;
  # allowedAddresses ? [ ]; }. tokenFile is a path outside the store (LoadCredential=);
  # allowedAddresses, when not empty, is gatewayd's IPAddressAllow= (the Mattermost host).
  gateway ? null,
  # The fake Mattermost for tests: null, or { listen = "127.0.0.1:8065"; }.
  fakeMattermost ? null,
  # Freeform config.toml content, merged over the defaults below (see config.rs).
  settings ? { },
  # The paths the file grants name (constraints.paths of read_file and list_dir grants).
  # brokerd sees them read-only: it resolves a call's path there (metadata only: no link
  # below the granted directory) before binding that one path into the tool's unit.
  grantPaths ? [ ],
  # The target's systemd version (a string like "257.5", or an integer): the polkit rule
  # depends on it (nix/polkit.nix). The module passes its own systemd's version; the
  # container tier 252 (Debian bookworm), the VM tier 257 (Debian trixie). The default is
  # the stricter rule, which fails closed on an older systemd (brokerd's tool units are
  # refused, with brokerd saying so) rather than admitting more.
  systemdVersion ? 257,
  # For nix/changes.nix: the grants (id -> attributes) and adminGroup's members (null: unknown).
  grants ? { },
  adminMembers ? null,
  # Scheduled jobs, name -> { schedule; prompt; … } (nix/jobs.nix says which keys).
  jobs ? { },
  # When brokerd verifies its whole audit log (nix/audit-verify.nix; OnCalendar=).
  auditVerifySchedule ? "daily",
  # When `bxctl verify` checks the live deployment (nix/verify.nix; OnCalendar=).
  verifySchedule ? "daily",
  # The hands (nix/hands.nix says each; docs/tools.md).
  handsUser ? null,
  programs ? { },
  programClosures ? { },
  handsSharedPids ? false,
}:
let
  inherit (builtins)
    attrNames
    concatStringsSep
    filter
    isAttrs
    listToAttrs
    map
    substring
    ;

  # lib.recursiveUpdate, rewritten: nested tables merge, anything else is replaced.
  merge =
    a: b:
    a
    // listToAttrs (
      map (name: {
        inherit name;
        value = if isAttrs (a.${name} or null) && isAttrs b.${name} then merge a.${name} b.${name} else b.${name};
      }) (attrNames b)
    );

  runDir = "/run/${runName}";
  hands = import ./hands.nix {
    inherit handsUser programs programClosures handsSharedPids systemdVersion;
  };
  onNix = substring 0 11 package == "/nix/store/";

  # Under DynamicUser, /var/lib/${stateDir}/audit is a symlink into /var/lib/private/, and
  # brokerd opens its audit directory with O_NOFOLLOW (a symlink there is refused). Inside
  # each role's namespace /var/lib/private is a tmpfs holding only that role's own
  # directories, bind-mounted at their real paths, so `home` names the real path.
  home = "/var/lib/private/${stateDir}";

  defaults = {
    inherit home;
    grants = "/etc/boxmaker/grants";
    # The owner's, root's to write: no role can change it, and brokerd accounts for the
    # system message loopd makes of it (docs/decisions.md X5).
    core_memory = "/etc/boxmaker/core.md";
    sockets = {
      loop_broker = "${runDir}/loop-broker";
      admin_broker = "${runDir}/admin-broker";
      loop_infer = "${runDir}/loop-infer";
      chat_loop = "${runDir}/chat-loop";
      chat_broker = "${runDir}/chat-broker";
      infer_broker = "${runDir}/infer-broker";
    };
    peers = {
      loopd.user = "boxmaker-loopd";
      infer.user = "boxmaker-inferproxy"; # whom brokerd admits on witness.sock
      admin.group = adminGroup;
      chat.group = chatGroup;
    };
    broker = {
      runner = "systemd";
      tool = "${package}/bin/boxmaker-tool";
      sandbox_root = "${runDir}/tool-root";
      # What every tool needs inside its empty root: on NixOS the store (the tool and its
      # libraries); elsewhere (the Debian container tests) /usr and the loader's paths.
      sandbox_binds = if onNix then [ "/nix/store" ] else [ "/usr" "-/lib" "-/lib64" package ];
      notes = "${home}/notes"; # brokerd's own StateDirectory, not loopd's memory/ (M5)
    } // hands;
    infer.upstream = "http://127.0.0.1:8080";
  };

  # gatewayd's part of config.toml, only when it is deployed: no [gateway] table otherwise.
  gatewayDefaults = {
    sockets.broker_gateway = "${runDir}/broker-gateway";
    # The DynamicUser names `role` gives below: loopd admits gatewayd on loop.sock, and
    # gatewayd admits only brokerd on gateway.sock.
    peers.gateway.user = "boxmaker-gatewayd";
    peers.broker.user = "boxmaker-brokerd";
    gateway = {
      inherit (gateway) server owners channel;
      token_credential = "mattermost-token";
      # Its StateDirectory below, by its real path (see `home`).
      state = "${home}/gateway";
    };
  };

  jobUnits = import ./jobs.nix { inherit jobs package configFile runDir hardening gateway; };
  indexer = import ./indexer.nix {
    inherit package configFile runDir hardening home stateDir;
    inherit (config.broker) notes;
    sandboxBinds = config.broker.sandbox_binds;
  };

  auditVerify = import ./audit-verify.nix {
    inherit package configFile hardening adminGroup;
    schedule = auditVerifySchedule;
  };

  verify = import ./verify.nix {
    inherit package configFile hardening adminGroup chatGroup;
    schedule = verifySchedule;
    gatewayOn = gateway != null;
  };

  config = merge (merge (if gateway == null then defaults else merge defaults gatewayDefaults) jobUnits.config) settings;
  s = config.sockets;

  # One group per pair directory that two boxmaker roles share; the owner's sides use the
  # owner's groups. Only the connecting role is a member: the listener gets its socket from
  # systemd and never needs to enter the directory.
  loopBrokerGroup = "boxmaker-loop-broker";
  loopInferGroup = "boxmaker-loop-infer";
  inferBrokerGroup = "boxmaker-infer-broker";
  brokerGatewayGroup = "boxmaker-broker-gateway";
  socketDirs = [
    { path = s.loop_broker; group = loopBrokerGroup; }
    { path = s.admin_broker; group = adminGroup; }
    { path = s.loop_infer; group = loopInferGroup; }
    { path = s.chat_loop; group = chatGroup; }
    { path = s.chat_broker; group = chatGroup; } # the owner's words, registered (X4)
    { path = s.infer_broker; group = inferBrokerGroup; }
  ] ++ (if gateway == null then [ ] else [ { path = s.broker_gateway; group = brokerGatewayGroup; } ]) ++ jobUnits.socketDirs;

  # Programs may run only from the package and the system's binaries: a role that is made
  # to write a file into its state directory cannot execute it.
  execPaths = if onNix then [ "/nix/store" ] else [ "/usr" "-/bin" "-/lib" "-/lib64" package ];

  # The one hardening block every role starts from (nix/hardening.nix).
  hardening = import ./hardening.nix { inherit execPaths; };

  # The IP loosening: the host's network namespace with IP sockets. Who takes it says why.
  ipNetwork = {
    PrivateNetwork = false;
    RestrictAddressFamilies = "AF_UNIX AF_INET AF_INET6";
  };

  # A test peer (fake llama-server, fake Mattermost): hardened like a role, but listening on
  # loopback TCP as the real server would (the loosening).
  testPeer =
    {
      description,
      user,
      exec,
      unit ? { },
    }:
    {
      unit = { Description = description; } // unit;
      service = hardening // ipNetwork // {
        Type = "simple";
        ExecStart = "${package}/bin/${exec}";
        User = user;
        Group = user;
        Restart = "on-failure";
        IPAddressAllow = "localhost";
        SocketBindDeny = "";
      };
      install.WantedBy = [ "multi-user.target" ];
    };

  # The common shape of a role's service: socket-activated, ready when it says so. `unit`
  # adds to the [Unit] section; its After= comes after the role's own sockets.
  role =
    {
      name,
      description,
      sockets,
      extra ? { },
      unit ? { },
    }:
    {
      unit = {
        Description = description;
        # Every socket the role takes by name must be there when it starts.
        Requires = map (n: "${n}.socket") sockets;
      } // unit // {
        After = map (n: "${n}.socket") sockets ++ (unit.After or [ ]);
      };
      service =
        hardening
        // {
          # READY=1 only once every listener serves (daemon::notify).
          Type = "notify";
          ExecStart = "${package}/bin/${name} --config ${configFile}";
          User = "boxmaker-${name}";
          Group = "boxmaker-${name}";
          Sockets = map (n: "${n}.socket") sockets;
          Restart = "on-failure";
          RestartSec = "1s";
          # Each role pings while its work can go on (docs/decisions.md F12).
          WatchdogSec = "30s";
        }
        // extra;
    };

  socket =
    {
      service,
      fdName,
      dir,
      file,
    }:
    {
      unit.Description = "boxmaker ${service} socket ${fdName} (${dir.path})";
      socket = {
        ListenStream = "${dir.path}/${file}";
        # The name the role asks daemon::listen for, so unit order never matters.
        FileDescriptorName = fdName;
        Service = "boxmaker-${service}.service";
        SocketUser = "root";
        SocketGroup = dir.group;
        SocketMode = "0660";
        # systemd creates a missing parent only as root 0755; tmpfiles makes it (sysinit,
        # before sockets.target) with the pair's group.
        DirectoryMode = "0750";
        RemoveOnStop = true;
      };
      install.WantedBy = [ "sockets.target" ];
    };

  dirOf = path: builtins.head (filter (d: d.path == path) socketDirs);

  credentials = map (name: "${name}:${secrets.${name}}") (attrNames secrets);

  # brokerd's view of the granted paths (see `grantPaths`); under /home, /root or /run/user
  # (which ProtectHome=yes hides) an empty home holding only them.
  inHome = p: builtins.any (h: p == h || substring 0 (builtins.stringLength h + 1) p == "${h}/") [ "/home" "/root" "/run/user" ];
  onGrantPaths = if grantPaths == [ ] then { } else {
    # Loosening: the granted paths, read-only, to resolve a call's path (a missing one is absent).
    BindReadOnlyPaths = map (p: "-${p}") grantPaths;
  } // (if builtins.any inHome grantPaths then { ProtectHome = "tmpfs"; } else { });

  # What exists only when gatewayd is deployed.
  onGateway = attrs: if gateway == null then { } else attrs;
in
{
  inherit config hardening socketDirs;
  jobProblems = jobUnits.problems;
  timers = jobUnits.timers // {
    boxmaker-indexer = indexer.timer;
    boxmaker-audit-verify = auditVerify.timer;
    boxmaker-verify = verify.timer;
  };
  paths.boxmaker-indexer = indexer.path;

  # The static users the units run as (nix/verify.nix says why there is one); every role is
  # a DynamicUser.
  users = [ verify.user ];

  # What a change restarts or reloads, and what the configuration cannot do (nix/changes.nix).
  inherit (import ./changes.nix { inherit config grants gateway adminMembers adminGroup; }) triggers warnings;

  # Every static group the units name (DynamicUser makes the roles' own groups).
  groups = [ loopBrokerGroup loopInferGroup inferBrokerGroup adminGroup chatGroup ]
    ++ (if gateway == null then [ ] else [ brokerGatewayGroup ]) ++ jobUnits.groups;

  services = {
    boxmaker-brokerd = role {
      name = "brokerd";
      description = "boxmaker policy point (brokerd)";
      sockets = [ "boxmaker-brokerd-loop" "boxmaker-brokerd-admin" "boxmaker-brokerd-chat" "boxmaker-brokerd-witness" ] ++ jobUnits.roleSockets "brokerd";
      extra = {
        # Loosening: brokerd starts each tool run as a transient unit over the system bus
        # (BRIEF decision 1), so it alone sees /run/dbus. Host names resolve through
        # resolved's or nscd's AF_UNIX sockets, so PrivateNetwork stays on.
        InaccessiblePaths = [ "-/run/systemd/private" ];
        # Loosening: the audit chain, the sessions' taint (and labels), the notes and theirs, the witness store, the accounting, the owner's MCP pins.
        StateDirectory = [ "${stateDir}/audit" "${stateDir}/broker" "${stateDir}/session-labels" "${stateDir}/notes" "${stateDir}/note-state" "${stateDir}/witness" "${stateDir}/accounting" "${stateDir}/mcp" ];
        StateDirectoryMode = "0700";
        # The secrets the grants may hand to tool units (BRIEF decision 3); a tool unit's
        # LoadCredential= reads them from brokerd's credentials directory.
        LoadCredential = credentials;
        # SIGHUP loads the grants into a new snapshot; a bad one is refused, the old kept.
        ExecReload = "/bin/sh -c \"kill -HUP \${MAINPID}\"";
        # Requests in flight finish their audit writes (brokerd drains for 20 s).
        TimeoutStopSec = "30s";
      }
      // onGrantPaths
      # Loosening: the index, read-only, for the search units (nix/indexer.nix).
      // { BindReadOnlyPaths = (onGrantPaths.BindReadOnlyPaths or [ ]) ++ [ indexer.published ]; }
      // onGateway {
        # No loosening: gatewayd's pair directory, entered by group to ask the owner.
        SupplementaryGroups = [ brokerGatewayGroup ];
      };
      # The indexer runs first, so that index/ (its StateDirectory) is there to bind; it
      # asks gatewayd on first use, whose socket is there from boot.
      unit = rec {
        Wants = [ "boxmaker-indexer.service" ] ++ (if gateway == null then [ ] else [ "boxmaker-gatewayd.socket" ]);
        After = Wants;
      };
    };

    boxmaker-loopd = role {
      name = "loopd";
      description = "boxmaker agent loop (loopd)";
      sockets = [ "boxmaker-loopd" ] ++ jobUnits.roleSockets "loopd";
      unit = {
        # It talks to both on first use; both are socket-activated.
        Wants = [ "boxmaker-brokerd-loop.socket" "boxmaker-inferproxy.socket" ];
        After = [ "boxmaker-brokerd-loop.socket" "boxmaker-inferproxy.socket" ];
      };
      extra = {
        # No loosening: its two peers are in pair directories it enters by group.
        SupplementaryGroups = [ loopBrokerGroup loopInferGroup ];
        # Its sessions (the owner's core memory is /etc/boxmaker/core.md, read-only here).
        StateDirectory = [ "${stateDir}/sessions" ];
        StateDirectoryMode = "0700";
        TimeoutStopSec = "20s";
      };
    };

    boxmaker-inferproxy = role {
      name = "inferproxy";
      description = "boxmaker llama-server proxy (inferproxy)";
      sockets = [ "boxmaker-inferproxy" ];
      # It reports every completion to brokerd's socket-activated witness.sock.
      unit = let w = [ "boxmaker-brokerd-witness.socket" ]; in { Wants = w; After = w; };
      # Loosening: llama-server listens on host loopback TCP, so the host's network
      # namespace with IP sockets, and the kernel's filter admits loopback only.
      extra = ipNetwork // {
        # No loosening: brokerd's witness pair directory, entered by group.
        SupplementaryGroups = [ inferBrokerGroup ];
        IPAddressAllow = "localhost";
        # Its only writable place; it keeps nothing.
        RuntimeDirectory = "${runName}/inferproxy";
        RuntimeDirectoryMode = "0700";
      };
    };
  }
  // onGateway {
    boxmaker-gatewayd = role {
      name = "gatewayd";
      description = "boxmaker Mattermost gateway (gatewayd)";
      sockets = [ "boxmaker-gatewayd" ] ++ jobUnits.roleSockets "gatewayd";
      unit = {
        # It follows Mattermost from boot (no connection starts it) and chats through
        # loopd's socket-activated loop.sock (each message registered on brokerd's first).
        Wants = [ "network-online.target" "boxmaker-loopd.socket" "boxmaker-brokerd-chat.socket" ];
        After = [ "network-online.target" "boxmaker-loopd.socket" "boxmaker-brokerd-chat.socket" ];
      };
      # Loosening: Mattermost over HTTPS and WebSocket, so the host's network namespace with
      # IP sockets; names resolve through the host's resolver. With allowedAddresses the
      # kernel's filter admits the Mattermost host alone.
      extra =
        ipNetwork
        // {
          # No loosening: the chat pair directories, entered by the owner's chat group.
          SupplementaryGroups = [ chatGroup ];
          # Its threads, the posts it handled and its approval posts.
          StateDirectory = "${stateDir}/gateway";
          StateDirectoryMode = "0700";
          # The bot's token, from a file outside the store (BRIEF decision 3).
          LoadCredential = [ "mattermost-token:${gateway.tokenFile}" ];
          TimeoutStopSec = "20s";
        }
      // (
        if (gateway.allowedAddresses or [ ]) == [ ] then
          { IPAddressDeny = ""; }
        else
          { IPAddressAllow = gateway.allowedAddresses; }
      );
    }
    // {
      install.WantedBy = [ "multi-user.target" ];
    };
  }
  // (
    if fakeMattermost == null then
      { }
    else
      {
        # Test peer only: a stand-in Mattermost (REST v4 subset and WebSocket) on loopback.
        boxmaker-fake-mattermost = testPeer {
          description = "fake Mattermost for boxmaker's tests";
          user = "boxmaker-fake-mattermost";
          exec = "fake-mattermost --listen ${fakeMattermost.listen or "127.0.0.1:8065"}";
          unit.Before = [ "boxmaker-gatewayd.service" ];
        };
      }
  )
  // (
    if fakeLlama == null then
      { }
    else
      {
        # Test peer only (fakeLlama.enable): a scripted llama-server on loopback.
        boxmaker-fake-llama-server = testPeer {
          description = "fake llama-server for boxmaker's tests";
          user = "boxmaker-fake-llama";
          exec = "fake-llama-server --listen ${fakeLlama.listen or "127.0.0.1:8080"} --script ${fakeLlama.script}";
        };
      }
  ) // jobUnits.services // {
    boxmaker-indexer = indexer.service;
    boxmaker-audit-verify = auditVerify.service;
    boxmaker-verify = verify.service;
  };

  sockets = {
    boxmaker-brokerd-loop = socket {
      service = "brokerd";
      fdName = "loop";
      dir = dirOf s.loop_broker;
      file = "broker.sock";
    };
    boxmaker-brokerd-admin = socket {
      service = "brokerd";
      fdName = "admin";
      dir = dirOf s.admin_broker;
      file = "broker.sock";
    };
    boxmaker-brokerd-chat = socket { service = "brokerd"; fdName = "chat"; dir = dirOf s.chat_broker; file = "broker.sock"; };
    boxmaker-brokerd-witness = socket { service = "brokerd"; fdName = "witness"; dir = dirOf s.infer_broker; file = "witness.sock"; };
    boxmaker-inferproxy = socket {
      service = "inferproxy";
      fdName = "infer";
      dir = dirOf s.loop_infer;
      file = "infer.sock";
    };
    boxmaker-loopd = socket {
      service = "loopd";
      fdName = "chat";
      dir = dirOf s.chat_loop;
      file = "loop.sock";
    };
  }
  // onGateway {
    boxmaker-gatewayd = socket {
      service = "gatewayd";
      fdName = "gateway";
      dir = dirOf s.broker_gateway;
      file = "gateway.sock";
    };
  } // jobUnits.sockets socket;

  # tmpfiles.d lines: the socket directories (root-owned, entered by the pair's group only)
  # and the tool units' empty root, which PID 1 fills with mount points (so not /var/empty).
  tmpfiles = [
    "d ${runDir} 0755 root root -"
    "d ${config.broker.sandbox_root} 0755 root root -"
  ] ++ indexer.tmpfiles ++ map (d: "d ${d.path} 0750 root ${d.group} -") socketDirs;

  # polkit (BRIEF decision 1): only brokerd's user may start, stop or kill units, and only
  # boxmaker-tool-* ones where the target's systemd says which (nix/polkit.nix).
  polkitRules = import ./polkit.nix { inherit systemdVersion; };
}
