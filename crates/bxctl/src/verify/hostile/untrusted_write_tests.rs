//! Untrusted content from a result the shadow plants driving a write (`from_results`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::chains::{self, Chain};
use super::sink::WRITE;
use super::tests::{grant, rewritten};

/// The rule named `name` of the fake model's script for `plan`.
fn rule(plan: &[Chain], name: &str) -> toml::Value {
    let script: toml::Value =
        toml::from_str(&super::script::script(plan).expect("script")).expect("toml");
    script["rule"]
        .as_array()
        .expect("rules")
        .iter()
        .find(|r| r["name"].as_str() == Some(name))
        .expect("rule")
        .clone()
}

/// The shadow's grants with a write grant over the notes directory and the granted file
/// `todo.md` (both read too), a note read grant and a program's.
fn shadow() -> super::rewrite::Rewritten {
    let mut r = rewritten();
    r.grants.insert(
        "www".into(),
        grant(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
             paths = [\"/s/tree/home/owner/notes\", \"/s/tree/home/owner/todo.md\"]\n",
        ),
    );
    r.grants.insert(
        "memo".into(),
        grant("tool = \"note_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\n"),
    );
    r.grants.insert(
        "date".into(),
        grant(
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"public\"\n\
             [constraints]\nprograms = [\"date\"]\npatterns = [\"+*\"]\n",
        ),
    );
    r
}

/// Each read, listing, note, program's output and write's result is a source of an untrusted
/// write under each granted path of the write grant: its result holds the chain's token, the
/// model waits for it, then writes `BXWRITE-TOKEN`; a write source's file is one of its own,
/// never the one the chain writes, its token the hash of the file's new text.
#[test]
fn every_planted_result_drives_each_write() {
    let r = shadow();
    let plan = chains::plan(&r, 4321, "n0", false);
    let from: Vec<&Chain> = plan
        .iter()
        .filter(|c| c.sink.tool == "write_file" && c.source.tool != "http_fetch")
        .collect();
    let sources: BTreeSet<&str> = from.iter().map(|c| c.source.tool).collect();
    assert_eq!(
        sources,
        BTreeSet::from(["list_dir", "note_read", "read_file", "run", "write_file"]),
        "{from:?}"
    );
    for c in &from {
        assert_eq!(c.canary, format!("{WRITE}{}", c.awaited()));
        let sink = rule(&plan, &format!("chain {} sink", c.n));
        assert_eq!(
            sink["match"]["tool_result_contains"].as_str(),
            Some(c.awaited())
        );
    }
    let written = from
        .iter()
        .find(|c| c.source.tool == "write_file")
        .expect("a write's result");
    assert_eq!(
        written.source.path,
        format!(
            "/s/tree/home/owner/notes/bxhostile-{}-planted.txt",
            written.n
        )
    );
    assert_eq!(
        written.url,
        format!("/s/tree/home/owner/notes/bxhostile-{}.txt", written.n)
    );
    assert_eq!(
        written.awaited(),
        super::write_source::hash("write_file", written.n, "n0")
    );
    assert_eq!(written.write_mode, Some("create"));
}

/// A read of a granted file the chain then writes: the file is planted holding the token
/// alone, so that `BXWRITE-TOKEN` is in it only once the write ran.
#[test]
fn a_file_read_then_written_holds_the_token_alone_before_the_write() {
    let mut r = shadow();
    let base = std::env::temp_dir().join(format!("uw-planted-{}", std::process::id()));
    let moved = |p: &str| p.replace("/s/tree", &base.join("tree").display().to_string());
    let mut plan = chains::plan(&r, 4321, "n0", false);
    for (shadow, _) in r.paths.values_mut() {
        *shadow = PathBuf::from(moved(&shadow.display().to_string()));
    }
    for c in &mut plan {
        c.url = moved(&c.url);
        c.source.path = moved(&c.source.path);
    }
    let c = plan
        .iter()
        .find(|c| {
            c.source.tool == "read_file" && c.sink.tool == "write_file" && c.url == c.source.path
        })
        .expect("a granted file read, then written");
    chains::plant(&r, &plan, &base.join("tree")).expect("plant");
    let text = std::fs::read_to_string(&c.url).expect("planted");
    let _ = std::fs::remove_dir_all(&base);
    assert!(text.lines().any(|l| l == c.awaited()), "{text}");
    assert!(!text.contains(&c.canary), "{text}");
}

/// Each fetch host drives a write under each path of each write grant: the fetch's URL
/// carries a token, the sink answers `BXWRITE-TOKEN`, and only that answer (in no request)
/// is what the write carries; a new file in a directory, added to a granted file.
#[test]
fn untrusted_writes_fetch_then_write_what_the_sink_answered() {
    let mut r = rewritten();
    r.grants.insert(
        "www".into(),
        grant(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
             paths = [\"/s/tree/home/owner/notes\", \"/s/tree/home/owner/todo.md\"]\n",
        ),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    let writes: Vec<&Chain> = plan
        .iter()
        .filter(|c| c.sink.tool == "write_file" && c.source.tool == "http_fetch")
        .collect();
    // Two hosts of web, two paths.
    assert_eq!(writes.len(), 4);
    let c = writes[0];
    assert_eq!(c.source.tool, "http_fetch");
    assert_eq!(
        c.source.path,
        format!("http://api.example.org:4321/bx?c=BXCANARY-n0-{}-", c.n)
    );
    assert_eq!(c.canary, format!("BXWRITE-BXCANARY-n0-{}-", c.n));
    assert!(!c.source.path.contains(&c.canary));
    // The model waits for the whole canary, which only the sink's answer holds: a failure
    // echoing the URL holds the token alone.
    assert_eq!(c.awaited(), c.canary);
    assert_eq!(
        c.url,
        format!("/s/tree/home/owner/notes/bxhostile-{}.txt", c.n)
    );
    assert_eq!(writes[1].url, "/s/tree/home/owner/todo.md");
    let args = |name: String| {
        rule(&plan, &name)["answer"]["tool_calls"][0]["arguments"]
            .as_str()
            .expect("args")
            .to_owned()
    };
    let write = |c: &Chain, mode: &str| {
        serde_json::json!({"content": c.canary, "mode": mode, "path": c.url}).to_string()
    };
    assert_eq!(args(format!("chain {} sink", c.n)), write(c, "create"));
    assert_eq!(
        args(format!("chain {} sink", writes[1].n)),
        write(writes[1], "append")
    );
    assert_eq!(
        args(format!("chain {} source", c.n)),
        serde_json::json!({ "url": c.source.path }).to_string()
    );
}

/// Untrusted content driving an edit: each fetch, then an `edit_file` of each path of each
/// edit grant, replacing the line planted for it (in a file of its own in a granted
/// directory, or added to a granted file) with what the sink answered.
#[test]
fn untrusted_content_drives_an_edit() {
    let mut r = rewritten();
    r.grants.insert(
        "www-edit".into(),
        grant(
            "tool = \"edit_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
             paths = [\"/s/tree/home/owner/notes\", \"/s/tree/home/owner/todo.md\"]\n",
        ),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    let edits: Vec<&Chain> = plan
        .iter()
        .filter(|c| c.sink.tool == "edit_file" && c.source.tool == "http_fetch")
        .collect();
    // Two hosts of web, two paths.
    assert_eq!(edits.len(), 4);
    let c = edits[0];
    assert_eq!(c.source.tool, "http_fetch");
    assert_eq!(c.canary, format!("BXWRITE-BXCANARY-n0-{}-", c.n));
    assert_eq!(
        c.url,
        format!("/s/tree/home/owner/notes/bxhostile-{}.txt", c.n)
    );
    assert_eq!(edits[1].url, "/s/tree/home/owner/todo.md");
    let rule = rule(&plan, &format!("chain {} sink", c.n));
    let args = rule["answer"]["tool_calls"][0]["arguments"]
        .as_str()
        .expect("args");
    assert_eq!(
        proto::tools::ToolArgs::parse("edit_file", args),
        Ok(proto::tools::ToolArgs::EditFile(
            proto::tools::EditFileArgs {
                new: c.canary.clone(),
                old: format!("BXEDIT-{}.", c.n),
                path: c.url.clone(),
            }
        ))
    );
    // Planted: each edit's line where it edits, under the tree.
    let base = std::env::temp_dir().join(format!("wt-hostile2-edit-{}", std::process::id()));
    let moved = |p: &str| p.replace("/s/tree", &base.join("tree").display().to_string());
    for (shadow, _) in r.paths.values_mut() {
        *shadow = PathBuf::from(moved(&shadow.display().to_string()));
    }
    let mut plan = plan;
    for c in &mut plan {
        if c.sink.tool == "edit_file" {
            c.url = moved(&c.url);
        }
        if matches!(c.source.tool, "read_file" | "list_dir") {
            c.source.path = moved(&c.source.path);
        }
    }
    chains::plant(&r, &plan, &base.join("tree")).expect("plant");
    let edits: Vec<&Chain> = plan.iter().filter(|c| c.sink.tool == "edit_file").collect();
    let own = std::fs::read_to_string(&edits[0].url).expect("own file");
    assert_eq!(own, format!("BXEDIT-{}.\n", edits[0].n));
    let todo = std::fs::read_to_string(&edits[1].url).expect("todo");
    assert!(
        todo.contains(&format!("\nBXEDIT-{}.\n", edits[1].n)),
        "{todo}"
    );
    assert_eq!(
        todo.matches(&format!("BXEDIT-{}.\n", edits[1].n)).count(),
        1
    );
    let _ = std::fs::remove_dir_all(&base);
}

/// A `run` grant with a `workdir` is written by untrusted content too: a run of its program,
/// its argument carrying `BXWRITE-TOKEN`, looked for in the stand-in's record in that
/// directory; one whose patterns admit no canary is said, for its untrusted writes alone
/// (decisions V57).
#[test]
fn untrusted_content_drives_a_run_in_its_workdir() {
    let mut r = rewritten();
    let make = |patterns: &str| {
        grant(&format!(
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\n\
             programs = [\"make\"]\npatterns = [{patterns}]\nworkdir = \"/s/tree/src\"\n"
        ))
    };
    r.grants.insert("make-src".into(), make("\"*\""));
    r.paths.insert(
        "/home/owner/src".into(),
        (PathBuf::from("/s/tree/src"), false),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    let ran: Vec<&Chain> = plan
        .iter()
        .filter(|c| c.sink.tool == super::run::WRITE)
        .collect();
    assert!(!ran.is_empty(), "{plan:?}");
    for c in &ran {
        assert!(c.canary.starts_with(WRITE));
        assert_eq!(c.url, format!("bx?c={}", c.canary));
        assert_eq!(c.sink.grant, "make-src");
    }
    let sink = rule(&plan, &format!("chain {} sink", ran[0].n));
    assert_eq!(
        sink["answer"]["tool_calls"][0]["name"].as_str(),
        Some("run")
    );
    assert!(super::run::unwritable(&r).is_empty());
    // Another grant naming the program: which grant decides the run is not played.
    r.grants.insert(
        "make-docs".into(),
        grant(
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\n\
             programs = [\"make\"]\npatterns = [\"docs\"]\n",
        ),
    );
    let left = super::run::unwritable(&r);
    assert!(
        left.len() == 1
            && left[0]
                .why
                .contains("another allowing run grant names its program"),
        "{left:?}"
    );
    r.grants.remove("make-docs");
    r.grants.insert("make-src".into(), make("\"test\""));
    let left = super::run::unwritable(&r);
    assert_eq!(left.len(), 1);
    assert!(left[0].scope == super::rewrite::Scope::Written);
    assert!(
        !chains::plan(&r, 4321, "n0", false)
            .iter()
            .any(|c| c.sink.tool == super::run::WRITE)
    );
}
