//! `bxctl status`, `bxctl grants reload` and `bxctl sessions` against the real stack: what
//! each says, its `--json` shape, and its exit code (0 done, 1 a check failed or a request
//! refused, 2 could not do it).

use std::process::Output;

use proto::{AuditEvent, AuditLine};
use serde_json::Value;
use stack::{Home, http, read_grant};

const SCRIPT: &str = r#"
[server]
n_ctx = 1180

[[rule]]
[rule.match]
user_contains = "cut short"
[rule.answer]
text = "SUMMARY: a chat."

[[rule]]
[rule.match]
tool_result_contains = "denied"
[rule.answer]
text = "That was refused."

[[rule]]
[rule.match]
user_contains = "passwd"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"/etc/passwd"}'

[default]
text = "{{last_user}} {{last_user}} {{last_user}} {{last_user}}"
"#;

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(out: &Output) -> Value {
    let t = text(out);
    assert_eq!(t.lines().count(), 1, "one line of JSON: {t}");
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{e}: {t}"))
}

fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[test]
fn status_reports_roles_model_audit_and_grants_and_reload_reports_its_outcome() {
    let home = Home::new("status", "");
    let notes = home.files("notes", &[("a.md", "a")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let mut agent = home.start_agent(SCRIPT, "");

    let out = home.bxctl(&["status"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    for line in [
        format!("brokerd     reachable, ready, version {}\n", version()),
        format!("loopd       reachable, ready, version {}\n", version()),
        format!(
            "inferproxy  reachable (from loopd), version {}\n",
            version()
        ),
        // The model the server names in /props (the fake's default).
        "model       ok: /models/fake-llama-server.gguf\n".to_owned(),
        "approvals   0 waiting\n".to_owned(),
        "grants      on disk: the same\n".to_owned(),
        "gatewayd    not configured\n".to_owned(),
    ] {
        assert!(t.contains(&line), "{line}: {t}");
    }
    // The audit head is the one `audit verify` finds.
    let verify = json(&home.bxctl(&["audit", "verify", "--json"]));
    let status = json(&home.bxctl(&["status", "--json"]));
    let broker = &status["brokerd"]["status"];
    assert_eq!(status["good"], true);
    assert_eq!(broker["audit_next_seq"], verify["next_seq"], "{status}");
    assert_eq!(broker["audit_head"], verify["head"], "{status}");
    assert_eq!(status["loopd"]["status"]["model"]["state"], "ok");
    assert_eq!(
        status["loopd"]["status"]["inferproxy"],
        serde_json::json!({"state": "reachable", "version": version()})
    );
    let shown = json(&home.bxctl(&["grants", "show", "--json"]));
    assert_eq!(broker["grants"]["loaded"], shown["snapshot"]);
    assert_eq!(shown["grants"], serde_json::json!(["notes"]));

    // A grant added on disk: the status says the two differ, a reload makes them one.
    home.write_grant("more", &read_grant("ask", &notes, ""));
    let t = text(&home.bxctl(&["status"]));
    assert!(
        t.contains("grants      on disk: DIFFERENT (snapshot "),
        "{t}"
    );
    let out = home.bxctl(&["grants", "reload"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).starts_with("grants reloaded: snapshot ")
            && text(&out).contains("(2 grants: more, notes)"),
        "{}",
        text(&out)
    );
    let t = text(&home.bxctl(&["status"]));
    assert!(t.contains("grants      on disk: the same\n"), "{t}");
    assert!(t.contains(": loaded snapshot "), "{t}");

    // A broken grant: the reload is refused (exit 1), audited, and the status says why.
    home.write_grant("broken", "tool = \"read_file\"\nmod = \"auto\"\n");
    let out = home.bxctl(&["grants", "reload", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let refused = json(&out);
    assert_eq!(refused["outcome"], "refused", "{refused}");
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.contains("broken.toml")),
        "{refused}"
    );
    assert!(home.audit_lines().iter().any(|l| matches!(
        l,
        AuditLine::Event(AuditEvent::GrantsRefused { reason, .. }) if reason.contains("broken.toml")
    )));
    let t = text(&home.bxctl(&["status"]));
    assert!(t.contains("grants      on disk: DO NOT LOAD: "), "{t}");
    assert!(t.contains(": FAILED, snapshot "), "{t}");
    assert!(text(&home.bxctl(&["grants", "reload"])).contains("grants reload REFUSED, snapshot "));

    // The model loading: a check that fails, exit 1.
    http(
        &agent.addr,
        "POST",
        "/fake/loading",
        &serde_json::json!({"loading": true}),
    );
    let out = home.bxctl(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("model       loading\n"),
        "{}",
        text(&out)
    );
    assert_eq!(json(&home.bxctl(&["status", "--json"]))["good"], false);
    http(
        &agent.addr,
        "POST",
        "/fake/loading",
        &serde_json::json!({"loading": false}),
    );

    // loopd gone: shown with what to do, exit 1; brokerd still reports.
    agent.daemons[0].kill();
    let out = home.bxctl(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    let t = text(&out);
    assert!(t.contains("brokerd     reachable"), "{t}");
    assert!(
        t.contains("loopd       NOT REACHABLE: cannot reach loopd at ")
            && t.contains("help: is the stack running?"),
        "{t}"
    );
    let status = json(&home.bxctl(&["status", "--json"]));
    assert_eq!(status["loopd"]["reachable"], false, "{status}");
    assert_eq!(status["brokerd"]["reachable"], true, "{status}");
}

#[test]
fn sessions_are_listed_by_last_activity_with_their_first_message_and_every_turn() {
    let home = Home::new("sessions", "");
    let agent = home.start_agent(SCRIPT, "compact_percent = 50\n");
    let first = agent.chat(None, "first words \u{1b}[2J here").reply.session;
    let second = agent.chat(None, "another session").reply.session;
    // Fill the first session past half its context, so that it starts a second epoch.
    let mut compacted = false;
    for i in 0..20 {
        let t = agent.chat(Some(&first), &format!("filler words to fill, number {i}"));
        if t.events
            .iter()
            .any(|e| matches!(e, proto::chat::ChatEvent::Compacted { .. }))
        {
            compacted = true;
            break;
        }
    }
    assert!(compacted, "no compaction");
    agent.chat(Some(&first), "one more after the cut");

    let listing = json(&home.bxctl(&["sessions", "--json"]));
    let sessions = listing["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 2);
    // The first session was active last: it comes first.
    assert_eq!(sessions[0]["session"], first.as_str());
    assert_eq!(sessions[1]["session"], second.as_str());
    assert!(sessions[0]["epoch"].as_u64() >= Some(1), "{listing}");
    assert_eq!(sessions[0]["preview"], "first words \u{1b}[2J here");
    let all = sessions[0]["all_turns"].as_u64().expect("all_turns");
    let current = sessions[0]["turns"].as_u64().expect("turns");
    assert!(all > current && current >= 1, "{listing}");
    let fills = records_of(&home, &first);
    assert_eq!(all, fills, "every owner message of every epoch");

    let t = text(&home.bxctl(&["sessions"]));
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with(first.as_str()), "{t}");
    assert!(lines[0].contains(&format!("{all} turns")), "{t}");
    // The preview is the owner's text, shown inert all the same.
    assert!(lines[0].ends_with("first words \\u{001b}[2J here"), "{t}");
    assert!(lines[1].starts_with(second.as_str()) && lines[1].ends_with("another session"));
}

/// Owner messages over every epoch file of `session`.
fn records_of(home: &Home, session: &proto::SessionId) -> u64 {
    let dir = home.root.join(format!("home/sessions/{session}"));
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("session dir") {
        let text = std::fs::read_to_string(e.expect("entry").path()).expect("epoch");
        n += text
            .lines()
            .filter(|l| l.starts_with("{\"type\":\"user\""))
            .count() as u64;
    }
    n
}

#[test]
fn a_denied_call_is_shown_as_denied_and_session_listings_have_json() {
    let home = Home::new("denied-shown", "");
    let agent = home.start_agent(SCRIPT, "");
    let session = agent.chat(None, "read /etc/passwd").reply.session;
    let t = text(&home.bxctl(&["sessions", session.as_str()]));
    assert!(t.contains("   call 1 -> denied: no_grant\n"), "{t}");
    assert!(!t.contains("call 1 -> 4"), "{t}");
    let records = json(&home.bxctl(&["sessions", session.as_str(), "--json"]));
    assert_eq!(records["session"], session.as_str());
    let denied = records["records"]
        .as_array()
        .expect("records")
        .iter()
        .find(|r| r["type"] == "tool_result")
        .expect("a tool result")
        .clone();
    assert_eq!(
        denied["outcome"],
        serde_json::json!({"kind": "denied", "reason": "no_grant"})
    );
    // brokerd's view of the same session, as JSON.
    let info = json(&home.bxctl(&["session", session.as_str(), "--json"]));
    assert_eq!(info["session"], session.as_str());
    assert_eq!(info["untrusted"], false);
    // A session loopd does not have: refused, exit 1.
    let out = home.bxctl(&["sessions", "s-nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("bxctl: loopd refused: bad_message: no session s-nope"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_listing_follows_activity_not_session_ids() {
    let home = Home::new("sessions-order", "");
    let agent = home.start_agent(SCRIPT, "");
    let mut ids: Vec<proto::SessionId> = (0..3)
        .map(|i| agent.chat(None, &format!("session {i}")).reply.session)
        .collect();
    ids.sort();
    // Active again in id order: the last id is the most recent, so the listing runs
    // against the ids' order.
    for id in &ids {
        agent.chat(Some(id), "again");
    }
    let listing = json(&home.bxctl(&["sessions", "--json"]));
    let listed: Vec<&str> = listing["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter_map(|s| s["session"].as_str())
        .collect();
    let want: Vec<&str> = ids.iter().rev().map(proto::SessionId::as_str).collect();
    assert_eq!(listed, want);
}

#[test]
fn status_follows_brokerds_link_to_gatewayd_down_and_up_again() {
    let (home, mut gw, _agent) = crate::gateway_approvals::setup("status-gw-link");
    // Linked, and gatewayd's version as it stated it on the link.
    let linked = || {
        stack::wait_until(
            "gatewayd linked, with its version",
            std::time::Duration::from_secs(10),
            || {
                text(&home.bxctl(&["status"])).lines().any(|l| {
                    l.starts_with("gatewayd    linked since ")
                        && l.ends_with(&format!(", version {}", version()))
                })
            },
        );
    };
    linked();
    gw.restart(&home, |_| {
        stack::wait_until(
            "gatewayd not linked",
            std::time::Duration::from_secs(10),
            || text(&home.bxctl(&["status"])).contains("\ngatewayd    NOT LINKED since "),
        );
    });
    linked();
    let status = json(&home.bxctl(&["status", "--json"]));
    assert_eq!(
        status["brokerd"]["status"]["gateway"]["version"],
        version(),
        "{status}"
    );
}
