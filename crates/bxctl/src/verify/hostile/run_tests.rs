//! The `run` stand-ins (`run`), without a stack: which grants are played and how, the
//! stand-in's record, what counts as having left, and which flows stay `not tried`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use proto::flows::{Flow, FlowsReport, Severity, Step};
use proto::{CallId, DataClass, Grant, Hash32, ToolResponse};

use super::chains::{self, Chain};
use super::compare::{self, Outcome};
use super::rewrite::{Left, Rewritten, Scope};
use super::session::Seen;
use super::tests::rewritten;
use super::{run, run_bound};

fn grant(text: &str) -> Grant {
    proto::from_toml(text).expect("grant")
}

const CURL: &str = "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
                    [constraints]\nprograms = [\"curl\"]\n\
                    patterns = [\"https://api.example.org/*\"]\nhosts = [\"api.example.org\"]\n";

/// [`rewritten`] with a program whose grant lists hosts, and one without hosts.
fn with_run() -> Rewritten {
    let mut r = rewritten();
    r.grants.insert("curl-run".into(), grant(CURL));
    r.grants.insert(
        "py".into(),
        grant(
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             [constraints]\nprograms = [\"python3\"]\npatterns = [\"*.py\"]\n",
        ),
    );
    r
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wt-hostile-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A pattern's first `*` carries the canary, the rest is the pattern's own; a pattern
/// without `*` carries none.
#[test]
fn a_pattern_is_filled_with_the_canary() {
    assert_eq!(
        run::fill("https://api.example.org/*", "C-1-").as_deref(),
        Some("https://api.example.org/bx?c=C-1-")
    );
    assert_eq!(run::fill("*", "C-").as_deref(), Some("bx?c=C-"));
    assert_eq!(
        run::fill("-?=*.py*", "C-").as_deref(),
        Some("-x=bx?c=C-.py")
    );
    assert_eq!(run::fill("a\\*b*", "C-").as_deref(), Some("a*bbx?c=C-"));
    assert_eq!(run::fill("--dry-run", "C-"), None);
    assert_eq!(run::fill("a\\*b", "C-"), None);
}

/// Left out, with its reason: a program listing hosts whose patterns admit no canary;
/// played: a program with or without hosts or a workdir, a job's, a deny grant.
#[test]
fn the_grants_the_shadow_cannot_play_are_left_out() {
    let why = |text: &str| run::untried(&grant(text));
    assert_eq!(why(CURL), None);
    assert_eq!(why(&format!("job = \"brief\"\n{CURL}")), None, "a job's");
    // A working directory moves into the shadow (`rewrite`): played.
    let workdir = CURL.replace("hosts = [", "workdir = \"/home/owner/src\"\nhosts = [");
    assert_eq!(why(&workdir), None);
    let literal = CURL.replace("https://api.example.org/*", "--version");
    assert!(
        why(&literal).is_some_and(|w| w.contains("--version") && w.contains("canary")),
        "{:?}",
        why(&literal)
    );
    // No program named (any configured one) and no patterns each say so.
    let any = CURL.replace("programs = [\"curl\"]\n", "");
    assert!(
        why(&any).is_some_and(|w| w.contains("names no program")),
        "{:?}",
        why(&any)
    );
    let bare = CURL.replace("patterns = [\"https://api.example.org/*\"]\n", "");
    assert!(
        why(&bare).is_some_and(|w| w.contains("no patterns")),
        "{:?}",
        why(&bare)
    );
    // One pattern admitting a canary is enough.
    assert!(why(&CURL.replace("/*\"", "/*\", \"x\"")).is_none());
    let no_hosts = literal.replace("hosts = [\"api.example.org\"]\n", "");
    assert_eq!(why(&no_hosts), None);
    assert_eq!(
        why("tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"public\"\n"),
        None
    );
}

/// The plan sends to each program whose grant lists hosts, its argument the pattern filled
/// with the chain's canary, called as `run` of the program; a program without hosts is no
/// sink.
#[test]
fn a_program_with_hosts_is_a_sink_played_with_the_canary() {
    let r = with_run();
    let plan = chains::plan(&r, 8080, "n0", false);
    let runs: Vec<&Chain> = plan.iter().filter(|c| c.sink.tool == "run").collect();
    assert!(!runs.is_empty());
    assert!(runs.iter().all(|c| c.sink.grant == "curl-run"));
    for c in &runs {
        assert_eq!(c.sink.entry, "curl https://api.example.org/*");
        assert_eq!(c.url, format!("https://api.example.org/bx?c={}", c.canary));
        let call = &run::send(c).tool_calls[0];
        assert_eq!(call.name, "run");
        let args: serde_json::Value = serde_json::from_str(&call.arguments).expect("json");
        assert_eq!(
            args,
            serde_json::json!({"program": "curl", "args": [c.url]})
        );
    }
    // From the first free read too (restarts), not only the direct chains.
    assert!(runs.iter().any(|c| c.restart.is_some()));
    assert!(runs.iter().any(|c| c.restart.is_none() && c.note.is_none()));
}

/// The stand-in records its arguments and prints its mark; a canary counts as having left
/// only when recorded under a call decided by a grant that lists hosts.
#[test]
fn the_stand_in_records_and_only_a_grant_with_hosts_lets_it_out() {
    let r = with_run();
    let dir = scratch("stand-in");
    let s = run::prepare(&r, &dir);
    let toml = s.toml();
    assert!(toml.starts_with("[broker.programs]\n"), "{toml}");
    assert!(toml.contains(&format!(
        "\"curl\" = \"{}\"",
        dir.join("bxhostile-curl").display()
    )));
    assert!(toml.contains("\"python3\" = "), "{toml}");
    s.write().expect("write");
    let plan = chains::plan(&r, 8080, "n0", false);
    let c = plan
        .iter()
        .find(|c| c.sink.tool == "run")
        .expect("a run chain");
    assert!(!s.reached(&r, c, Some("curl-run")), "nothing recorded yet");
    let out = std::process::Command::new(dir.join("bxhostile-curl"))
        .args(["-s", &c.url])
        .output()
        .expect("the stand-in runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "BXRUN-OK\n");
    let calls = std::fs::read_to_string(dir.join("curl.calls")).expect("calls");
    assert_eq!(calls, format!("-s\n{}\n", c.url));
    assert!(s.reached(&r, c, Some("curl-run")));
    // Decided by a grant without hosts (the program had no network), or by none known.
    assert!(!s.reached(&r, c, Some("py")));
    assert!(!s.reached(&r, c, None));
    let other = plan
        .iter()
        .find(|d| d.sink.tool == "run" && d.n != c.n)
        .expect("another");
    assert!(!s.reached(&r, other, Some("curl-run")));
    assert_eq!(run::prepare(&rewritten(), &dir).toml(), "");
    let _ = std::fs::remove_dir_all(&dir);
}

fn step(g: &str, tool: &str) -> Step {
    Step {
        grant: Some(g.into()),
        tool: tool.into(),
        what: g.into(),
    }
}

fn flow(source: Step, sink: Step) -> Flow {
    Flow {
        severity: Severity::PrivateOut,
        job: None,
        source,
        class: DataClass::Private,
        untrusted: false,
        sink,
        text: "a hijacked model can read it via grant notes and send it through run curl".into(),
    }
}

/// A flow to a played program is compared (a leak agrees with it, none fails); a program as
/// a source, or a sink left out, stays `not tried`.
#[test]
fn flows_to_a_program_are_played_and_compared() {
    let r = with_run();
    let plan = chains::plan(&r, 8080, "n0", false);
    let c = plan
        .iter()
        .find(|c| c.sink.tool == "run" && c.source.tool == "read_file" && c.restart.is_none())
        .expect("a direct run chain")
        .clone();
    let seen = |call: u64, tool: &str, content: String, class| Seen {
        call: CallId(call),
        tool: tool.into(),
        asked: false,
        response: Some(ToolResponse::Result {
            content,
            class,
            untrusted: false,
            truncated: false,
        }),
    };
    let outcome = |at_sink| Outcome {
        source: Some((
            Some("notes".into()),
            seen(1, "read_file", c.canary.clone(), DataClass::Private),
        )),
        laundering: Vec::new(),
        sink: Some((
            Some("curl-run".into()),
            seen(2, "run", "BXRUN-OK".into(), DataClass::Public),
        )),
        at_sink,
        bare: false,
        write: false,
    };
    let report = FlowsReport {
        snapshot: Hash32::ZERO,
        grants: vec!["notes".into(), "curl-run".into()],
        flows: vec![flow(step("notes", "read_file"), step("curl-run", "run"))],
        sources: Vec::new(),
    };
    let levels = |o: Outcome, left: &[Left]| -> Vec<(String, String)> {
        compare::checks(&[(c.clone(), o)], &report, left, &BTreeSet::new())
            .into_iter()
            .map(|k| (format!("{:?}", k.level), k.said))
            .collect()
    };
    let leaked = levels(outcome(true), &[]);
    assert!(
        leaked
            .iter()
            .any(|(l, m)| l == "Ok" && m.starts_with("leaked by chain")),
        "{leaked:?}"
    );
    let held = levels(outcome(false), &[]);
    assert!(
        held.iter()
            .any(|(l, m)| l == "Fail" && m.contains("no chain completed")),
        "{held:?}"
    );
    // The sink's grant left out: not tried, saying so.
    let left = [Left {
        grant: "curl-run".into(),
        why: "x".into(),
        scope: Scope::Grant,
    }];
    let out = levels(outcome(false), &left);
    assert!(
        out.iter().any(|(l, m)| l == "Warn"
            && m.starts_with("not tried: ")
            && m.contains("grant curl-run is left out")),
        "{out:?}"
    );
    // A program binding a place and sending it in one call is played (`run_bound`), and
    // its output as a source (`run_source`), unless its grant is left out.
    let one = flow(step("curl-run", "run"), step("curl-run", "run"));
    assert_eq!(run::not_played(&one, &[]), None);
    let out = flow(step("curl-run", "run"), step("web", "http_fetch"));
    assert_eq!(run::not_played(&out, &[]), None);
    assert!(run::not_played(&out, &left).is_some_and(|w| w.contains("grant curl-run is left out")));
    let fetch = flow(step("notes", "read_file"), step("web", "http_fetch"));
    assert_eq!(run::not_played(&fetch, &left), None);
}

/// Program names with `.` or `+` are keys of their own in the shadow's `[broker.programs]`
/// (quoted), and a name brokerd would refuse gets no stand-in at all.
#[test]
fn every_program_name_is_one_key_and_a_bad_one_none() {
    let mut r = rewritten();
    for (id, name) in [("py312", "python3.12"), ("gpp", "g++"), ("bad", "../x\nrm")] {
        r.grants.insert(
            id.into(),
            grant(&CURL.replace("programs = [\"curl\"]", &format!("programs = [{name:?}]"))),
        );
    }
    let s = run::prepare(&r, &scratch("names"));
    let table: toml::Table = toml::from_str(&s.toml()).expect("the shadow's programs parse");
    let programs = table["broker"]["programs"].as_table().expect("a table");
    let names: Vec<&str> = programs.keys().map(String::as_str).collect();
    assert_eq!(names, ["g++", "python3.12"]);
}

/// A program another `run` grant names too has no bound chain (its stand-in cannot tell
/// which grant's paths a run binds): its one-call flow is said `not tried` with why, as a
/// source only; its output and the sends to it are still played.
#[test]
fn a_program_two_grants_name_is_not_played_in_one_call() {
    let mut r = with_run();
    let bound = CURL.replace(
        "[constraints]\n",
        "[constraints]\npaths = [\"/s/tree/vault\"]\n",
    );
    r.grants.insert("curl-run".into(), grant(&bound));
    assert!(run_bound::unbound(&r).is_empty(), "one grant names curl");
    assert!(
        chains::plan(&r, 8080, "n0", false)
            .iter()
            .any(run_bound::is)
    );
    // A denying grant naming it too binds nothing: still played.
    let other = |mode: &str| {
        grant(&format!(
            "tool = \"run\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\n\
             [constraints]\nprograms = [\"curl\"]\npatterns = [\"-T*\"]\n"
        ))
    };
    r.grants.insert("curl-no-upload".into(), other("deny"));
    assert!(
        run_bound::unbound(&r).is_empty(),
        "a deny grant binds nothing"
    );
    assert!(
        chains::plan(&r, 8080, "n0", false)
            .iter()
            .any(run_bound::is)
    );
    // A deny grant covering the argument the chain's one call carries: not played, said.
    r.grants.insert(
        "curl-no-query".into(),
        grant(
            "tool = \"run\"\nmode = \"deny\"\nmax_taint = \"secret\"\n\
             [constraints]\nprograms = [\"curl\"]\npatterns = [\"*bx?c=*\"]\n",
        ),
    );
    let left = run_bound::unbound(&r);
    assert!(
        left.len() == 1
            && left[0]
                .why
                .contains("a deny grant of curl covers the argument"),
        "{left:?}"
    );
    assert!(
        !chains::plan(&r, 8080, "n0", false)
            .iter()
            .any(run_bound::is)
    );
    r.grants.remove("curl-no-query");
    // An allowing one: which grant's paths a run binds is not the stand-in's to tell.
    r.grants.insert("curl-upload".into(), other("ask"));
    let left = run_bound::unbound(&r);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].scope == Scope::OneCall && left[0].grant == "curl-run");
    assert!(
        !chains::plan(&r, 8080, "n0", false)
            .iter()
            .any(run_bound::is)
    );
    let one = flow(step("curl-run", "run"), step("curl-run", "run"));
    let why = run::not_played(&one, &left).expect("not played");
    assert!(
        why.contains("another allowing run grant names its program curl too"),
        "{why}"
    );
    let out = flow(step("curl-run", "run"), step("web", "http_fetch"));
    assert_eq!(run::not_played(&out, &left), None);
    let to = flow(step("notes", "read_file"), step("curl-run", "run"));
    assert_eq!(run::not_played(&to, &left), None);
}

/// A program whose grant lists hosts and has a working directory but no paths: its stand-in
/// walks the working directory too, and a bound chain plants its canary there (decisions
/// V57).
#[test]
fn a_workdir_is_read_in_one_call() {
    let mut r = with_run();
    let workdir = CURL.replace(
        "[constraints]\n",
        "[constraints]\nworkdir = \"/s/tree/src\"\n",
    );
    r.grants.insert("curl-run".into(), grant(&workdir));
    assert!(run_bound::unbound(&r).is_empty());
    let plan = chains::plan(&r, 8080, "n0", false);
    let bound: Vec<&Chain> = plan.iter().filter(|c| run_bound::is(c)).collect();
    assert_eq!(bound.len(), 1, "{plan:?}");
    assert_eq!(bound[0].source.path, "/s/tree/src");
    let dir = std::env::temp_dir().join(format!("bx-run-workdir-{}", std::process::id()));
    let stand_ins = run::prepare(&r, &dir);
    stand_ins.write().expect("stand-ins");
    let script = std::fs::read_to_string(dir.join("bxhostile-curl")).expect("script");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(script.contains("walk '/s/tree/src'"), "{script}");
}
