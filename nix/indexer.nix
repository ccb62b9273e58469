# The indexer in the unit core (nix/units.nix imports this; builtins only, BRIEF decision 2):
# `boxmaker-indexer.service`, a oneshot with its own DynamicUser that indexes the notes and
# the session logs into `index/` (its StateDirectory, published one SQLite file per
# partition), and `boxmaker-indexer.path`, which starts it when a source changes. What it
# may read and why is docs/decisions.md M13; the threat model says what it is trusted for.
{
  package,
  configFile,
  runDir,
  hardening,
  # The roles' state, by its real path (`home` in nix/units.nix), and the StateDirectory= prefix.
  home,
  stateDir,
  # The notes directory (`broker.notes`), brokerd's StateDirectory.
  notes,
  # What every program needs inside an empty root (the tools' `sandbox_binds`): on NixOS
  # the store, elsewhere /usr, the loader's paths and the package.
  sandboxBinds,
}:
let
  # The sources, read-only: brokerd's notes, their labels (never note-state/incoming, the
  # note tools' per-call directories) and the sessions' labels; loopd's session logs.
  sources = [
    notes
    "${home}/note-state/labels"
    "${home}/session-labels"
    "${home}/sessions"
  ];
  # What starts a run: a note's record renamed into labels/ (written before the note, M2,
  # and a relabel writes it too), a session's label exported by brokerd, and the file loopd
  # rewrites after each turn (a path unit does not recurse into sessions/<id>/).
  triggers = [
    "${home}/note-state/labels"
    "${home}/session-labels"
    "${home}/sessions/.changed"
  ];
in
{
  # An empty root-owned directory for RootDirectory=; PID 1 makes the binds' mount points in
  # it. The indexer's own, so no other unit lists them. And in it one link: inside
  # RootDirectory= systemd mounts the StateDirectory at /var/lib/${stateDir}/index only (252
  # and 257, measured), idmapped on 257 (on the host it is nobody's there), while the
  # indexer writes at `home`'s real path; a plain bind of the host's directory there would
  # not be idmapped, hence not writable on 257.
  tmpfiles = [
    "d ${runDir}/indexer-root 0755 root root -"
    "d ${runDir}/indexer-root${home} 0755 root root -"
    "L+ ${runDir}/indexer-root${home}/index - - - - /var/lib/${stateDir}/index"
  ];

  # brokerd's read-only view of what the indexer publishes (brokerd binds the partitions a
  # search may read into its unit). `-`: absent rather than a failed start, should the
  # indexer never have started; brokerd waits for a run at its start, which makes it.
  published = "-${home}/index";

  service = {
    unit = {
      Description = "boxmaker indexer: notes and session logs into index/ (one run)";
      # Its sources' StateDirectories are made and handed to their owner when loopd and
      # brokerd start; a run waits for a start in progress (brokerd waits for the indexer,
      # below, so it cannot wait for brokerd in turn: while a run lasts, brokerd's start
      # has not begun making them).
      After = [ "boxmaker-loopd.service" ];
      # No start limit: loopd rewrites sessions/.changed after each record, so a turn starts
      # several runs within seconds, and past systemd's default (5 in 10 s) the unit would
      # refuse to start and its path unit would stop watching (measured in the container
      # tier). Each run is cheap when little changed; the path unit's own trigger limit stays.
      StartLimitIntervalSec = 0;
    };
    service = hardening // {
      Type = "oneshot";
      ExecStart = "${package}/bin/boxmaker-indexer --config ${configFile}";
      User = "boxmaker-indexer";
      Group = "boxmaker-indexer";
      # A rebuild of the measured corpus takes seconds (docs/performance.md); a run that
      # hangs ends here, and brokerd, which waits for a run at its start, starts anyway.
      TimeoutStartSec = "5min";
      # Loosening: loopd's session logs are 0600 files in 0700 directories of loopd's
      # DynamicUser (loopd refuses a log open to others), so reading them as another user
      # takes CAP_DAC_READ_SEARCH, the one capability, and no other (M13). What it could
      # read with it is only what the empty root below holds; open_by_handle_at, the way
      # around a mount namespace, stays refused by the system call filter (@privileged).
      CapabilityBoundingSet = "CAP_DAC_READ_SEARCH";
      AmbientCapabilities = "CAP_DAC_READ_SEARCH";
      # An empty root holding only the program, its configuration, the sources read-only and
      # its own index/: nothing else of the host (no /etc, /run, /srv, /home, no other
      # role's state, no credentials) is there for the capability to read.
      RootDirectory = "${runDir}/indexer-root";
      BindReadOnlyPaths = sandboxBinds ++ [ configFile ] ++ map (p: "-${p}") sources;
      # Its partitions, published by rename: 0644 (the indexer sets it; UMask= stays 0077 for
      # the rest) in a 0755 directory, since brokerd and the search units (other users,
      # without the capability) read them.
      StateDirectory = "${stateDir}/index";
      StateDirectoryMode = "0755";
      # No socket of any family: it speaks to nobody (an allow list emptied by a deny
      # list, as brokerd's tool units have it; sd_notify is not used by a oneshot).
      RestrictAddressFamilies = [ "AF_UNIX" "~AF_UNIX" ];
      # NoExecPaths= names host paths and does nothing inside RootDirectory= (measured on
      # 252 for the tool units); the binds are read-only and index/ is its only writable place.
    };
  };

  # A start request that comes while a run is still going (after its last pass looked) is
  # merged into that run's start job by systemd and starts nothing: that change waits for
  # the next trigger. So a run also follows five minutes after the last one ended.
  timer = {
    unit.Description = "boxmaker indexer: a run five minutes after the last, for a change no trigger started";
    timer = {
      OnBootSec = "5min";
      OnUnitInactiveSec = "5min";
      Unit = "boxmaker-indexer.service";
    };
    install.WantedBy = [ "timers.target" ];
  };

  path = {
    unit.Description = "boxmaker indexer: a run when a note, a label or a session log changes";
    path = {
      PathChanged = triggers;
      Unit = "boxmaker-indexer.service";
    };
    install.WantedBy = [ "paths.target" ];
  };
}
