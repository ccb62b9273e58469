//! `bxctl verify --hostile` on every grant set of the flows table (`tests/flows-table.toml`,
//! the table brokerd's own tests hold the analysis to): on each, the live run agrees with
//! the analysis (issue 27 point 3, docs/verify.md). Each grant set's owner paths
//! (`/home/owner/…`, `/srv/…`) are moved under a home of the test's, each a directory
//! holding one file of the owner's, left untouched.

use std::collections::BTreeMap;
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
    /// The MCP servers configured by `url`, each name to its URL.
    #[serde(default)]
    remote: BTreeMap<String, String>,
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
    source: String,
    /// The sink's grant, or `deliver` (a job's delivery).
    sink: String,
    /// Why the shadow does not play it, when it does not (a part of its `not tried` line).
    not_tried: Option<String>,
}

impl Flow {
    /// Whether `line` (a flow's `ok` or `not tried` line) is this flow's: its severity, its
    /// source grant and its sink's.
    fn said_by(&self, (check, _, text): &(String, String, String)) -> bool {
        let sink = if self.sink == "deliver" {
            "post it to Mattermost".to_owned()
        } else {
            format!("via grant {}", self.sink)
        };
        *check == self.severity
            && text.contains(&format!("via grant {} ", self.source))
            && text.contains(&sink)
    }
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
        // Never run or reached: the shadow stands in for an MCP server, or leaves its grants
        // out.
        let at = match case.remote.get(s) {
            Some(url) => format!("url = \"{url}\""),
            None => "command = [\"/bin/false\"]".to_owned(),
        };
        extra.push_str(&format!("[[mcp]]\nname = \"{s}\"\n{at}\n"));
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
    // Each row is matched to a line of its own: a played flow to an `ok` line saying that a
    // chain leaked it, as reported; a flow not played to a `not tried` line of its own with
    // the table's reason, or to its grant's `not tried` line (a grant the shadow leaves
    // out) with it.
    let mut used = vec![false; found.len()];
    for f in &case.flow {
        let line = found.iter().enumerate().position(|(n, l)| {
            !used[n]
                && f.said_by(l)
                && match &f.not_tried {
                    None => {
                        l.1 == "ok"
                            && l.2.starts_with("leaked by chain")
                            && l.2.contains(", as reported: ")
                    }
                    Some(why) => {
                        l.1 == "warn"
                            && l.2.starts_with("not tried: ")
                            && l.2.contains(why.as_str())
                    }
                }
        });
        if let Some(n) = line {
            used[n] = true;
            continue;
        }
        let why = f.not_tried.as_deref().unwrap_or_else(|| {
            panic!(
                "{} via {} to {}: no line says it was played: {ctx}",
                f.severity, f.source, f.sink
            )
        });
        let of_grant = |l: &(String, String, String)| {
            l.0 == "not-tried"
                && l.1 == "warn"
                && ([&f.source, &f.sink]
                    .iter()
                    .any(|g| l.2.starts_with(&format!("grant {g}: not tried: ")))
                    // A grant not played as a source only (its other flows are).
                    || l.2.starts_with(&format!("grant {} as a source: not tried: ", f.source)))
                && l.2.contains(why)
        };
        let n = found.iter().position(of_grant);
        let n = n.unwrap_or_else(|| panic!("not tried ({why}): no line says so: {ctx}"));
        used[n] = true;
    }
    // Every other line passes, but a grant the shadow leaves out (its `not tried` line, for
    // one no flow of the table goes through) and the lines of the chains and the shadow: no
    // flow line the table does not have, no other warning (a restart or compaction that
    // changed a verdict, a chain not observed).
    for (n, (check, level, text)) in found.iter().enumerate() {
        let flow = matches!(
            check.as_str(),
            "secret_out" | "private_out" | "untrusted_write"
        );
        assert!(
            used[n] || !flow || text.starts_with("no "),
            "a flow line the table does not have: {text}: {ctx}"
        );
        assert!(
            used[n] || level != "warn" || check == "not-tried",
            "a warning the table does not expect: {check}: {text}: {ctx}"
        );
    }
}
