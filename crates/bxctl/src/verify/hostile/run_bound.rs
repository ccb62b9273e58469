//! A program reading what its grant binds and sending it in one call (docs/verify.md,
//! decisions V53, V65), as `mcp_bound` plays an MCP server's tool doing it: the program's
//! stand-in (`run`) copies every file under the places of one grant naming it ([`binding`])
//! into its calls file at each run, so a chain of its own plants a canary under the first of
//! them and makes one `run` call, its argument without the canary; it leaked when the
//! stand-in recorded the canary under that call and the grant that decided it lists hosts.
//! A grant whose places the stand-in does not read (another allowing grant names its program
//! too) is said `not tried` as a source ([`unbound`]).

use std::collections::BTreeMap;
use std::path::Path;

use proto::Grant;

use super::chains::{Chain, Target};
use super::rewrite::{Left, Rewritten, Scope};

/// The `run` sinks (an ordinary session's and the jobs') whose grant binds paths but is not
/// the one whose places its program's stand-in reads ([`binding`]: another `run` grant
/// names its program too, allowing): reading them and sending in one call ([`plan`]) is not played,
/// and said, as a source only (its output and its sends are played).
pub fn unbound(r: &Rewritten) -> Vec<Left> {
    super::run::targets_of(r.grants.iter().chain(&r.jobs))
        .into_iter()
        .filter_map(|t| {
            let (program, _) = super::run::split(&t.entry);
            let g = r.grant(&t.grant)?;
            places(g).next()?;
            let read = binding(r, program).is_some_and(|(id, _)| *id == t.grant);
            let why = if !read {
                format!(
                    "another allowing run grant names its program {program} too: the \
                     stand-in cannot tell which grant's paths a run binds, so reading them \
                     and sending in one call is not played"
                )
            } else if denied(r, g, &t.entry) {
                format!(
                    "a deny grant of {program} covers the argument the shadow's one call \
                     would carry ({}), so reading its paths and sending in one call is not \
                     played",
                    super::run::subject(&t.entry, BOUND)
                )
            } else {
                return None;
            };
            Some(Left {
                grant: t.grant.clone(),
                why,
                scope: Scope::OneCall,
            })
        })
        .collect()
}

/// Whether a denying `run` grant in the scope of `g` (an ordinary session's, or its job's
/// runs: the ordinary denials apply there too) covers the one call a bound chain through
/// sink `entry` makes: brokerd refuses it, whatever allows it.
fn denied(r: &Rewritten, g: &Grant, entry: &str) -> bool {
    let (program, _) = super::run::split(entry);
    let call = proto::tools::ToolArgs::Run(proto::tools::RunArgs {
        args: vec![super::run::subject(entry, BOUND)],
        program: program.to_owned(),
        stdin: None,
    });
    r.grants
        .values()
        .chain(r.jobs.values())
        .filter(|d| d.tool == "run" && d.mode == proto::Mode::Deny)
        .filter(|d| super::rewrite::in_scope(d, g.job.as_ref()))
        .any(|d| grants::constraints::check(d, &call).is_ok())
}

/// Whether `c` is a bound chain ([`plan`]): its one `run` call reads what the grant binds
/// and sends it (its source names the bound path; a program's output chain names the
/// program, `run_source`).
pub fn is(c: &Chain) -> bool {
    c.source.tool == "run" && c.source.path.starts_with('/')
}

/// What a bound chain's argument holds in place of the canary (which is under the paths).
const BOUND: &str = "bxhostile";

/// The grant naming `program`, when it is the only allowing `run` grant of `grants` that
/// does: its stand-in then knows which paths its unit binds (a denying grant binds nothing,
/// as no call it decides runs).
pub(super) fn only<'a>(grants: &'a BTreeMap<String, Grant>, program: &str) -> Option<&'a Grant> {
    only_named(grants, program).map(|(_, g)| g)
}

/// [`only`], with the grant's id.
fn only_named<'a>(
    grants: &'a BTreeMap<String, Grant>,
    program: &str,
) -> Option<(&'a String, &'a Grant)> {
    let mut naming = grants.iter().filter(|(_, g)| names(g, program));
    let g = naming.next()?;
    naming.next().is_none().then_some(g)
}

/// Whether `g` is an allowing `run` grant naming `program`.
fn names(g: &Grant, program: &str) -> bool {
    g.tool == "run"
        && g.mode != proto::Mode::Deny
        && g.constraints.programs.iter().any(|p| p == program)
}

/// The grant whose places `program`'s stand-in reads (a job's runs call the same stand-in):
/// the only allowing ordinary `run` grant naming it, or, when no ordinary one does, the only
/// allowing job grant naming it; `None`: several do.
pub(super) fn binding<'a>(r: &'a Rewritten, program: &str) -> Option<(&'a String, &'a Grant)> {
    match r.grants.values().any(|g| names(g, program)) {
        true => only_named(&r.grants, program),
        false => only_named(&r.jobs, program),
    }
}

/// The places a `run` grant's units bind: its `paths`, then its `workdir` (H11).
pub(super) fn places(g: &Grant) -> impl Iterator<Item = &String> {
    g.constraints.paths.iter().chain(&g.constraints.workdir)
}

/// A program reading what its grant binds and sending it in one call: for each `run` sink
/// whose grant binds paths or a working directory (and alone names its program), a chain
/// whose canary is planted under the first of them and whose one `run` call is source and
/// sink, its argument without the canary.
pub fn plan(r: &Rewritten, port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    for t in super::run::targets(r) {
        let n = chains.len() + 1;
        chains.extend(chain(r, &t, port, nonce, n));
    }
}

/// Chain `n`, bound ([`plan`]), through `run` sink `t` (an ordinary session's, or a job's:
/// `jobs`), when its grant binds places and is the one whose places its program's stand-in
/// reads ([`binding`]), and no deny grant covers its call ([`unbound`]).
pub fn chain(r: &Rewritten, t: &Target, port: u16, nonce: &str, n: usize) -> Option<Chain> {
    let (program, _) = super::run::split(&t.entry);
    let (id, g) = binding(r, program)?;
    let shadow = places(g)
        .next()
        .filter(|_| *id == t.grant && !denied(r, g, &t.entry))?;
    let source = super::chains::Source {
        tool: "run",
        owner: r.owner_of(shadow),
        path: shadow.clone(),
    };
    Some(Chain {
        url: super::run::subject(&t.entry, BOUND),
        ..Chain::send(n, source, t, port, nonce)
    })
}

/// Plants each bound chain's canary under its path: a file of its own in a directory, a
/// line added to a file.
pub fn plant(chains: &[Chain]) -> std::io::Result<()> {
    for c in chains.iter().filter(|c| is(c)) {
        let path = Path::new(&c.source.path);
        let name = format!("bxhostile-run-{}", c.n);
        super::chains::plant_bound(path, path.is_file(), &name, &c.canary)?;
    }
    Ok(())
}
