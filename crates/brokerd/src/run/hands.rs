//! The hands' units (docs/decisions.md H2, H3, H11): a write's look (the granted root
//! read-only) and commit (read-write), both as the hands user, and a `run`'s program (its
//! closure, its read-only paths, its working directory). What each sends is a
//! [`StageInvocation`]; the runner puts the root and the working directory where its unit
//! has them ([`TARGET`] and [`WORK`] under systemd, their own paths for the direct runner).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use config::Config;
use grants::constraints::{Host, is_under};
use proto::toolrun::ToolInvocation;
use proto::tools::hands::MAX_FILE;
use proto::tools::stage::{Commit, Found, Look, RunStage, StageInvocation, Target, WriteCall};
use proto::tools::{EditFileArgs, RunArgs, ToolArgs, WriteFileArgs};
use proto::{Grant, Hash32, ToolRequest};

use crate::policy::Decision;
use crate::run::programs::Programs;
use crate::run::runner::{Limits, RunSpec, unit_name};

/// Where a write unit finds the granted root (H3), and a run unit its working directory.
pub const TARGET: &str = "/target";
pub const WORK: &str = "/work";

/// How much longer a run's unit may live than its program (H11): the executor's deadline
/// fires first and reports what the program printed.
const RUN_GRACE: Duration = Duration::from_secs(5);

/// A hands unit: what it is sent and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageSpec {
    /// Sent instead of the spec's `invocation`, whose `call` is what the decision allowed.
    pub invocation: StageInvocation,
    pub unit: StageUnit,
}

/// What a hands unit sees and who it runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageUnit {
    /// A look (`writable = false`) or a commit: the granted root that covers the target,
    /// as the hands user.
    Write { root: String, writable: bool },
    /// A run: the program (with the store paths its unit binds, when configured), the
    /// grant's `paths` read-only at their own places, and its `workdir` read-write as the
    /// working directory (then as the hands user; else an empty one, as a dynamic user).
    Run {
        program: PathBuf,
        closure: Option<Vec<String>>,
        paths: Vec<String>,
        workdir: Option<String>,
    },
}

impl StageUnit {
    /// Whether the unit runs as the hands user (it writes the owner's files).
    pub fn as_hands_user(&self) -> bool {
        match self {
            Self::Write { .. } => true,
            Self::Run { workdir, .. } => workdir.is_some(),
        }
    }
}

/// Why a hands call has no unit; the text is the model's and the audit's.
#[derive(Debug, thiserror::Error)]
pub enum HandsSpecError {
    /// The decision carries no grant or arguments (a bug: only an allow or ask is built).
    #[error("internal: no grant")]
    NoGrant,
    /// No granted root holds the path (the grant covered it, so a bug).
    #[error("{path} is under none of the grant's paths")]
    NoRoot { path: String },
    /// The program has no file in the configuration (refused at start, so a reload race).
    #[error("broker.programs has no {0:?}")]
    NoProgram(String),
    /// A host of the grant gives nothing to connect to.
    #[error("{0}")]
    Resolve(crate::run::resolve::Error),
}

/// The granted root that covers `path` (the longest of `roots`) and the path below it.
pub fn split(path: &str, roots: &[String]) -> Option<(String, String)> {
    let root = roots
        .iter()
        .filter(|r| is_under(path, r))
        .max_by_key(|r| r.len())?;
    let rest = path.strip_prefix(root.as_str())?.trim_start_matches('/');
    (!rest.is_empty()).then(|| (root.clone(), rest.to_owned()))
}

/// The call a write's arguments make, and the path it writes.
pub fn write_call(args: &ToolArgs) -> Option<(WriteCall, &str)> {
    match args {
        ToolArgs::WriteFile(a @ WriteFileArgs { path, .. }) => {
            Some((WriteCall::WriteFile(a.clone()), path))
        }
        ToolArgs::EditFile(a @ EditFileArgs { path, .. }) => {
            Some((WriteCall::EditFile(a.clone()), path))
        }
        _ => None,
    }
}

fn target_of(
    args: &ToolArgs,
    grant: &Grant,
) -> Result<(WriteCall, String, Target), HandsSpecError> {
    let (call, path) = write_call(args).ok_or(HandsSpecError::NoGrant)?;
    let (root, rel) =
        split(path, &grant.constraints.paths).ok_or_else(|| HandsSpecError::NoRoot {
            path: path.to_owned(),
        })?;
    // The runner puts the root where its unit has it.
    let target = Target {
        root: root.clone(),
        path: rel,
    };
    Ok((call, root, target))
}

/// The write units' limits: brokerd's tool limits, with room for a whole file's JSON.
fn write_limits(config: &Config) -> Limits {
    let b = &config.broker;
    Limits {
        max_result_bytes: MAX_FILE + 64 * 1024,
        time_limit: b.tool_time_limit,
        memory_max_bytes: b.tool_memory_mib.saturating_mul(1024 * 1024),
        tasks_max: b.tool_tasks_max,
    }
}

/// The spec around a stage: `call` is what the decision must allow.
fn spec(
    req: &ToolRequest,
    suffix: &str,
    call: ToolArgs,
    stage: StageSpec,
    addresses: Vec<IpAddr>,
    limits: Limits,
) -> RunSpec {
    RunSpec {
        unit: format!("{}{suffix}", unit_name(&req.session, req.call)),
        invocation: ToolInvocation {
            call,
            max_bytes: limits.max_result_bytes,
            roots: Vec::new(),
            addresses: Vec::new(),
            consult: None,
            timeout_ms: u64::try_from(limits.time_limit.as_millis()).unwrap_or(u64::MAX),
            notes: None,
            index: Vec::new(),
        },
        bind: None,
        write_bind: None,
        index_binds: Vec::new(),
        addresses,
        secret: None,
        limits,
        stage: Some(stage),
        mcp: None,
    }
}

/// A write's look: the target's bytes, through its granted root bound read-only.
pub fn look(
    config: &Config,
    req: &ToolRequest,
    decision: &Decision,
) -> Result<RunSpec, HandsSpecError> {
    let (grant, _) = decision.grant().ok_or(HandsSpecError::NoGrant)?;
    let args = decision.args().ok_or(HandsSpecError::NoGrant)?;
    let (_, root, target) = target_of(args, grant)?;
    let stage = StageSpec {
        invocation: StageInvocation::Look(Look { target }),
        unit: StageUnit::Write {
            root,
            writable: false,
        },
    };
    Ok(spec(
        req,
        "-look",
        args.clone(),
        stage,
        Vec::new(),
        write_limits(config),
    ))
}

/// A write's commit: the new content over exactly `old`, only if it hashes to `new`.
pub fn commit(
    config: &Config,
    req: &ToolRequest,
    decision: &Decision,
    old: Found,
    new: Hash32,
) -> Result<RunSpec, HandsSpecError> {
    let (grant, _) = decision.grant().ok_or(HandsSpecError::NoGrant)?;
    let args = decision.args().ok_or(HandsSpecError::NoGrant)?;
    let (call, root, target) = target_of(args, grant)?;
    let stage = StageSpec {
        invocation: StageInvocation::Commit(Commit {
            target,
            call,
            old,
            new,
        }),
        unit: StageUnit::Write {
            root,
            writable: true,
        },
    };
    Ok(spec(
        req,
        "",
        args.clone(),
        stage,
        Vec::new(),
        write_limits(config),
    ))
}

/// A `run`: the configured program with the call's arguments, limited as its grant says.
pub fn run(
    config: &Config,
    programs: &Programs,
    req: &ToolRequest,
    decision: &Decision,
) -> Result<RunSpec, HandsSpecError> {
    let (grant, _) = decision.grant().ok_or(HandsSpecError::NoGrant)?;
    let args = decision.args().ok_or(HandsSpecError::NoGrant)?;
    let ToolArgs::Run(RunArgs {
        program,
        args: argv,
        stdin,
    }) = args
    else {
        return Err(HandsSpecError::NoGrant);
    };
    let found = programs
        .get(program)
        .ok_or_else(|| HandsSpecError::NoProgram(program.clone()))?;
    let c = &grant.constraints;
    let (limits, timeout, max_output) = run_limits(config, grant);
    let addresses = hosts(config, grant)?;
    let stage = StageSpec {
        invocation: StageInvocation::Run(RunStage {
            program: found.path.display().to_string(),
            args: argv.clone(),
            stdin: stdin.clone(),
            // The runner puts the working directory where its unit has it.
            workdir: WORK.to_owned(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            max_output,
        }),
        unit: StageUnit::Run {
            program: found.path.clone(),
            closure: found.closure.clone(),
            paths: c.paths.clone(),
            workdir: c.workdir.clone(),
        },
    };
    Ok(spec(req, "", args.clone(), stage, addresses, limits))
}

/// A run's unit limits, its program's timeout and each stream's cap: the grant's, else
/// brokerd's tool defaults (half the result limit a stream).
fn run_limits(config: &Config, grant: &Grant) -> (Limits, Duration, u64) {
    let c = &grant.constraints;
    let b = &config.broker;
    let timeout = c
        .timeout_secs
        .map_or(b.tool_time_limit, |s| Duration::from_secs(u64::from(s)));
    let max_output = c
        .output_kib
        .map_or(b.max_result_bytes / 2, |k| u64::from(k) * 1024);
    let limits = Limits {
        // Both streams, the head and their own lines.
        max_result_bytes: max_output * 2 + 1024,
        time_limit: timeout + RUN_GRACE,
        memory_max_bytes: c
            .memory_mib
            .map_or(b.tool_memory_mib, u64::from)
            .saturating_mul(1024 * 1024),
        tasks_max: c.tasks.unwrap_or(b.tool_tasks_max),
    };
    (limits, timeout, max_output)
}

/// Every address the grant's hosts resolve to now, kept as for `http_fetch` (B18), sorted;
/// in the hostile self-test's shadow (`[broker.self_test]`), the sink's loopback address, as
/// for a fetch (`self_test`).
fn hosts(config: &Config, grant: &Grant) -> Result<Vec<IpAddr>, HandsSpecError> {
    let mut all = Vec::new();
    for entry in &grant.constraints.hosts {
        let host = match entry.parse::<IpAddr>() {
            Ok(ip) => Host::Ip(ip),
            Err(_) => Host::Name(entry.clone()),
        };
        let found = crate::run::self_test::addresses(config, &host, 443, grant)
            .map_err(HandsSpecError::Resolve)?;
        all.extend(found);
    }
    all.sort();
    all.dedup();
    Ok(all)
}

/// The unit a hands grant's calls get, for `brokerd --print-tool-unit`: a write grant's
/// commit under its first path, a run grant's first program with its limits. `None` for
/// any other grant, or a run grant whose program is not configured.
pub fn example(config: &Config, grant: &Grant) -> Option<(StageSpec, Limits)> {
    let c = &grant.constraints;
    match grant.tool.as_str() {
        "write_file" | "edit_file" => {
            let root = c.paths.first()?.clone();
            let call = WriteCall::WriteFile(WriteFileArgs {
                content: String::new(),
                mode: proto::tools::WriteMode::Replace,
                path: format!("{root}/example"),
            });
            let invocation = StageInvocation::Commit(Commit {
                target: Target {
                    root: root.clone(),
                    path: "example".into(),
                },
                call,
                old: Found::Absent,
                new: Hash32::ZERO,
            });
            let unit = StageUnit::Write {
                root,
                writable: true,
            };
            Some((StageSpec { invocation, unit }, write_limits(config)))
        }
        "run" => {
            let name = c.programs.first()?;
            let program = config.broker.programs.get(name)?.clone();
            let invocation = StageInvocation::Run(RunStage {
                program: program.display().to_string(),
                args: Vec::new(),
                stdin: None,
                workdir: WORK.into(),
                timeout_ms: 0,
                max_output: 0,
            });
            let (limits, ..) = run_limits(config, grant);
            let unit = StageUnit::Run {
                program,
                closure: None,
                paths: c.paths.clone(),
                workdir: c.workdir.clone(),
            };
            Some((StageSpec { invocation, unit }, limits))
        }
        _ => None,
    }
}
