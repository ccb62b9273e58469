# services.boxmaker.hands and services.boxmaker.programs: who the agent's writes run as,
# and the programs its `run` grants may name (docs/tools.md, docs/decisions.md H1, H11).
# nix/module.nix passes them to the unit core (nix/units.nix), which writes them into
# brokerd's configuration: `broker.hands_user`, `broker.programs` (each program's file)
# and `broker.program_closures` (each program's closure with the tool's, all of the store
# its unit binds).
{ config, lib, ... }:
let
  inherit (lib) mkOption types literalExpression;
  cfg = config.services.boxmaker;
  user = cfg.hands.user;
in
{
  options.services.boxmaker = {
    hands.user = mkOption {
      type = types.nullOr types.str;
      default = null;
      example = "owner";
      description = ''
        The account whose files the agent may write: the units of `write_file`,
        `edit_file` (and a `run` with a `workdir`) run as this user, with nothing of its own
        but the one granted directory bound into an empty root, in their own PID namespace
        (systemd 257's PrivatePIDs=). A write never runs as anyone else: a directory of
        another owner is refused. Needed by any such grant; never root.
      '';
    };
    hands.sharedPids = mkOption {
      type = types.bool;
      default = false;
      description = ''
        On a systemd older than 257 (no PrivatePIDs=), let the write units run in the host's
        PID namespace, where a compromised one could signal or read the hands user's other
        processes. Without it brokerd refuses to start with a write grant there. A `run`
        with a `workdir` is refused there regardless.
      '';
    };
    programs = mkOption {
      type = types.attrsOf types.package;
      default = { };
      example = literalExpression "{ python3 = pkgs.python3; }";
      description = ''
        The programs `run` grants may name (`constraints.programs = [ "python3" ]`): each
        package's main program (lib.getExe), run in a unit that binds only its closure and
        the tool's, never the whole store. A package whose main program is a shell or a
        launcher (`bash`, `env`, `xargs`, ...) needs `constraints.shell = true` in each grant
        naming it.
      '';
    };
  };

  config = lib.mkIf cfg.enable {
    assertions = [
      {
        assertion = user != "root";
        message = "services.boxmaker.hands.user must not be root: a write unit would hold root's rights over the granted directory.";
      }
      {
        assertion = user == null || (config.users.users.${user}.isNormalUser or false);
        message = "services.boxmaker.hands.user = \"${toString user}\" must be a normal user declared in users.users (isNormalUser = true): a system account's files are not the agent's to write.";
      }
    ];
  };
}
