# services.boxmaker.jobs: scheduled jobs (docs/jobs.md). The units come from the core
# (nix/jobs.nix through nix/units.nix, which nix/module.nix maps); this module declares the
# option and writes each job's grants as grant files scoped to the job (`job = "<name>"`),
# so that they apply to that job's runs only. `bxctl grants check` and brokerd's
# `--check-config` check them at build time with the other grants.
{ config, lib, ... }:
let
  inherit (lib) mkOption types;
  cfg = config.services.boxmaker;

  job = types.submodule {
    options = {
      schedule = mkOption {
        type = types.str;
        example = "Mon..Fri *-*-* 07:00:00";
        description = "When the job runs: a systemd calendar expression (`OnCalendar=`; try it with `systemd-analyze calendar`).";
      };
      prompt = mkOption {
        type = types.str;
        example = "Summarise my notes for today and list what is due.";
        description = "What the agent is asked in each run, as the owner's message of the run's session.";
      };
      deliver = mkOption {
        type = types.str;
        default = "mattermost";
        example = "note:morning-brief";
        description = "Where each run's result (or failure) goes: `\"mattermost\"`, a post in the job's own thread in the gateway's channel (needs `services.boxmaker.gateway.enable`); or `\"note:NAME\"`, the note NAME, replaced at each run by brokerd with the run's label (docs/jobs.md). The unit core checks the form and the note name.";
      };
      randomizedDelaySec = mkOption {
        type = types.ints.unsigned;
        default = 0;
        example = 600;
        description = "A random delay of up to this many seconds before each run (`RandomizedDelaySec=`).";
      };
      timeLimitSec = mkOption {
        type = types.ints.positive;
        default = 1800;
        description = "How long one run may take; it must be longer than `broker.approval_ttl`, so that an approval can expire inside the run. The unit stops a run a minute after it.";
      };
      grants = mkOption {
        type = types.attrsOf (types.attrsOf types.anything);
        default = { };
        example = lib.literalExpression ''
          {
            brief-notes = {
              tool = "read_file";
              mode = "auto";
              max_taint = "private";
              constraints.paths = [ "/srv/notes" ];
            };
          }
        '';
        description = ''
          The job's grants, in the format of docs/grants.md: each becomes
          /etc/boxmaker/grants/<id>.toml with `job = "<name>"`, and applies to this job's
          runs only (grant ids are shared with services.boxmaker.grants and must differ).
          A job run gets no ordinary grant except a deny.
        '';
      };
    };
  };
in
{
  options.services.boxmaker.jobs = mkOption {
    type = types.attrsOf job;
    default = { };
    example = lib.literalExpression ''
      {
        morning-brief = {
          schedule = "Mon..Fri *-*-* 07:00:00";
          prompt = "Summarise my notes for today.";
          grants.brief-notes = {
            tool = "read_file";
            mode = "auto";
            max_taint = "private";
            constraints.paths = [ "/srv/notes" ];
          };
        };
      }
    '';
    description = ''
      Scheduled jobs: each a timer and a oneshot service `boxmaker-job-<name>` with its own
      DynamicUser, run with its own grants only, its result posted in its own Mattermost
      thread. The name forms the unit and user name (at most 18 characters of [a-z0-9-]).
    '';
  };

  config = lib.mkIf cfg.enable {
    services.boxmaker.grants = lib.mkMerge (
      lib.mapAttrsToList (name: j: lib.mapAttrs (_: g: g // { job = name; }) j.grants) cfg.jobs
    );
  };
}
