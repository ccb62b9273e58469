//! `run` stand-ins for the shadow (docs/verify.md, decisions V39): each program name a `run`
//! grant names is mapped, in the shadow's `[broker.programs]`, to a stand-in of the
//! self-test's, a small `/bin/sh` script in the scratch directory that appends each of its
//! arguments, one a line, to a calls file of its own and prints `BXRUN-OK`. The owner's
//! program is never run, and the stand-in touches no network and reads only what its grant
//! binds. A chain's
//! send is a `run` of the program with one argument carrying the canary that the grant's
//! `patterns` admit (`https://api.example.org/*` → `https://api.example.org/bx?c=CANARY`);
//! it leaked when the stand-in recorded the canary under a call whose deciding grant (from
//! the shadow's audit log) lists hosts (without them the program has no network). A grant
//! the shadow cannot play (one listing hosts whose patterns admit no argument carrying a
//! canary) is left out and said; a job's is played in its runs (`jobs`, decisions V61). A
//! run of a grant with a `workdir` is a write there ([`WRITE`]): the stand-in adds each
//! argument carrying `BXWRITE-` to [`RAN`] in its working directory, where an
//! untrusted-write chain's canary is looked for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proto::tools::{RunArgs, ToolArgs};
use proto::{Grant, Mode};

use super::chains::{Chain, Target};
use super::rewrite::{Left, Rewritten, Scope};
use super::script::{Answer, Call};

/// The sink of an untrusted-write chain into a `run` of a grant with a `workdir` (a run
/// there is a write, H9): the call is a `run`, and what it wrote is looked for in [`RAN`].
pub const WRITE: &str = "run-write";

/// The file a stand-in adds each argument carrying `BXWRITE-` to, in its working directory.
pub const RAN: &str = "bxhostile-ran";

/// A canary's shape, for checking that a pattern admits one (the real ones differ only in
/// their letters and digits, which no pattern tells apart from these: a pattern's `*` and
/// `?` match any character).
const SAMPLE: &str = "BXCANARY-0000-0-";

/// What a grant's first `*` becomes, before the canary: a query, so that a URL pattern
/// (`https://host/*`) makes a URL.
const QUERY: &str = "bx?c=";

/// `pattern` made into an argument carrying `canary`: its first `*` becomes [`QUERY`] and
/// the canary, every other `*` nothing, every `?` an `x`, an escaped character itself.
/// `None`: the pattern has no `*`, so no argument it admits carries a canary.
pub fn fill(pattern: &str, canary: &str) -> Option<String> {
    let mut out = String::new();
    let mut star = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '*' if !star => {
                star = true;
                out.push_str(QUERY);
                out.push_str(canary);
            }
            '*' => {}
            '?' => out.push('x'),
            other => out.push(other),
        }
    }
    star.then_some(out)
}

/// The first of `g`'s programs and patterns whose filled argument the grant covers (brokerd's
/// own check, [`grants::constraints::check`]); `None`: none does.
pub(super) fn admitted(g: &Grant) -> Option<(String, String)> {
    let program = g.constraints.programs.first()?;
    g.constraints.patterns.iter().find_map(|p| {
        let arg = fill(p, SAMPLE)?;
        let call = ToolArgs::Run(RunArgs {
            args: vec![arg],
            program: program.clone(),
            stdin: None,
        });
        grants::constraints::check(g, &call)
            .is_ok()
            .then(|| (program.clone(), p.clone()))
    })
}

/// Why the shadow does not play a `run` grant; `None`: it does (or it is not a `run` grant).
pub fn untried(g: &Grant) -> Option<String> {
    if g.tool != "run" {
        return None;
    }
    let allows_hosts = g.mode != Mode::Deny && !g.constraints.hosts.is_empty();
    if allows_hosts && g.constraints.programs.is_empty() {
        return Some(
            "it names no program (any of broker.programs): the shadow has no stand-in to map"
                .into(),
        );
    }
    if allows_hosts && g.constraints.patterns.is_empty() {
        return Some(
            "it lists no patterns: only a run without arguments is allowed, which carries no \
             canary"
                .into(),
        );
    }
    if allows_hosts && admitted(g).is_none() {
        return Some(format!(
            "no argument its patterns ({}) admit can carry a canary (a pattern without `*`)",
            g.constraints.patterns.join(", ")
        ));
    }
    None
}

/// The `run` sinks of the shadow's grants: each allowing grant of an ordinary session that
/// lists hosts (without them its program has no network: no sink), its entry the program and
/// the pattern the chain's argument fills (`PROGRAM PATTERN`).
pub fn targets(r: &Rewritten) -> Vec<Target> {
    targets_of(r.grants.iter())
}

/// The `run` sinks among `grants` (a job's, `jobs`), as [`targets`].
pub fn targets_of<'a>(grants: impl Iterator<Item = (&'a String, &'a Grant)>) -> Vec<Target> {
    grants
        .filter(|(_, g)| g.tool == "run" && g.mode != Mode::Deny)
        .filter(|(_, g)| !g.constraints.hosts.is_empty())
        .filter_map(|(id, g)| {
            let (program, pattern) = admitted(g)?;
            Some(Target {
                tool: "run",
                grant: id.clone(),
                entry: format!("{program} {pattern}"),
                lookalike: None,
            })
        })
        .collect()
}

/// A `run` target's program and pattern (its entry, `PROGRAM PATTERN`: a program's name
/// holds no space).
pub(super) fn split(entry: &str) -> (&str, &str) {
    entry.split_once(' ').unwrap_or((entry, ""))
}

/// A `run` sink's argument, carrying `canary` (the chain's `url`).
pub fn subject(entry: &str, canary: &str) -> String {
    fill(split(entry).1, canary).unwrap_or_else(|| canary.to_owned())
}

/// The chain's `run` call: its program, its one argument.
pub fn send(c: &Chain) -> Answer {
    let (program, _) = split(&c.sink.entry);
    Answer {
        text: String::new(),
        tool_calls: vec![Call {
            name: "run".into(),
            arguments: serde_json::json!({"args": [c.url], "program": program}).to_string(),
        }],
    }
}

/// The shadow's program stand-ins: by program name, the script and its calls file.
#[derive(Debug, Default)]
pub struct StandIns {
    programs: BTreeMap<String, (PathBuf, PathBuf)>,
    /// By program name, the paths its stand-in copies into its calls file (its only grant's).
    binds: BTreeMap<String, Vec<String>>,
}

/// The stand-ins for every program name the shadow's `run` grants name, under `dir`.
pub fn prepare(r: &Rewritten, dir: &Path) -> StandIns {
    // A job's grants too: its runs call the same stand-ins (`jobs`).
    let programs = r
        .grants
        .values()
        .chain(r.jobs.values())
        .filter(|g| g.tool == "run")
        .flat_map(|g| g.constraints.programs.iter())
        // A name brokerd would refuse is never a file name, a shell line or a key here (the
        // shadow's brokerd then refuses the grant, and the run says so).
        .filter(|name| proto::tools::hands::check_program_name(name).is_ok())
        .map(|name| {
            let script = dir.join(format!("bxhostile-{name}"));
            let calls = dir.join(format!("{name}.calls"));
            (name.clone(), (script, calls))
        })
        .collect::<BTreeMap<_, _>>();
    let binds = programs
        .keys()
        .filter_map(|p| {
            Some((
                p.clone(),
                super::run_bound::places(super::run_bound::binding(r, p)?.1)
                    .cloned()
                    .collect(),
            ))
        })
        .collect();
    StandIns { programs, binds }
}

/// What parts an outputs file's line: the run's arguments (joined by spaces, as the
/// shell's `$*`) before it, what the stand-in prints to a run given them after (so that a
/// run of one grant's prints nothing another grant's chain waits for: a job's runs share
/// one script).
pub const OUTPUT_KEY: &str = " =>BXOUT ";

/// The file whose lines a program's stand-in prints (the output chains' canaries,
/// `run_source`), beside its calls file.
pub fn outputs_of(calls: &Path) -> PathBuf {
    calls.with_extension("out")
}

/// A stand-in's text: each argument a line of `calls`, then every file under `binds` (its
/// grant's paths, in the shadow) added to it, read by the shell alone; nothing sent. To a
/// run carrying no canary it prints the lines of its outputs file ([`outputs_of`]) planted
/// for its very arguments ([`OUTPUT_KEY`]), then `BXRUN-OK`.
fn script(name: &str, calls: &Path, binds: &[String]) -> String {
    let quote = |p: &str| format!("'{}'", p.replace('\'', r"'\''"));
    let outputs = quote(&outputs_of(calls).display().to_string());
    let calls = quote(&calls.display().to_string());
    let mut out = format!(
        "#!/bin/sh\n# boxmaker's hostile self-test: a stand-in for {name}, recording its \
         arguments and what its grant binds\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done \
         >> {calls}\n\
         for a in \"$@\"; do case \"$a\" in *BXWRITE-*) printf '%s\\n' \"$a\" 2>/dev/null \
         >> {RAN};; esac; done\n"
    );
    if !binds.is_empty() {
        out.push_str(
            "walk() { if [ -d \"$1\" ]; then for f in \"$1\"/*; do [ -e \"$f\" ] && walk \"$f\"; \
             done; elif [ -f \"$1\" ]; then while IFS= read -r l || [ -n \"$l\" ]; do \
             printf 'BXBOUND %s\\n' \"$l\"; done < \"$1\"; fi; }\n",
        );
        for b in binds {
            out.push_str(&format!("walk {} >> {calls}\n", quote(b)));
        }
    }
    // Read by the shell alone, as the binds are: a run's PATH is only its own directory. To
    // a run carrying no canary only (an output chain's, `run_source`): a send through the
    // same program (a job's runs share one script) prints nothing that sets off another
    // chain's send.
    out.push_str(&format!(
        "case \"$*\" in *BXCANARY-*) ;; *) [ -f {outputs} ] && while IFS= read -r l || \
         [ -n \"$l\" ]; do case \"$l\" in \"$*{OUTPUT_KEY}\"*) printf '%s\\n' \
         \"${{l#*{OUTPUT_KEY}}}\";; esac; done < {outputs};; esac\necho BXRUN-OK\n"
    ));
    out
}

impl StandIns {
    /// Writes each stand-in (executable, this user's alone).
    pub fn write(&self) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        for (name, (script_path, calls)) in &self.programs {
            if let Some(dir) = script_path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let binds = self.binds.get(name).map_or(&[][..], Vec::as_slice);
            std::fs::write(script_path, script(name, calls, binds))?;
            std::fs::set_permissions(script_path, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }

    /// The shadow's `[broker.programs]` (empty: no `run` grant).
    pub fn toml(&self) -> String {
        if self.programs.is_empty() {
            return String::new();
        }
        let mut out = String::from("[broker.programs]\n");
        for (name, (script_path, _)) in &self.programs {
            // Quoted: a name may hold `.` or `+` (`python3.12`, `g++`), which a bare key
            // would split or refuse.
            let key = serde_json::to_string(name).unwrap_or_default();
            let path = serde_json::to_string(&script_path.display().to_string());
            out.push_str(&format!("{key} = {}\n", path.unwrap_or_default()));
        }
        out
    }

    /// The outputs file of `program`'s stand-in ([`outputs_of`]); `None`: it has none.
    pub fn outputs(&self, program: &str) -> Option<PathBuf> {
        self.programs
            .get(program)
            .map(|(_, calls)| outputs_of(calls))
    }

    /// Whether `c`'s canary left through its `run` sink: the stand-in of its program
    /// recorded it, and the grant that decided the call (`decider`, from the audit log)
    /// lists hosts.
    pub fn reached(&self, r: &Rewritten, c: &Chain, decider: Option<&str>) -> bool {
        let out = decider
            .and_then(|g| r.grant(g))
            .is_some_and(|g| !g.constraints.hosts.is_empty());
        out && self
            .programs
            .get(split(&c.sink.entry).0)
            .and_then(|(_, calls)| std::fs::read_to_string(calls).ok())
            // What the stand-in copied from its grant's paths (`BXBOUND `) is a bound
            // chain's (`bound`) alone: another chain's canary planted there is not its send.
            .is_some_and(|t| {
                t.lines()
                    .filter(|l| super::run_bound::is(c) || !l.starts_with(BOUND_LINE))
                    .any(|l| l.contains(&c.canary))
            })
    }
}

/// Whether untrusted-write chain `c` into a `run` ([`WRITE`]) wrote its canary: its grant's
/// `workdir` (in the shadow) holds it in [`RAN`].
pub fn ran_in(r: &Rewritten, c: &Chain) -> bool {
    r.grant(&c.sink.grant)
        .and_then(|g| g.constraints.workdir.as_ref())
        .and_then(|w| std::fs::read_to_string(Path::new(w).join(RAN)).ok())
        .is_some_and(|t| t.lines().any(|l| l.contains(&c.canary)))
}

/// The untrusted-write sink of `run` grant `g` (`grant`) of `grants`, one with a `workdir`: its
/// first program and a pattern admitting a canary; `Err`: why none is made
/// ([`unwritable`]).
fn write_target_of(
    grants: &BTreeMap<String, Grant>,
    grant: &str,
    g: &Grant,
) -> Result<Target, &'static str> {
    let Some((program, pattern)) = admitted(g) else {
        return Err(
            "no argument its patterns admit can carry a canary (no program, or a pattern \
             without `*`): a run writing one into its workdir cannot be made",
        );
    };
    // The analysis makes one call of a program, decided by one grant: which grant's
    // workdir another grant's run would write in is not the shadow's to say.
    if super::run_bound::only(grants, &program).is_none() {
        return Err(
            "another allowing run grant names its program too: which grant a run writing into its \
             workdir is decided by is not played",
        );
    }
    Ok(Target {
        tool: WRITE,
        grant: grant.to_owned(),
        entry: format!("{program} {pattern}"),
        lookalike: None,
    })
}

/// [`write_target_of`] for a grant with a `workdir`; `None` for one without, or none made.
pub fn write_target(grants: &BTreeMap<String, Grant>, grant: &str, g: &Grant) -> Option<Target> {
    g.constraints.workdir.as_ref()?;
    write_target_of(grants, grant, g).ok()
}

/// The `run` grants with a `workdir` no untrusted write into which the shadow makes, and
/// why: their untrusted writes are not tried, their other flows are.
pub fn unwritable(r: &Rewritten) -> Vec<Left> {
    // A job's grants among the job grants (they decide its runs), as `jobs` plans them.
    let ordinary = r.grants.iter().map(|(id, g)| (id, g, &r.grants));
    let jobs = r.jobs.iter().map(|(id, g)| (id, g, &r.jobs));
    ordinary
        .chain(jobs)
        .filter(|(_, g, _)| g.tool == "run" && g.mode != Mode::Deny)
        .filter(|(_, g, _)| g.constraints.workdir.is_some())
        .filter_map(|(id, g, scope)| {
            let why = write_target_of(scope, id, g).err()?;
            Some(Left {
                grant: id.clone(),
                why: why.into(),
                scope: Scope::Written,
            })
        })
        .collect()
}

/// How a stand-in's calls file marks a line it copied from its grant's paths.
const BOUND_LINE: &str = "BXBOUND ";

/// Why the shadow does not play a flow with a `run` step (`left`: the grants left out of the
/// shadow); `None`: it does, or the flow has no `run` step.
pub fn not_played(f: &proto::flows::Flow, left: &[Left]) -> Option<String> {
    // A program reading its bound paths and sending them in one call (`bound`) is played,
    // but where another grant names its program too (`unbound`).
    // (An untrusted run driving its own grant's next run is two calls, `played`'s to say.)
    let one_call = f.severity != proto::flows::Severity::UntrustedWrite
        && f.source.tool == "run"
        && f.sink.tool == "run"
        && f.source.grant == f.sink.grant;
    if let Some(g) = f.source.grant.as_deref().filter(|_| one_call)
        && left
            .iter()
            .any(|l| l.grant == g && l.scope == Scope::OneCall)
    {
        return super::played::as_source(g, left, &[Scope::OneCall]);
    }
    // A program's output not played (`run_source::unplayed`).
    if let Some(g) = f
        .source
        .grant
        .as_deref()
        .filter(|_| f.source.tool == "run" && !one_call)
        && left
            .iter()
            .any(|l| l.grant == g && l.scope == Scope::Source)
    {
        return super::played::as_source(g, left, &[Scope::Source]);
    }
    // A program's output (`run_source`) is played; a grant left out is not.
    [
        (&f.source.tool, &f.source.grant),
        (&f.sink.tool, &f.sink.grant),
    ]
    .into_iter()
    .filter(|(tool, _)| tool.as_str() == "run")
    .find_map(|(_, g)| {
        let g = g.as_deref()?;
        left.iter()
            .any(|l| l.grant == g && l.scope == Scope::Grant)
            .then(|| format!("grant {g} is left out of the shadow (below)"))
    })
}
