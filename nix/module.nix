# services.boxmaker: the NixOS module. The units themselves come from the builtins-only
# core in nix/units.nix (BRIEF decision 2); this file adds what needs nixpkgs: options,
# the config and grant files checked at build time by the binaries themselves, assertions,
# and the system settings brokerd's transient units rely on (BRIEF decision 1).
{
  config,
  lib,
  pkgs,
  ...
}:
let
  inherit (lib)
    any
    attrValues
    concatStrings
    filterAttrs
    hasPrefix
    literalExpression
    mapAttrs
    mapAttrsToList
    mkDefault
    mkEnableOption
    mkIf
    mkOption
    types
    ;

  cfg = config.services.boxmaker;
  toml = pkgs.formats.toml { };
  bin = "${cfg.package}/bin";

  core = import ./units.nix {
    package = "${cfg.package}";
    inherit (cfg) adminGroup chatGroup settings;
    # The polkit rule depends on whether this systemd passes unit names (257 and later).
    systemdVersion = config.systemd.package.version;
    secrets = mapAttrs (_: s: s.file) cfg.secrets;
    fakeLlama =
      if cfg.fakeLlama.enable then
        {
          script = "${cfg.fakeLlama.script}";
          inherit (cfg.fakeLlama) listen;
        }
      else
        null;
    gateway =
      if cfg.gateway.enable then
        { inherit (cfg.gateway) server owners channel tokenFile allowedAddresses; }
      else
        null;
    fakeMattermost = if cfg.fakeMattermost.enable then { inherit (cfg.fakeMattermost) listen; } else null;
    jobs = mapAttrs (_: j: removeAttrs j [ "grants" ]) cfg.jobs;
    auditVerifySchedule = cfg.auditVerify.schedule;
    verifySchedule = cfg.verify.schedule;
    # The hands (nix/module-hands.nix).
    handsUser = cfg.hands.user;
    handsSharedPids = cfg.hands.sharedPids;
    programs = mapAttrs (_: p: lib.getExe p) cfg.programs;
    programClosures = mapAttrs (
      _: p: "${pkgs.closureInfo { rootPaths = [ p cfg.package ]; }}/store-paths"
    ) cfg.programs;
    grantPaths = lib.unique (
      lib.concatLists (
        mapAttrsToList (
          _: g: lib.optionals (lib.elem g.tool [ "read_file" "list_dir" ]) (g.constraints.paths or [ ])
        ) cfg.grants
      )
    );
    inherit (cfg) grants;
    # The users NixOS declares in the admin group (by primary or extra group, or as a
    # member of the group itself); an `ask` grant needs one of them or the gateway.
    adminMembers =
      # The core's own static users (the daily `bxctl verify`) answer no approval.
      lib.filter (name: !(lib.elem name (map (u: u.name) core.users))) (
        lib.attrNames (
          filterAttrs (
            _: u: u.group == cfg.adminGroup || lib.elem cfg.adminGroup u.extraGroups
          ) config.users.users
        )
        ++ (config.users.groups.${cfg.adminGroup}.members or [ ])
      );
  };

  # What `bxctl verify` compares the live units with (nix/expected.nix): each unit as NixOS
  # writes its file, which holds what NixOS adds to every service (Environment=).
  unitsJson = builtins.toJSON (
    import ./expected.nix {
      inherit core;
      texts = lib.genAttrs (
        lib.concatMap (kind: map (n: "${n}.${kind}") (lib.attrNames core."${kind}s")) [
          "service"
          "socket"
          "timer"
          "path"
        ]
      ) (unit: config.systemd.units.${unit}.text);
    }
  );

  # The grants as files, checked by brokerd's own loader (`bxctl grants check`): a grant
  # that brokerd would refuse fails `nixos-rebuild`, not the running system.
  grantsDir = pkgs.runCommand "boxmaker-grants" { } ''
    mkdir "$out"
    ${concatStrings (
      mapAttrsToList (id: grant: ''
        cp ${toml.generate "${id}.toml" grant} "$out"/${lib.escapeShellArg "${id}.toml"}
      '') cfg.grants
    )}
    ${bin}/bxctl grants check "$out"
  '';

  configFile = toml.generate "boxmaker-config.toml" core.config;

  # attic's checkedConfigFile pattern: every role parses the file it will read at build time.
  # brokerd also loads the grants the file names, so the check reads a copy that points at
  # the built grants directory (the deployed file names /etc/boxmaker/grants).
  checkCopy = toml.generate "boxmaker-config-check.toml" (core.config // { grants = "${grantsDir}"; });
  checkedConfig =
    pkgs.runCommand "boxmaker-config.toml"
      {
        inherit checkCopy;
      }
      ''
        ${bin}/brokerd --check-config --config "$checkCopy"
        ${bin}/loopd --check-config --config "$checkCopy"
        ${bin}/inferproxy --check-config --config "$checkCopy"
        ${bin}/boxmaker-indexer --check-config --config "$checkCopy"
        ${lib.optionalString cfg.gateway.enable ''${bin}/gatewayd --check-config --config "$checkCopy"''}
        cp ${configFile} "$out"
      '';

  # What the grants let a hostile model do without asking, by brokerd's own policy
  # (`brokerd --flows --json` over the checked config and grants; docs/verify.md): read back
  # at evaluation (import from derivation) into warnings, and assertions for the flows
  # `verify.denyFlows` names (nix/flows.nix).
  flowsReport = pkgs.runCommand "boxmaker-flows.json" { } ''
    ${bin}/brokerd --flows --json --config ${checkCopy} > "$out"
  '';
  flows = import ./flows.nix {
    report = builtins.fromJSON (builtins.readFile flowsReport);
    inherit (cfg.verify) denyFlows;
  };

  inStore = file: hasPrefix "${builtins.storeDir}/" (toString file);
  grantsWithHosts = filterAttrs (_: g: (g.constraints.hosts or [ ]) != [ ]) cfg.grants;
  missingSecrets = lib.concatLists (
    mapAttrsToList (
      id: g: lib.optional (g ? secret && !(cfg.secrets ? ${g.secret})) "${id} (secret ${g.secret})"
    ) cfg.grants
  );

  # The core's sections onto NixOS's unit options; Description and WantedBy have their own.
  # What restarts or reloads a service is the core's word (core.triggers): a new config.toml
  # restarts the roles (their sockets stay, so no connection is refused), a grant change
  # reloads brokerd alone. Not the checked copy of the config: its derivation names the
  # grants directory, so every grant change would restart every role.
  service = name: u: {
    description = u.unit.Description;
    unitConfig = removeAttrs u.unit [ "Description" ];
    serviceConfig = u.service;
    wantedBy = u.install.WantedBy or [ ];
    restartTriggers = core.triggers.restart.${name} or [ ];
    reloadTriggers = core.triggers.reload.${name} or [ ];
  };
in
{
  imports = [
    ./module-hands.nix
    ./module-jobs.nix
    ./module-llama.nix
    ./module-mcp.nix
  ];

  options.services.boxmaker = {
    enable = mkEnableOption "boxmaker, the personal AI agent appliance (brokerd, loopd, inferproxy; gatewayd with gateway.enable)";

    package = mkOption {
      type = types.package;
      default = pkgs.callPackage ./package.nix { };
      defaultText = literalExpression "pkgs.callPackage ./nix/package.nix { }";
      example = literalExpression "inputs.boxmaker.packages.x86_64-linux.default";
      description = "The boxmaker workspace package; every role binary and bxctl come from its `bin/`.";
    };

    settings = mkOption {
      type = toml.type;
      default = { };
      example = literalExpression ''
        {
          broker.approval_ttl = "15m";
          broker.consult = { url = "https://api.example.com/v1"; model = "big-model"; };
          loop.max_tool_calls = 12;
        }
      '';
      description = ''
        Freeform content of /etc/boxmaker/config.toml, merged over what the module sets
        (home, sockets, peers, the systemd tool runner, `infer.upstream`). Unknown keys
        fail the build: brokerd, loopd and inferproxy run `--check-config` on the file.
      '';
    };

    grants = mkOption {
      type = types.attrsOf toml.type;
      default = { };
      example = literalExpression ''
        {
          notes-read = {
            tool = "read_file";
            mode = "auto";
            max_taint = "secret";
            result_class = "private";
            untrusted = false;
            constraints.paths = [ "/home/owner/notes" ];
          };
          web-ask = {
            tool = "http_fetch";
            mode = "ask";
            max_taint = "private";
            result_class = "public";
            constraints.hosts = [ "en.wikipedia.org" ];
          };
        }
      '';
      description = ''
        Grants, each written as /etc/boxmaker/grants/<id>.toml in the format of
        docs/grants.md and checked at build time with `bxctl grants check`. A change
        reloads brokerd (SIGHUP), which keeps its old grants if the new ones are refused.
      '';
    };

    secrets = mkOption {
      type = types.attrsOf (
        types.submodule {
          options.file = mkOption {
            type = types.str;
            example = "/run/agenix/consult-key";
            description = ''
              An absolute path outside the Nix store (the store is world-readable), for
              example one managed by agenix or sops-nix. systemd copies it into brokerd's
              credentials directory (LoadCredential=); brokerd hands it to a tool unit only
              when a grant names it.
            '';
          };
        }
      );
      default = { };
      example = literalExpression ''{ consult-key.file = "/run/agenix/consult-key"; }'';
      description = "Secrets a grant may name (`secret = \"<name>\"`), given to brokerd as credentials.";
    };

    llamaUrl = mkOption {
      type = types.str;
      default = if cfg.fakeLlama.enable then "http://${cfg.fakeLlama.listen}" else "http://127.0.0.1:8080";
      defaultText = literalExpression ''"http://127.0.0.1:8080" (the fake's address when fakeLlama.enable)'';
      example = "http://127.0.0.1:8081";
      description = "llama-server's URL, loopback only (`settings.infer.upstream`).";
    };

    fakeLlama = {
      enable = mkEnableOption "the scripted fake llama-server instead of a real one (for tests only)";
      script = mkOption {
        type = types.path;
        default = pkgs.writeText "fake-llama-script.toml" ''
          [default]
          text = "I am boxmaker's fake model."
        '';
        defaultText = literalExpression "a script whose every answer is a fixed text";
        example = literalExpression "./fake-script.toml";
        description = "The fake's script (TOML, `[[rule]]` entries; see crates/fake-llama-server/src/lib.rs).";
      };
      listen = mkOption {
        type = types.str;
        default = "127.0.0.1:8080";
        example = "127.0.0.1:18080";
        description = "Loopback address the fake listens on.";
      };
    };

    gateway = {
      enable = mkEnableOption "gatewayd: the owner chats with boxmaker, and answers its approvals, in Mattermost";
      server = mkOption {
        type = types.str;
        example = "https://chat.example.com";
        description = "The Mattermost server's base URL (`gateway.server`); the fake's address when fakeMattermost.enable.";
      };
      owners = mkOption {
        type = types.listOf types.str;
        example = [ "8xk3w1mzqbfq5ybz6tn7yjqgxe" ];
        description = ''
          The Mattermost user ids (not user names) heard as the owner: gatewayd answers only
          their posts, and brokerd counts only their reactions and replies to an approval.
        '';
      };
      channel = mkOption {
        type = types.str;
        example = "4yx1ub6ahjdcfnxcu6qsyyomqa";
        description = "The id of the channel the bot listens, answers and asks for approvals in.";
      };
      tokenFile = mkOption {
        type = types.str;
        example = "/run/agenix/mattermost-token";
        description = ''
          An absolute path outside the Nix store holding the bot's access token, for
          example one managed by agenix or sops-nix, or a root-only file. systemd copies it
          into gatewayd's credentials directory (LoadCredential=mattermost-token:...).
        '';
      };
      allowedAddresses = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "203.0.113.7" "2001:db8::7" ];
        description = ''
          When not empty, gatewayd's IPAddressAllow=: the kernel lets it reach these
          addresses (the Mattermost host, and the DNS server unless names resolve through
          systemd-resolved or nscd) and nothing else. Empty: any address.
        '';
      };
    };

    fakeMattermost = {
      enable = mkEnableOption "the fake Mattermost (fake-mattermost) for gatewayd to talk to (for tests only)";
      listen = mkOption {
        type = types.str;
        default = "127.0.0.1:8065";
        description = "Loopback address the fake listens on; its bot token is `bot-token`, and its people `owner` and `stranger` post with their own (docs/gateway.md).";
      };
    };

    auditVerify.schedule = mkOption {
      type = types.str;
      default = "daily";
      example = "*-*-* 04:30:00";
      description = ''
        When brokerd verifies its whole audit log (a systemd calendar expression, the
        `boxmaker-audit-verify.timer`'s OnCalendar=). Its start verifies only what follows
        its checkpoint; this run reads every line, checks the checkpoint and moves it. A
        failure is in brokerd's journal, fails the `boxmaker-audit-verify` unit, and is
        posted on Mattermost when the gateway is on (docs/broker.md).
      '';
    };

    verify.schedule = mkOption {
      type = types.str;
      default = "daily";
      example = "*-*-* 05:00:00";
      description = ''
        When `bxctl verify` checks the live deployment (a systemd calendar expression, the
        `boxmaker-verify.timer`'s OnCalendar=): the model server through the stack, every
        unit against what this module generated, the audit log, the grants and the
        approvals. Each check is a line in the journal (`journalctl -u boxmaker-verify`); a
        failed check fails the unit (docs/verify.md).
      '';
    };

    verify.denyFlows = mkOption {
      type = types.listOf types.str;
      default = [ ];
      example = [
        "secret_out"
        "consult-remote"
      ];
      description = ''
        Flows that fail the build. At build time `brokerd --flows` computes, with the policy
        brokerd decides by, every chain a hijacked model could complete without asking: a
        grant whose results are private or secret, then a grant or a job's delivery that
        carries data out; or untrusted content, then a write of yours (docs/verify.md). Each
        is a warning of `nixos-rebuild`; one whose kind (`secret_out`, `private_out`,
        `untrusted_write`) or source or sink grant id is listed here is an assertion
        instead. A name that is neither is an assertion too.
      '';
    };

    adminGroup = mkOption {
      type = types.str;
      default = "boxmaker-admin";
      example = "wheel";
      description = ''
        The owner's group for bxctl's admin side (approvals, audit queries, grants): it
        owns /run/boxmaker/admin-broker and is `peers.admin`. Add the owner's user to it.
      '';
    };

    chatGroup = mkOption {
      type = types.str;
      default = "boxmaker-chat";
      example = "users";
      description = "The owner's group for `bxctl chat` (/run/boxmaker/chat-loop, `peers.chat`).";
    };
  };

  config = mkIf cfg.enable {
    # An `ask` grant nobody can answer (nix/changes.nix says when), and each flow the
    # grants allow without asking (nix/flows.nix).
    warnings = core.warnings ++ flows.warnings;

    assertions = [
      {
        assertion = !(any (s: inStore s.file) (attrValues cfg.secrets));
        message =
          "services.boxmaker.secrets.{${
            lib.concatStringsSep "," (lib.attrNames (filterAttrs (_: s: inStore s.file) cfg.secrets))
          }}.file point into the Nix store, which every user can read. Keep each secret outside"
          + " the store and give its path as a string: file = \"/run/agenix/consult-key\""
          + " (agenix, sops-nix) or \"/var/lib/boxmaker-secrets/consult-key\", never ./consult-key.";
      }
      {
        assertion = lib.all (s: hasPrefix "/" s.file) (attrValues cfg.secrets);
        message = "services.boxmaker.secrets.<name>.file must be an absolute path.";
      }
      {
        assertion = missingSecrets == [ ];
        message =
          "services.boxmaker.grants name secrets that services.boxmaker.secrets does not define: "
          + "${lib.concatStringsSep ", " missingSecrets}. Add services.boxmaker.secrets.<name>.file.";
      }
      {
        assertion = !cfg.gateway.enable || (hasPrefix "/" cfg.gateway.tokenFile && !inStore cfg.gateway.tokenFile);
        message =
          "services.boxmaker.gateway.tokenFile must be an absolute path outside the Nix store, which"
          + " every user can read: tokenFile = \"/run/agenix/mattermost-token\", never ./token.";
      }
      {
        assertion = grantsWithHosts == { } || config.services.resolved.enable;
        message =
          "services.boxmaker.grants ${lib.concatStringsSep ", " (lib.attrNames grantsWithHosts)}"
          + " name hosts, which brokerd resolves without network access through"
          + " systemd-resolved's Unix socket. Set services.resolved.enable = true.";
      }
    ]
    # The jobs the core refuses (nix/jobs.nix), each message saying how to fix it.
    ++ map (message: { assertion = false; inherit message; }) core.jobProblems
    # The flows `verify.denyFlows` names (nix/flows.nix).
    ++ flows.assertions;

    # BRIEF decision 1: a DynamicUser service reaches systemd over the bus only through
    # dbus-broker (systemd#22737), and polkit (off by default) carries the rule below.
    services.dbus.implementation = "broker";
    security.polkit.enable = true;
    security.polkit.extraConfig = core.polkitRules;

    services.boxmaker.settings.infer.upstream = mkDefault cfg.llamaUrl;
    services.boxmaker.gateway = mkIf cfg.fakeMattermost.enable {
      server = mkDefault "http://${cfg.fakeMattermost.listen}";
      allowedAddresses = mkDefault [ "localhost" ];
    };

    environment.etc."boxmaker/config.toml".source = checkedConfig;
    environment.etc."boxmaker/grants".source = grantsDir;
    # Each unit as generated, for `bxctl verify` (its default is units.json beside config.toml).
    environment.etc."boxmaker/units.json".text = unitsJson;
    # bxctl for the owner; it reads /etc/boxmaker/config.toml by default.
    environment.systemPackages = [ cfg.package ];

    users.groups = lib.genAttrs core.groups (_: { });
    # The core's static users (nix/verify.nix says why there is one).
    users.users = lib.listToAttrs (
      map (u: {
        inherit (u) name;
        value = {
          isSystemUser = true;
          inherit (u) group extraGroups description;
        };
      }) core.users
    );

    systemd.tmpfiles.rules = core.tmpfiles;

    systemd.sockets = mapAttrs (_: u: {
      description = u.unit.Description;
      socketConfig = u.socket;
      wantedBy = u.install.WantedBy;
    }) core.sockets;

    systemd.timers = mapAttrs (_: u: {
      description = u.unit.Description;
      timerConfig = u.timer;
      wantedBy = u.install.WantedBy;
    }) core.timers;

    systemd.paths = mapAttrs (_: u: {
      description = u.unit.Description;
      pathConfig = u.path;
      wantedBy = u.install.WantedBy;
    }) core.paths;

    systemd.services = mapAttrs service core.services // {
      boxmaker-brokerd = service "boxmaker-brokerd" core.services.boxmaker-brokerd // {
        # systemd-run for the tool units.
        path = [ config.systemd.package ];
      };
    };
  };
}
