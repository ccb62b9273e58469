# Scheduled jobs in the unit core (nix/units.nix imports this; builtins only, BRIEF decision
# 2). Each job `jobs.<name> = { schedule; prompt; deliver ? "mattermost" (or "note:NAME");
# randomizedDelaySec ? 0; timeLimitSec ? 1800; }` becomes one timer and one oneshot
# service, `boxmaker-job-<name>`, with its own DynamicUser named after the job (brokerd,
# loopd and gatewayd take the job from that user, SO_PEERCRED), plus its `[[jobs]]` entry in
# config.toml. The job's grants are grant files with `job = "<name>"` (the NixOS module
# writes them from `services.boxmaker.jobs.<name>.grants`). `problems` lists what the core
# refuses, each message saying how to fix it; nix/render-units.nix throws on them and the
# NixOS module maps them to assertions. The rest (schedule syntax, time limit against
# approval_ttl) is checked by `systemd-analyze calendar` in the units step and by
# `--check-config`, which the NixOS build runs on the rendered file.
{
  jobs,
  package,
  configFile,
  runDir,
  hardening,
  gateway,
}:
let
  inherit (builtins)
    attrNames
    concatLists
    filter
    match
    stringLength
    ;

  names = attrNames jobs;
  any = names != [ ];

  # The pair directories the job units share with brokerd, loopd and gatewayd: each entered
  # by its own group, of which every job unit is a member (the listeners get their sockets
  # from systemd).
  dirs = {
    broker = { path = "${runDir}/jobs-broker"; group = "boxmaker-jobs-broker"; };
    loop = { path = "${runDir}/jobs-loop"; group = "boxmaker-jobs-loop"; };
    gateway = { path = "${runDir}/jobs-gateway"; group = "boxmaker-jobs-gateway"; };
  };
  # gatewayd's jobs socket exists only with the gateway; a job joins it only when it
  # delivers to Mattermost (a note goes through brokerd's jobs socket).
  withGateway = gateway != null;
  dirList = [ dirs.broker dirs.loop ] ++ (if withGateway then [ dirs.gateway ] else [ ]);
  toGateway = j: (j.deliver or "mattermost") == "mattermost";
  dirsOf = j: [ dirs.broker dirs.loop ] ++ (if toGateway j then [ dirs.gateway ] else [ ]);

  # What one frame carries of a prompt (config::MAX_PROMPT).
  maxPrompt = (1048576 - 4096) / 6;

  problemsOf =
    name: j:
    let
      at = "services.boxmaker.jobs.${name}";
      schedule = j.schedule or "";
      prompt = j.prompt or "";
      deliver = j.deliver or "mattermost";
      # NAME of "note:NAME", or null.
      noteOf = match "note:(.*)" deliver;
      note = if noteOf == null then null else builtins.head noteOf;
    in
    filter (p: p != null) [
      (
        if match "[a-z]([a-z0-9-]{0,16}[a-z0-9])?" name == null then
          "${at}: the name must be 1 to 18 characters of lowercase letters, digits and '-', starting"
          + " with a letter and not ending with '-': it forms the unit and user name boxmaker-job-<name>,"
          + " at most 31 characters"
        else
          null
      )
      (
        if match "[^\n\r]*[^\n\r ][^\n\r]*" schedule == null then
          "${at}.schedule must be one systemd calendar expression on one line, for example"
          + " \"*-*-* 07:00:00\" (try it with `systemd-analyze calendar`)"
        else
          null
      )
      (if prompt == "" then "${at}.prompt is empty: say what the agent should do" else null)
      (
        if stringLength prompt > maxPrompt then
          "${at}.prompt is ${toString (stringLength prompt)} bytes, more than the ${toString maxPrompt}"
          + " one frame carries: shorten it, or put the material in a file the job's grants let it read"
        else
          null
      )
      (
        if deliver == "mattermost" then
          (
            if gateway == null then
              "${at}.deliver = \"mattermost\" needs the gateway: set services.boxmaker.gateway.enable,"
              + " or deliver to a note (\"note:NAME\")"
            else
              null
          )
        else if note == null then
          "${at}.deliver must be \"mattermost\" (a post in the job's thread) or \"note:NAME\""
          + " (the note NAME, written with the run's label)"
        # A note name (proto::notes::check_name): [A-Za-z0-9._-]{1,100}, no leading '.', no "..".
        else if match "[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}" note == null || match ".*[.][.].*" note != null then
          "${at}.deliver = \"${deliver}\": name the note with 1 to 100 letters, digits, '.', '_'"
          + " and '-' (not starting with '.', no \"..\"), for example \"note:${name}\""
        else
          null
      )
    ];

  timeLimit = j: j.timeLimitSec or 1800;

  unitOf = name: "boxmaker-job-${name}";
  socketsOf =
    j:
    [ "boxmaker-brokerd-jobs.socket" "boxmaker-loopd-jobs.socket" ]
    ++ (if toGateway j then [ "boxmaker-gatewayd-jobs.socket" ] else [ ]);

  service = name: j: {
    unit = {
      Description = "boxmaker scheduled job ${name}";
      # Its peers are socket-activated; their jobs sockets are there from boot.
      Wants = socketsOf j;
      After = socketsOf j;
    };
    # The hardening block as it is: no network (the runner speaks only to the three pair
    # sockets), no state of its own, nothing written.
    service = hardening // {
      Type = "oneshot";
      ExecStart = "${package}/bin/boxmaker-job --config ${configFile} --job ${name}";
      # Its own DynamicUser, named after the job: what brokerd knows the job by.
      User = unitOf name;
      Group = unitOf name;
      # No loosening: the pair directories of the peers it needs, entered by group.
      SupplementaryGroups = map (d: d.group) (dirsOf j);
      # A oneshot's whole run is its start, which TimeoutStartSec= bounds (RuntimeMaxSec=
      # has no effect on Type=oneshot): the job's time limit, which --check-config keeps
      # above broker.approval_ttl, plus a minute to deliver what came of it.
      TimeoutStartSec = "${toString (timeLimit j + 60)}s";
    };
  };

  timer = name: j: {
    unit.Description = "boxmaker scheduled job ${name}: ${j.schedule}";
    timer = {
      OnCalendar = j.schedule;
      # A run missed while the machine was off happens after boot.
      Persistent = true;
      RandomizedDelaySec = "${toString (j.randomizedDelaySec or 0)}s";
      Unit = "${unitOf name}.service";
    };
    install.WantedBy = [ "timers.target" ];
  };

  each = f: builtins.listToAttrs (map (name: { name = unitOf name; value = f name jobs.${name}; }) names);
in
{
  problems = concatLists (map (name: problemsOf name jobs.${name}) names);

  # config.toml: the jobs sockets and each job's entry.
  config =
    if !any then
      { }
    else
      {
        sockets = {
          jobs_broker = dirs.broker.path;
          jobs_loop = dirs.loop.path;
        }
        // (if withGateway then { jobs_gateway = dirs.gateway.path; } else { });
        jobs = map (name: {
          inherit name;
          inherit (jobs.${name}) schedule prompt;
          deliver = jobs.${name}.deliver or "mattermost";
          randomized_delay = "${toString (jobs.${name}.randomizedDelaySec or 0)}s";
          time_limit = "${toString (timeLimit jobs.${name})}s";
        }) names;
      };

  socketDirs = if any then dirList else [ ];
  groups = if any then map (d: d.group) dirList else [ ];

  # Each role's jobs socket, for its Sockets= and Requires=.
  roleSockets = role: if any then [ "boxmaker-${role}-jobs" ] else [ ];

  # The jobs sockets (`socket` is the core's helper, `dirOf` finds a directory).
  sockets =
    socket:
    if !any then
      { }
    else
      {
        boxmaker-brokerd-jobs = socket { service = "brokerd"; fdName = "jobs"; dir = dirs.broker; file = "jobs.sock"; };
        boxmaker-loopd-jobs = socket { service = "loopd"; fdName = "jobs"; dir = dirs.loop; file = "loop.sock"; };
      }
      // (
        if withGateway then
          { boxmaker-gatewayd-jobs = socket { service = "gatewayd"; fdName = "jobs"; dir = dirs.gateway; file = "gateway.sock"; }; }
        else
          { }
      );

  services = each service;
  timers = each timer;
}
