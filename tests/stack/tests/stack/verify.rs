//! `bxctl verify` against the real stack (fake llama-server, inferproxy, brokerd, loopd, as
//! `bxctl dev` runs them): a healthy deployment passes every check it can make here, and a
//! deployment that fails one check is named by that check, FAIL, exit 1: a template without
//! tool support, a replay that loses its cache, `/slots` answered past inferproxy, grants
//! changed on disk and not reloaded, a changed audit line; a side this user may not use is
//! said, exit 2. (An approval kept past its expiry needs a brokerd that fails to withdraw
//! it; `bxctl`'s unit test holds the judgement. The units are the container tier's.)

use std::os::unix::net::UnixListener;
use std::process::Output;

use serde_json::Value;
use stack::{Home, read_grant};

/// Answers as a model would: a short sentence, the same for every message.
const SCRIPT: &str = r#"
[server]
n_ctx = 8192
total_slots = 2

[default]
text = "Here is one short sentence for the prompt cache measure."
"#;

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json(out: &Output) -> Value {
    let t = text(out);
    assert_eq!(t.lines().count(), 1, "one line of JSON: {t}");
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{e}: {t}"))
}

/// The check named `name` of a `--json` answer: its level and what it said.
fn check(v: &Value, name: &str) -> (String, String) {
    let c = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {v}"));
    (
        c["level"].as_str().expect("level").to_owned(),
        c["said"].as_str().expect("said").to_owned(),
    )
}

/// A home with one `auto` grant on a notes directory.
fn home(name: &str) -> Home {
    let home = Home::new(name, "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant("notes-read", &read_grant("auto", &notes, ""));
    home
}

#[test]
fn a_healthy_stack_passes_each_check_it_can_make() {
    let home = home("verify-good");
    let _agent = home.start_agent(SCRIPT, "");
    let out = home.bxctl(&["verify", "--json"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["good"], true, "{v}");
    for (name, level) in [
        ("reach", "ok"),
        ("props", "ok"),
        ("tools", "ok"),
        // llama.cpp's server does not say either in /props (the real-peer tier shows it).
        ("cache-reuse", "warn"),
        ("context-shift", "warn"),
        ("slots", "ok"),
        ("replay", "ok"),
        ("units", "ok"),
        ("grants", "ok"),
        ("approvals", "ok"),
        ("audit", "ok"),
    ] {
        assert_eq!(check(&v, name).0, level, "{name}: {v}");
    }
    assert!(
        check(&v, "replay")
            .1
            .contains("2 request(s) after the first measured, the most wasted 0 token(s)"),
        "{v}"
    );
    assert!(
        check(&v, "units")
            .1
            .starts_with("this configuration runs the roles and tools as plain processes"),
        "{v}"
    );
    // The same, for a person: one line per check, then the count.
    let out = home.bxctl(&["verify", "--no-replay"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains("\nok    model  slots: inferproxy refuses GET /slots, GET /slots/0, POST /slots/0?action=save (asked directly: 403, its own refusal)\n"),
        "{t}"
    );
    assert!(t.contains("\nwarn  model  cache-reuse: "), "{t}");
    assert!(
        t.contains("\n            help: start llama-server without --cache-reuse"),
        "{t}"
    );
    assert!(t.ends_with("verify: 11 ok, 2 warn, 0 FAIL\n"), "{t}");
}

#[test]
fn a_template_without_tool_support_fails_the_tools_check() {
    let home = home("verify-tools");
    let script = SCRIPT.replace("total_slots = 2", "total_slots = 2\ntools = false");
    let _agent = home.start_agent(&script, "");
    let out = home.bxctl(&["verify", "--json", "--only", "model", "--no-replay"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    let (level, said) = check(&v, "tools");
    assert_eq!(level, "fail", "{v}");
    assert!(
        said.contains("does not render tools (supports_tools false"),
        "{said}"
    );
}

#[test]
fn a_replay_that_loses_the_cache_fails_and_names_the_request() {
    let home = home("verify-replay");
    // The model "samples" its answer's second token split in two, as a tokenizer would not:
    // the replayed answer misses the cache from there (docs/fake-llama-server.md).
    let script = SCRIPT.replace(
        "text = \"Here is one short sentence for the prompt cache measure.\"",
        "text = \"Here is one short sentence for the prompt cache measure.\"\nsplit_token = 2",
    );
    let _agent = home.start_agent(&script, "");
    let out = home.bxctl(&["verify", "--json", "--only", "model"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    let (level, said) = check(&v, "replay");
    assert_eq!(level, "fail", "{v}");
    // Each answer is replayed: the second request and the third lose it.
    assert!(
        said.starts_with("request 2 of the replay (session "),
        "{said}"
    );
    assert!(
        said.contains("the bound is 8); 2 requests of the replay went over it"),
        "{said}"
    );
}

/// A stand-in for a changed inferproxy: every request on its socket goes to the model as it
/// came.
fn relay(sock: &std::path::Path, upstream: String) {
    let listener = UnixListener::bind(sock).expect("relay socket");
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = std::net::TcpStream::connect(&upstream) else {
                continue;
            };
            let (mut c2, mut s2) = (
                client.try_clone().expect("clone"),
                server.try_clone().expect("clone"),
            );
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c2, &mut s2);
            });
            let (mut client, mut server) = (client, server);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut server, &mut client);
            });
        }
    });
}

#[test]
fn slots_answered_past_inferproxy_fail_the_slots_check() {
    let home = home("verify-slots");
    let agent = home.start_agent(SCRIPT, "");
    // bxctl's configuration names another infer.sock, where `/slots` reaches the model.
    let dir = home.root.join("run/other-infer");
    std::fs::create_dir_all(&dir).expect("dir");
    relay(&dir.join("infer.sock"), agent.addr.clone());
    let config = std::fs::read_to_string(home.config())
        .expect("config")
        .replace(
            &format!("loop_infer = \"{}/run/loop-infer\"", home.root.display()),
            &format!("loop_infer = \"{}\"", dir.display()),
        );
    let other = home.root.join("other.toml");
    std::fs::write(&other, config).expect("config");
    let out = std::process::Command::new(stack::bin("bxctl"))
        .arg("--config")
        .arg(&other)
        .args(["verify", "--json", "--only", "model", "--no-replay"])
        .output()
        .expect("bxctl");
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    let (level, said) = check(&v, "slots");
    assert_eq!(level, "fail", "{v}");
    assert!(
        said.starts_with("inferproxy did not refuse GET /slots -> 200"),
        "{said}"
    );
}

#[test]
fn grants_changed_on_disk_fail_until_they_are_reloaded() {
    let home = home("verify-grants");
    let _agent = home.start_agent(SCRIPT, "");
    let notes = home.root.join("notes");
    home.write_grant(
        "notes-list",
        &read_grant("ask", &notes, "").replace("read_file", "list_dir"),
    );
    let out = home.bxctl(&["verify", "--json", "--only", "state"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    let (level, said) = check(&v, "grants");
    assert_eq!(level, "fail", "{v}");
    assert!(
        said.contains("are not the ones brokerd decides by"),
        "{said}"
    );
    assert!(text(&home.bxctl(&["grants", "reload"])).starts_with("grants reloaded"));
    let v = json(&home.bxctl(&["verify", "--json", "--only", "state"]));
    assert_eq!(check(&v, "grants").0, "ok", "{v}");
    // A grant that does not load: brokerd keeps its snapshot, and the check says why.
    home.write_grant("broken", "tool = \"read_file\"\nmod = \"auto\"\n");
    let v = json(&home.bxctl(&["verify", "--json", "--only", "state"]));
    let (level, said) = check(&v, "grants");
    assert_eq!(level, "fail", "{v}");
    assert!(
        said.contains("do not load") && said.contains("broken.toml"),
        "{said}"
    );
}

#[test]
fn a_changed_audit_line_fails_the_audit_check() {
    let home = home("verify-audit");
    let _agent = home.start_agent(SCRIPT, "");
    // Lines for the chain to hold: a reload each.
    for _ in 0..2 {
        assert!(text(&home.bxctl(&["grants", "reload"])).starts_with("grants reloaded"));
    }
    let v = json(&home.bxctl(&["verify", "--json", "--only", "state"]));
    assert_eq!(check(&v, "audit").0, "ok", "{v}");
    let day = std::fs::read_dir(home.audit_dir())
        .expect("audit dir")
        .map(|e| e.expect("entry").path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a day file");
    let bytes = std::fs::read_to_string(&day).expect("day file");
    // The first line names the grant; its successor's link then breaks.
    std::fs::write(&day, bytes.replacen("notes-read", "notes-reaX", 1)).expect("write");
    let out = home.bxctl(&["verify", "--json", "--only", "state"]);
    let v = json(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    let (level, said) = check(&v, "audit");
    assert_eq!(level, "fail", "{v}");
    assert!(said.starts_with("audit chain BROKEN ("), "{said}");
}

#[test]
fn a_side_this_user_may_not_use_is_said_and_exits_2() {
    let home = Home::new("verify-closed", "");
    // brokerd's admin side admits another uid than this test's.
    let config = std::fs::read_to_string(home.config()).expect("config");
    let uid = nix::unistd::getuid().as_raw();
    std::fs::write(
        home.config(),
        config.replace(
            &format!("admin = {{ uid = {uid} }}"),
            &format!("admin = {{ uid = {} }}", uid + 4242),
        ),
    )
    .expect("config");
    let _agent = home.start_agent(SCRIPT, "");
    let out = home.bxctl(&["verify", "--only", "state"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(
        t.contains("warn  state  grants: not checked: brokerd refused the connection (refused)"),
        "{t}"
    );
    assert!(
        t.contains("(some checks could not be made by this user"),
        "{t}"
    );
    // Nothing runs at all: each check that needs a role says it does not answer, exit 1.
    drop(_agent);
    let out = home.bxctl(&["verify", "--only", "model,state", "--no-replay"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("FAIL  model  reach: cannot reach loopd at "),
        "{t}"
    );
    assert!(t.contains("help: is the stack running?"), "{t}");
}
