//! `session_search` and the indexer of the session logs: a log is indexed at its session's
//! label as brokerd exported it, a search unit has only the partitions its grant reaches
//! bound and is labelled by the highest, and a session whose label rises takes its records
//! along. The logs are loopd's, written by the real loopd in the first test.

use proto::chat::TurnEnd;
use proto::notes::{HitKind, NotesFound};
use proto::{DataClass, DenyReason, ToolResponse};
use stack::{Home, read_grant};

use crate::agent::responses;
use crate::notes::{assert_fetch_denied, call, content, labels};

const SCRIPT: &str = r#"
[server]
n_ctx = 16384
total_slots = 2

[[rule]]
[rule.match]
tool_result_contains = "epoch 0"
[rule.answer]
text = "An earlier conversation had it."

[[rule]]
[rule.match]
tool_result_contains = "hunter2"
[rule.answer]
text = "The key is hunter2."

[[rule]]
[rule.match]
tool_result_contains = "denied"
[rule.answer]
text = "That was refused."

[[rule]]
[rule.match]
user_contains = "key"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"SECRETS/key.txt"}'

[[rule]]
[rule.match]
user_contains = "past"
[[rule.answer.tool_calls]]
name = "session_search"
arguments = '{"query":"hunter2"}'

[[rule]]
[rule.match]
user_contains = "page"
[[rule.answer.tool_calls]]
name = "http_fetch"
arguments = '{"url":"https://example.org/"}'

[default]
text = "Hello."
"#;

/// A secret file, a public one, `session_search` with `constraints` (TOML lines), and an
/// `http_fetch` only for sessions at or below private.
fn search_home(name: &str, constraints: &str) -> (Home, std::path::PathBuf, std::path::PathBuf) {
    let home = Home::new(name, "");
    let secrets = home.files("secrets", &[("key.txt", "hunter2")]);
    let public = home.files("public", &[("page.txt", "a public page")]);
    home.write_grant(
        "secrets",
        &read_grant(
            "auto",
            &secrets,
            "result_class = \"secret\"\nuntrusted = false",
        ),
    );
    home.write_grant(
        "public",
        &read_grant(
            "auto",
            &public,
            "result_class = \"public\"\nuntrusted = false",
        ),
    );
    home.write_grant(
        "session-search",
        &format!(
            "tool = \"session_search\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"public\"\nuntrusted = false\n[constraints]\n{constraints}\n"
        ),
    );
    home.write_grant(
        "note-search",
        "tool = \"note_search\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
         result_class = \"public\"\nuntrusted = false\n",
    );
    home.write_grant(
        "web",
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         result_class = \"public\"\n[constraints]\nhosts = [\"example.org\"]\n",
    );
    (home, secrets, public)
}

/// Appends a user record with `text` to session `id`'s epoch 0, as loopd logs one.
fn log(home: &Home, id: &str, text: &str) {
    use std::io::Write;
    let dir = home.root.join("home/sessions").join(id);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let line =
        serde_json::json!({"type": "user", "time": "2026-12-01T10:00:00.000Z", "content": text});
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("0.jsonl"))
        .expect("log");
    writeln!(f, "{line}").expect("append");
}

fn read(home: &Home, session: &str, n: u64, dir: &std::path::Path, file: &str) -> ToolResponse {
    let path = serde_json::json!({"path": format!("{}/{file}", dir.display())});
    call(home, session, n, "read_file", &path.to_string())
}

fn session_search(home: &Home, session: &str, n: u64, query: &str) -> ToolResponse {
    home.index();
    let args = serde_json::json!({ "query": query });
    call(home, session, n, "session_search", &args.to_string())
}

/// The owner's search, as JSON.
pub fn owner_search(home: &Home, query: &str) -> NotesFound {
    let out = home.bxctl(&["search", "--json", query]);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn a_session_that_read_a_secret_is_found_at_secret_and_makes_its_searcher_secret() {
    let (home, secrets, _) = search_home("sessions-secret", "");
    let script = SCRIPT.replace("SECRETS", &secrets.display().to_string());
    let agent = home.start_agent(&script, "");
    let t1 = agent.chat(None, "What is the key?");
    assert_eq!(t1.reply.text, "The key is hunter2.");
    let first = t1.reply.session.clone();
    // loopd's trigger for the indexer's path unit, which no listing takes for a session.
    assert!(home.root.join("home/sessions/.changed").is_file());
    let listing = home.bxctl(&["sessions", "--json"]);
    let listing: serde_json::Value = serde_json::from_slice(&listing.stdout).expect("json");
    assert_eq!(
        listing["sessions"].as_array().map(Vec::len),
        Some(1),
        "{listing}"
    );
    home.index();
    let found = owner_search(&home, "hunter2");
    assert!(!found.hits.is_empty(), "{found:?}");
    for h in &found.hits {
        assert_eq!(h.kind, HitKind::Session);
        assert_eq!(
            (h.session.as_ref(), h.epoch, h.name.as_ref()),
            (Some(&first), Some(0), None)
        );
        assert_eq!((h.class, h.untrusted), (DataClass::Secret, false), "{h:?}");
    }
    let out = home.bxctl(&["search", "hunter2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("session {first} epoch 0  secret\n  ")),
        "{text}"
    );
    // A new session's search reaches it: the result is secret, whatever it found.
    let t2 = agent.chat(None, "Did we talk about it in the past?");
    assert_eq!(t2.reply.text, "An earlier conversation had it.", "{t2:?}");
    let second = t2.reply.session.clone();
    assert_ne!(second, first);
    match &responses(&t2.events)[..] {
        [ToolResponse::Result { content, class, .. }] => {
            assert!(content.contains(&format!("{first} epoch 0: ")), "{content}");
            assert!(content.contains("[hunter2]"), "{content}");
            assert_eq!(*class, DataClass::Secret);
        }
        other => panic!("{other:?}"),
    }
    let t3 = agent.chat(Some(&second), "Now fetch the page");
    assert_eq!(t3.reply.end, TurnEnd::Answered);
    assert!(
        matches!(
            responses(&t3.events)[..],
            [ToolResponse::Denied {
                reason: DenyReason::TaintTooHigh,
                ..
            }]
        ),
        "{:?}",
        t3.events
    );
    home.assert_audit_good();
}

#[test]
fn a_session_search_limited_to_private_binds_no_secret_session_but_is_labelled_as_loopd_was_sent() {
    let (home, secrets, public) = search_home("sessions-private", "max_class = \"private\"");
    let _d = home.start();
    read(&home, "s-1", 1, &secrets, "key.txt");
    log(&home, "s-1", "the launch code is hunter2");
    // s-2 read only a public page: brokerd exports it at private.
    read(&home, "s-2", 1, &public, "page.txt");
    log(&home, "s-2", "a launch pad");
    let r = session_search(&home, "s-3", 1, "launch");
    assert_eq!(content(&r), "s-2 epoch 0: a [launch] pad\n");
    // The logs are loopd's word (it could have copied s-1's secret into s-2's log): what a
    // search of them finds is labelled as high as anything loopd was ever sent, secret here.
    assert_eq!(labels(&r), (DataClass::Secret, false));
    let r = session_search(&home, "s-3", 2, "hunter2");
    assert_eq!(content(&r), "");
    assert_fetch_denied(&home, "s-3", 3);
}

#[test]
fn a_session_whose_label_rises_moves_its_records() {
    let (home, secrets, public) = search_home("sessions-rise", "");
    let _d = home.start();
    read(&home, "s-1", 1, &public, "page.txt");
    log(&home, "s-1", "the launch is at noon");
    // Without an exported label, a log is secret and untrusted.
    log(&home, "s-9", "a launch nobody labelled");
    home.index();
    let at = |found: &NotesFound, id: &str| -> Vec<(DataClass, bool)> {
        found
            .hits
            .iter()
            .filter(|h| h.session.as_ref().map(proto::SessionId::as_str) == Some(id))
            .map(|h| (h.class, h.untrusted))
            .collect()
    };
    let found = owner_search(&home, "launch");
    assert_eq!(at(&found, "s-1"), [(DataClass::Private, false)]);
    assert_eq!(at(&found, "s-9"), [(DataClass::Secret, true)]);
    read(&home, "s-1", 2, &secrets, "key.txt");
    home.index();
    let found = owner_search(&home, "launch");
    assert_eq!(
        at(&found, "s-1"),
        [(DataClass::Secret, false)],
        "moved, not copied"
    );
    // A search from another session finds it where it is now.
    let r = session_search(&home, "s-3", 1, "noon");
    assert_eq!(content(&r), "s-1 epoch 0: the launch is at [noon]\n");
    assert_eq!(
        labels(&r),
        (DataClass::Secret, true),
        "s-9's partition is bound too"
    );
    assert_fetch_denied(&home, "s-3", 2);
    // note_search has the same partitions bound, and returns only notes: none here. It is
    // labelled by what it could read all the same.
    let r = call(&home, "s-4", 1, "note_search", r#"{"query":"launch"}"#);
    assert_eq!(content(&r), "");
    assert_eq!(labels(&r), (DataClass::Secret, true));
}
