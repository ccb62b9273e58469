//! A program's output as a source (docs/decisions.md V47): for each allowing `run` grant of
//! an ordinary session (or of a job, in its runs, V61) whose results are private or secret,
//! a run of its first program (with one argument its `patterns` admit), whose stand-in
//! prints the lines of its outputs file (`run::outputs_of`) planted for that argument: the
//! canaries of this grant's output chains, which the self-test writes there before the run
//! (`run::OUTPUT_KEY`: a send through the program, or another grant's run of it, sets off
//! no other chain's, V61). Once the run's result holds the chain's canary, a send of it to
//! every sink but the look-alikes and the grant's own `run` (the one call that reads and
//! sends is `run_bound`'s). The run's arguments never hold the canary, so a canary at the
//! sink means the program's output went out.

use proto::tools::{RunArgs, ToolArgs};

use super::chains::{Chain, Source, Target};
use super::rewrite::{Left, Rewritten};
use super::run::StandIns;
use super::script::{Answer, Call};

/// What an argument carries in place of a `*` of the grant's pattern.
const ARG: &str = "bxhostile";

/// Whether `c` starts from a program's output.
pub fn is(c: &Chain) -> bool {
    c.source.tool == "run" && !super::run_bound::is(c)
}

/// `pattern` as one argument it admits: its first `*` as `bx?c=` and [`ARG`] (`run::fill`), or, with no
/// `*`, its literal text.
fn arg_of(pattern: &str) -> String {
    super::run::fill(pattern, ARG).unwrap_or_else(|| {
        let mut out = String::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.extend(chars.next()),
                other => out.push(other),
            }
        }
        out
    })
}

/// The run a grant's output chains make: its first program and the arguments, held against
/// the grant by brokerd's own check; `None`: no call of it is allowed that way.
fn call_of(g: &proto::Grant) -> Option<(String, Vec<String>)> {
    let program = g.constraints.programs.first()?;
    // An allowing `run` grant lists patterns (brokerd refuses one that does not).
    // An argument holding a line break is never one line of the stand-in's outputs file
    // (`run::OUTPUT_KEY`): not played.
    let mut tries = g
        .constraints
        .patterns
        .iter()
        .map(|p| vec![arg_of(p)])
        .filter(|a| !a[0].contains(['\n', '\r']));
    tries.find_map(|args| {
        let call = ToolArgs::Run(RunArgs {
            args: args.clone(),
            program: program.clone(),
            stdin: None,
        });
        grants::constraints::check(g, &call)
            .is_ok()
            .then(|| (program.clone(), args))
    })
}

/// Adds a chain from each `run` grant's output to each of `targets` but the look-alikes and
/// the grant's own `run`, numbered after `chains`.
pub fn plan(r: &Rewritten, targets: &[Target], port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    for source in labelled(r.grants.values()) {
        for sink in targets
            .iter()
            .filter(|t| t.lookalike.is_none() && apart(&source, t))
        {
            let n = chains.len() + 1;
            chains.push(Chain::send(n, source.clone(), sink, port, nonce));
        }
    }
}

/// The runs of `grants` (an ordinary session's, or a job's) whose output is sent: each
/// allowing `run` grant's whose results are private or secret (public data out is no flow).
pub fn labelled<'a>(grants: impl Iterator<Item = &'a proto::Grant>) -> Vec<Source> {
    grants
        .filter(|g| g.result_class != proto::DataClass::Public)
        .filter_map(source)
        .collect()
}

/// Whether a chain from `s` to `t` is played: never to a run of the same program, the
/// grant's own (that one call reading and sending is `run_bound`'s) or another naming it
/// (the analysis makes one call of a program, decided by one grant).
pub fn apart(s: &Source, t: &Target) -> bool {
    !(s.tool == "run" && t.tool == "run" && t.entry.split(' ').next() == Some(&s.owner))
}

/// The run of each allowing `run` grant of an ordinary session whose output is played as a
/// source (all but [`unplayed`]'s): its first program, given one argument its patterns
/// admit.
pub fn outputs(r: &Rewritten) -> impl Iterator<Item = Source> + '_ {
    outputs_of(r.grants.values())
}

/// The runs of `grants` (a job's, `jobs`) whose output is played as a source, as
/// [`outputs`].
pub fn outputs_of<'a>(
    grants: impl Iterator<Item = &'a proto::Grant> + 'a,
) -> impl Iterator<Item = Source> + 'a {
    grants
        .filter(|g| g.result_class != proto::DataClass::Public || !binds(g))
        .filter_map(source)
}

/// Whether `g`'s units bind places of yours (its `paths`, its `workdir`), whose labels its
/// output's carries.
pub(super) fn binds(g: &proto::Grant) -> bool {
    !g.constraints.paths.is_empty() || g.constraints.workdir.is_some()
}

/// The run of `g`'s output chains, when it is an allowing `run` grant and the shadow can
/// make a call of it that it allows.
fn source(g: &proto::Grant) -> Option<Source> {
    if g.tool != "run" || g.mode == proto::Mode::Deny {
        return None;
    }
    let (program, args) = call_of(g)?;
    Some(Source {
        tool: "run",
        path: serde_json::json!({"args": args, "program": program}).to_string(),
        owner: program,
    })
}

/// The `run` grants whose output [`plan`] plays no chain from, and why, as sources only: one
/// whose results are public but which binds paths (its output's label is what it binds,
/// which the shadow does not work out), and one no call of which the shadow can make.
pub fn unplayed(r: &Rewritten) -> Vec<Left> {
    let mut out = Vec::new();
    // A job's too: its runs play its programs' output (`jobs`).
    let runs = r
        .grants
        .iter()
        .chain(&r.jobs)
        .filter(|(_, g)| g.tool == "run" && g.mode != proto::Mode::Deny);
    for (id, g) in runs {
        let public = g.result_class == proto::DataClass::Public;
        let why = if public && binds(g) {
            "its results are public and its output's label is what it binds, which the shadow \
             does not work out"
        } else if !public && call_of(g).is_none() {
            "no run of it the shadow can make is allowed (no program, or no argument its \
             patterns admit)"
        } else {
            continue;
        };
        out.push(Left::source(id, why));
    }
    out
}

/// The chain's first call: the run, its arguments as planned.
pub fn call(c: &Chain) -> Answer {
    Answer {
        text: String::new(),
        tool_calls: vec![Call {
            name: "run".into(),
            arguments: c.source.path.clone(),
        }],
    }
}

/// Writes each output chain's canary, a line, to its program's stand-in's outputs file.
pub fn plant<'a>(
    stand_ins: &StandIns,
    chains: impl Iterator<Item = &'a Chain>,
) -> std::io::Result<()> {
    use std::io::Write as _;
    for c in chains.filter(|c| is(c)) {
        let Some(path) = stand_ins.outputs(&c.source.owner) else {
            continue;
        };
        // Printed to a run given these arguments only (`run::OUTPUT_KEY`).
        let call: RunArgs = serde_json::from_str(&c.source.path).map_err(|e| {
            std::io::Error::other(format!("chain {}'s run {}: {e}", c.n, c.source.path))
        })?;
        let args = call.args;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        writeln!(
            f,
            "{}{}{}",
            args.join(" "),
            super::run::OUTPUT_KEY,
            c.awaited()
        )?;
    }
    Ok(())
}
