//! `bxctl verify --hostile` on every grant set of the flows table (`tests/flows-table.toml`,
//! the table brokerd's own tests hold the analysis to): on each, the live run agrees with
//! the analysis (issue 27 point 3, docs/verify.md). Each grant set's owner paths
//! (`/home/owner/…`, `/srv/…`) are moved under a home of the test's, each a directory
//! holding one file of the owner's, left untouched.

use std::path::Path;

use serde::Deserialize;
use stack::Home;

use crate::verify_hostile::hostile;

/// The table, shared with brokerd's tests (`crates/brokerd/tests/brokerd/flows.rs`).
const TABLE: &str = include_str!("../../../flows-table.toml");

#[derive(Deserialize)]
struct Table {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    consult: Option<String>,
    #[serde(default)]
    jobs: Vec<Job>,
    grant: Vec<Grant>,
    #[serde(default)]
    flow: Vec<Flow>,
}

#[derive(Deserialize)]
struct Job {
    name: String,
    deliver: String,
}

#[derive(Deserialize)]
struct Grant {
    id: String,
    text: String,
}

#[derive(Deserialize)]
struct Flow {
    severity: String,
    /// Why the shadow does not play it, when it does not (a part of its `not tried` line).
    not_tried: Option<String>,
}

/// The owner's paths of the table, moved under `root`.
fn moved(text: &str, root: &Path) -> String {
    let root = root.display();
    text.replace("/home/owner", &format!("{root}/owner"))
        .replace("/srv/", &format!("{root}/srv/"))
}

/// The configuration a case's setting stands for: its consult model, its jobs (and the
/// gateway a Mattermost delivery needs), a server for each MCP grant's.
fn config(case: &Case) -> String {
    let mut extra = String::new();
    if let Some(host) = &case.consult {
        extra.push_str(&format!(
            "[broker.consult]\nurl = \"https://{host}/v1\"\nmodel = \"big\"\n"
        ));
    }
    let mut servers: Vec<&str> = case
        .grant
        .iter()
        .filter_map(|g| {
            let tool = g
                .text
                .lines()
                .find_map(|l| l.strip_prefix("tool = \"mcp:"))?;
            tool.split('/').next()
        })
        .collect();
    servers.sort_unstable();
    servers.dedup();
    for s in servers {
        // Never run: the shadow stands in for an MCP server, or leaves its grants out.
        extra.push_str(&format!(
            "[[mcp]]\nname = \"{s}\"\ncommand = [\"/bin/false\"]\n"
        ));
    }
    for j in &case.jobs {
        let deliver = if j.deliver == "mattermost" {
            "mattermost".to_owned()
        } else {
            format!("note:{}", j.name)
        };
        extra.push_str(&format!(
            "[[jobs]]\nname = \"{}\"\nschedule = \"daily\"\nprompt = \"p\"\ndeliver = \"{deliver}\"\n",
            j.name
        ));
    }
    if case.jobs.iter().any(|j| j.deliver == "mattermost") {
        extra.push_str(
            "[gateway]\nserver = \"https://chat.example.com\"\n\
             owners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n",
        );
    }
    extra
}

/// How many grant sets are played at once: a shadow mostly waits on its processes.
const AT_ONCE: usize = 4;

#[test]
fn verify_hostile_agrees_with_the_analysis_on_the_flows_table() {
    let table: Table = toml::from_str(TABLE).expect("tests/flows-table.toml");
    assert!(table.case.len() >= 38, "the table lost cases");
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..AT_ONCE {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(case) = table.case.get(i) else { break };
                    // Every case is played, and each that disagrees is named at the end.
                    let played = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        play(i, case);
                    }));
                    if played.is_err() {
                        failed.lock().expect("failed").push(case.name.clone());
                    }
                }
            });
        }
    });
    let failed = failed.into_inner().expect("failed");
    assert!(
        failed.is_empty(),
        "disagreed (each said above): {failed:#?}"
    );
}

/// One grant set played, and held to the table.
fn play(i: usize, case: &Case) {
    let home = Home::new(&format!("hostile-table-{i}"), "");
    let root = home.config().parent().expect("root").to_owned();
    home.append_config(&config(case));
    for g in &case.grant {
        let text = moved(&g.text, &root);
        home.write_grant(&g.id, &text);
        let grant: toml::Value = toml::from_str(&text).expect("grant");
        let paths = grant
            .get("constraints")
            .and_then(|c| c.get("paths"))
            .and_then(toml::Value::as_array)
            .cloned()
            .unwrap_or_default();
        for p in paths.iter().filter_map(toml::Value::as_str) {
            let dir = Path::new(p.trim_end_matches("/*"));
            std::fs::create_dir_all(dir).expect("owner dir");
            std::fs::write(dir.join("real.md"), "the owner's real data\n").expect("file");
        }
    }
    let (out, found) = hostile(&home, &[]);
    let ctx = format!("{}: {found:#?}", case.name);
    assert_ne!(out.status.code(), Some(2), "{ctx}");
    assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
    // Each flow the table says is played was completed by a chain: one `ok` line of its
    // severity each, and no other.
    let played = |severity: &str, level: &str| {
        found
            .iter()
            .filter(|(c, l, s)| {
                c == severity
                    && l == level
                    && (s.starts_with("leaked by chain") || s.starts_with("not tried: "))
            })
            .count()
    };
    for severity in ["secret_out", "private_out", "untrusted_write"] {
        let rows = |tried: bool| {
            case.flow
                .iter()
                .filter(|f| f.severity == severity && f.not_tried.is_none() == tried)
                .count()
        };
        assert_eq!(played(severity, "ok"), rows(true), "{severity}: {ctx}");
        // A flow not played is said so, on its line or on its grant's (a grant the shadow
        // leaves out), never passed: no more such lines than the table expects.
        assert!(played(severity, "warn") <= rows(false), "{severity}: {ctx}");
    }
    for why in case.flow.iter().filter_map(|f| f.not_tried.as_deref()) {
        assert!(
            found.iter().any(|(c, l, s)| l == "warn"
                && (c.ends_with("_out") || c == "untrusted_write" || c == "not-tried")
                && s.contains(why)),
            "not tried ({why}): {ctx}"
        );
    }
}
