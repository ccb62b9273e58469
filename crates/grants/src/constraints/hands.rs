//! The hands' grant keys (docs/decisions.md H9, H11; the owner's reference is
//! docs/tools.md): `modes` for `write_file`; `programs`, `workdir`, `stdin`, `shell` and the
//! limits for `run`. Each key is refused where it means nothing, so a grant never silently
//! means less than it says.

use proto::tools::hands::{HandsArgsError, check_program_name};
use proto::tools::{RunArgs, WriteFileArgs};
use proto::{Constraints, Grant, Mode};

use super::host::Entry;
use super::path::validate_entry;
use super::program::is_launcher;
use super::{Mismatch, PathError, Pattern};

/// The ceilings of `run`'s limits: (key, most).
pub const LIMITS: [(&str, u32); 4] = [
    ("timeout_secs", 3600),
    ("memory_mib", 65536),
    ("tasks", 4096),
    // Both streams must fit in a frame with room to spare.
    ("output_kib", 256),
];

/// Why a hands key is refused at load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandsError {
    /// The key is for another tool.
    #[error(
        "constraints.{key} does not apply to {tool} (it is {}): remove it",
        if *key == "modes" { "write_file's" } else { "run's" }
    )]
    NotForTool { key: &'static str, tool: String },
    /// The key only narrows or widens what an allowing grant lets run.
    #[error(
        "constraints.{key} means nothing on a deny grant (it only shapes what an allowed run \
         gets): remove it"
    )]
    OnDeny { key: &'static str },
    #[error("constraints.programs[{index}]: {error}")]
    Program { index: usize, error: HandsArgsError },
    /// A shell or launcher without `shell = true`.
    #[error(
        "constraints.programs names {program:?}, a shell or a program that runs the programs \
         named in its arguments: any command line would run through it. Grant the programs \
         themselves, or say constraints.shell = true if that is what you mean"
    )]
    Shell { program: String },
    /// `shell = true` on a grant that names no shell or launcher.
    #[error(
        "constraints.shell = true, but none of constraints.programs is a shell or a launcher: \
         remove it"
    )]
    NoShell,
    #[error("constraints.workdir: {0}")]
    Workdir(PathError),
    /// A wildcard host on `run`: brokerd resolves each host at the call, and `*.` names no
    /// one host.
    #[error(
        "constraints.hosts[{index}]: {entry:?} is a wildcard; a run reaches exactly the \
         addresses its hosts resolve to when it starts, so list each host"
    )]
    Wildcard { index: usize, entry: String },
    /// A limit of 0 or above its ceiling.
    #[error("constraints.{key} = {value}: it must be between 1 and {max}")]
    Limit {
        key: &'static str,
        value: u32,
        max: u32,
    },
}

/// The hands keys a grant sets, by name.
fn keys_set(c: &Constraints) -> Vec<&'static str> {
    let mut set = Vec::new();
    for (key, on) in [
        ("modes", !c.modes.is_empty()),
        ("programs", !c.programs.is_empty()),
        ("workdir", c.workdir.is_some()),
        ("stdin", c.stdin),
        ("shell", c.shell),
        ("timeout_secs", c.timeout_secs.is_some()),
        ("memory_mib", c.memory_mib.is_some()),
        ("tasks", c.tasks.is_some()),
        ("output_kib", c.output_kib.is_some()),
    ] {
        if on {
            set.push(key);
        }
    }
    set
}

/// Load-time check of the hands keys, for every tool (a key set on the wrong tool is
/// refused here).
pub(super) fn validate(grant: &Grant) -> Result<(), HandsError> {
    let c = &grant.constraints;
    for key in keys_set(c) {
        let fits = match key {
            "modes" => grant.tool == "write_file",
            _ => grant.tool == "run",
        };
        if !fits {
            return Err(HandsError::NotForTool {
                key,
                tool: grant.tool.clone(),
            });
        }
    }
    if grant.tool != "run" {
        return Ok(());
    }
    for (index, p) in c.programs.iter().enumerate() {
        check_program_name(p).map_err(|error| HandsError::Program { index, error })?;
    }
    if grant.mode == Mode::Deny {
        // A deny grant matches programs and patterns; everything else shapes a run.
        for key in keys_set(c) {
            if key != "programs" {
                return Err(HandsError::OnDeny { key });
            }
        }
        for key in ["paths", "hosts"] {
            let set = if key == "paths" {
                !c.paths.is_empty()
            } else {
                !c.hosts.is_empty()
            };
            if set {
                return Err(HandsError::OnDeny { key });
            }
        }
        return Ok(());
    }
    match (c.programs.iter().find(|p| is_launcher(p)), c.shell) {
        (Some(p), false) => return Err(HandsError::Shell { program: p.clone() }),
        (None, true) => return Err(HandsError::NoShell),
        _ => {}
    }
    if let Some(w) = &c.workdir {
        validate_entry(w).map_err(HandsError::Workdir)?;
    }
    for (index, h) in c.hosts.iter().enumerate() {
        if matches!(Entry::parse(h), Ok(Entry::Below(_))) {
            return Err(HandsError::Wildcard {
                index,
                entry: h.clone(),
            });
        }
    }
    let limits = [c.timeout_secs, c.memory_mib, c.tasks, c.output_kib];
    for ((key, max), value) in LIMITS.into_iter().zip(limits) {
        if let Some(value) = value
            && !(1..=max).contains(&value)
        {
            return Err(HandsError::Limit { key, value, max });
        }
    }
    Ok(())
}

/// `write_file`'s mode against the grant's `modes` (empty: every mode).
pub(super) fn check_mode(c: &Constraints, args: &WriteFileArgs) -> Result<(), Mismatch> {
    if c.modes.is_empty() || c.modes.contains(&args.mode) {
        return Ok(());
    }
    Err(Mismatch::Mode {
        mode: args.mode,
        modes: c.modes.clone(),
    })
}

/// A `run` call against a grant: the program is one it names, and the arguments match its
/// patterns (an allowing grant: every argument matches one; a deny grant's patterns are a
/// blocklist: some argument matches one), and standard input only where the grant gives it.
pub(super) fn check_run(grant: &Grant, args: &RunArgs) -> Result<(), Mismatch> {
    let c = &grant.constraints;
    if !c.programs.is_empty() && !c.programs.contains(&args.program) {
        return Err(Mismatch::Program {
            program: args.program.clone(),
            programs: c.programs.clone(),
        });
    }
    // Patterns were validated with the grant; one that does not parse matches nothing.
    let patterns: Vec<Pattern> = c
        .patterns
        .iter()
        .filter_map(|p| Pattern::parse(p).ok())
        .collect();
    let matches = |arg: &str| patterns.iter().any(|p| p.matches(arg));
    if grant.mode == Mode::Deny {
        if !c.patterns.is_empty() && !args.args.iter().any(|a| matches(a)) {
            return Err(Mismatch::NoArgument {
                patterns: c.patterns.clone(),
            });
        }
        return Ok(());
    }
    if let Some((index, arg)) = args.args.iter().enumerate().find(|(_, a)| !matches(a)) {
        return Err(Mismatch::Argument {
            index,
            arg: arg.clone(),
            patterns: c.patterns.clone(),
        });
    }
    if args.stdin.is_some() && !c.stdin {
        return Err(Mismatch::Stdin);
    }
    Ok(())
}

/// The directories a `run` grant binds into its unit, each with all that is below it: its
/// `paths` (read-only) and its `workdir` (read-write).
pub(super) fn run_binds(c: &Constraints) -> impl Iterator<Item = &str> {
    c.paths
        .iter()
        .map(String::as_str)
        .chain(c.workdir.as_deref())
}
