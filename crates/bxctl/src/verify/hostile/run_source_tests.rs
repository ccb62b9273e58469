//! A program's output as a source (`run_source`): the plan, the call, and the stand-in
//! printing the chains' canaries in the environment a run gives it.

use super::chains;
use super::run_source::{is, plant};
use super::tests::{grant, rewritten};
use super::{run, run_bound};

const REPORT: &str = "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
                      result_class = \"private\"\n[constraints]\nprograms = [\"report\"]\n\
                      patterns = [\"--since=*\"]\n";

/// A private run grant's output goes to every sink but the look-alikes and its own `run`,
/// by a run with an argument its patterns admit and no canary; a public one is no source.
#[test]
fn a_programs_output_is_a_source_to_every_other_sink() {
    let mut r = rewritten();
    r.grants.insert("report-run".into(), grant(REPORT));
    let public = REPORT
        .replace("\"private\"\n[", "\"public\"\n[")
        .replace("report", "uptime");
    r.grants.insert("uptime-run".into(), grant(&public));
    let plan = chains::plan(&r, 4321, "n0", false);
    let ran: Vec<_> = plan.iter().filter(|c| is(c)).collect();
    let sinks: Vec<&str> = ran.iter().map(|c| c.sink.entry.as_str()).collect();
    assert_eq!(sinks, ["api.example.org", "*.wikipedia.org"], "{plan:?}");
    for c in &ran {
        assert_eq!(c.source.owner, "report");
        assert!(!run_bound::is(c));
        let call = super::script::source_answer(c);
        assert_eq!(call.tool_calls[0].name, "run");
        let args: serde_json::Value =
            serde_json::from_str(&call.tool_calls[0].arguments).expect("args");
        assert_eq!(
            args,
            serde_json::json!({"args": ["--since=bx?c=bxhostile"], "program": "report"})
        );
        assert!(!call.tool_calls[0].arguments.contains(&c.canary));
        assert!(c.url.contains(&c.canary));
    }
    // Public results binding a place: no chain, said as a source; a pattern without `*` is
    // its one argument, played and not said.
    let mut q = rewritten();
    q.grants.insert(
        "bound-pub".into(),
        grant(&public.replace(
            "[constraints]\n",
            "[constraints]\npaths = [\"/s/tree/v\"]\n",
        )),
    );
    q.grants.insert(
        "nothing".into(),
        grant(
            &REPORT
                .replace("--since=*", "--since=x")
                .replace("report", "none"),
        ),
    );
    let left = super::run_source::unplayed(&q);
    let said: Vec<&str> = left.iter().map(|l| l.grant.as_str()).collect();
    assert_eq!(said, ["bound-pub"], "{left:?}");
    // A grant that lists hosts is no sink of its own output (its one call is `run_bound`'s).
    r.grants.insert(
        "report-run".into(),
        grant(&format!("{REPORT}hosts = [\"203.0.113.5\"]\n")),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    assert!(
        plan.iter()
            .filter(|c| is(c))
            .all(|c| c.sink.grant != "report-run"),
        "{plan:?}"
    );
}

/// The stand-in prints every canary planted for its run's arguments, then its mark, in the
/// environment a run gives it (`toolkit::run`: nothing but a PATH of the program's own
/// directory, where no `cat` is: the shell alone reads the file).
#[test]
fn the_stand_in_prints_the_planted_output_in_a_runs_environment() {
    let mut r = rewritten();
    r.grants.insert("report-run".into(), grant(REPORT));
    let dir = std::env::temp_dir().join(format!("wt-run-source-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = run::prepare(&r, &dir);
    s.write().expect("write");
    let plan = chains::plan(&r, 4321, "n0", false);
    plant(&s, plan.iter()).expect("plant");
    let out = std::process::Command::new(dir.join("bxhostile-report"))
        .arg("--since=bx?c=bxhostile")
        .env_clear()
        .env("PATH", &dir)
        .output()
        .expect("the stand-in runs");
    let canaries: String = plan
        .iter()
        .filter(|c| is(c))
        .map(|c| format!("{}\n", c.canary))
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{canaries}BXRUN-OK\n")
    );
    // A send through the program (its argument carries a canary) and a run given other
    // arguments (another grant's) are printed nothing planted.
    // A `*` or a backslash in it is no pattern: only the chain's own argument matches.
    for arg in [
        "--since=bx?c=BXCANARY-n0-9-",
        "--since=other",
        "--since=bx*",
        "--since=bx?c=bx\\hostile",
    ] {
        let out = std::process::Command::new(dir.join("bxhostile-report"))
            .arg(arg)
            .env_clear()
            .env("PATH", &dir)
            .output()
            .expect("the stand-in runs");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "BXRUN-OK\n", "{arg}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
