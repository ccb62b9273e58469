//! Real-peer tier: loopd against llama.cpp's own server (tests/realpeer/serve.py, SmolLM2),
//! through inferproxy, with a session whose log already holds tool exchanges (the 135M model
//! then calls `list_dir` every time) and the poisoned exchange an older loopd logged: the
//! log is repaired and answered, a call cut by `max_tokens` is not run, and the next turn is
//! rendered and answered too. Ignored under a plain `cargo test`; `tests/gate realpeer` runs
//! it with `BOXMAKER_REALPEER_PYTHON` and `BOXMAKER_REALPEER_MODEL` set.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use proto::chat::TurnEnd;
use proto::{LogRecord, Withdrawal};
use stack::{Agent, Home};

use crate::agent::records;

fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => {
            panic!("{name} is not set: run `tests/gate realpeer` (it runs tests/realpeer/setup.sh)")
        }
    }
}

/// The stack with the real server in the fake's place, sampling greedily (its default
/// temperature and random seed made the model answer in text now and then, a run in
/// several); loopd's answers capped at `max_tokens` 24, which cuts a `list_dir` call in its
/// path.
fn real_agent(home: &Home) -> Agent {
    let serve = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../realpeer/serve.py");
    let mut cmd = Command::new(env_path("BOXMAKER_REALPEER_PYTHON"));
    cmd.arg(serve)
        .arg("--model")
        .arg(env_path("BOXMAKER_REALPEER_MODEL"))
        .args(["--n-ctx", "4096", "--slots", "1", "--greedy"])
        // serve.py runs until its stdin closes: the pipe stays open while the child lives.
        .stdin(Stdio::piped());
    let (real, addr) = home.spawn_peer(cmd, "real.log");
    home.agent_on(real, &addr, "max_tokens = 24")
}

/// Four `list_dir` exchanges; the second is the one an older loopd logged when `max_tokens`
/// cut the call: its arguments are not JSON, and llama-server refused every later request
/// with HTTP 500 "Failed to parse tool call arguments as JSON". The last two are whole, so
/// the model calls `list_dir` for the next directory too.
fn prepared_log(session: &str) -> String {
    let t = |s: u32| format!("2026-11-30T10:00:{s:02}.000Z");
    let mut lines = vec![format!(
        r#"{{"type":"session_start","time":"{}","session":"{session}","epoch":0,"slot":0,"baseline":"{}"}}"#,
        t(0),
        "0".repeat(64)
    )];
    let mut call = 0;
    for (i, dir) in ["notes", "photos", "docs", "music"].iter().enumerate() {
        let s = u32::try_from(i).unwrap_or(0) * 4 + 1;
        call += 1;
        let (arguments, result) = if *dir == "photos" {
            (
                r#"{\"path\": \"/home/owner/pho"#.to_owned(),
                "the tool failed: brokerd: refused: invalid arguments",
            )
        } else {
            (
                format!(r#"{{\"path\": \"/home/owner/{dir}\"}}"#),
                "a.md\nb.md",
            )
        };
        lines.push(format!(
            r#"{{"type":"user","time":"{}","content":"List the directory /home/owner/{dir}"}}"#,
            t(s)
        ));
        lines.push(format!(
            r#"{{"type":"assistant","time":"{}","content":null,"reasoning_content":null,"tool_calls":[{{"id":"c{call}","name":"list_dir","arguments":"{arguments}"}}]}}"#,
            t(s + 1)
        ));
        lines.push(format!(
            r#"{{"type":"tool_result","time":"{}","call":{call},"tool_call_id":"c{call}","content":{},"class":"private","untrusted":false,"truncated":false}}"#,
            t(s + 2),
            serde_json::Value::String(result.into())
        ));
        if *dir != "photos" {
            lines.push(format!(
                r#"{{"type":"assistant","time":"{}","content":"/home/owner/{dir} holds a.md and b.md.","reasoning_content":null,"tool_calls":[]}}"#,
                t(s + 3)
            ));
        }
    }
    lines.push(String::new());
    lines.join("\n")
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn against_the_real_server_a_poisoned_log_is_repaired_and_a_cut_call_recovered() {
    use std::os::unix::fs::OpenOptionsExt;
    let home = Home::new("realpeer-cut", "");
    let agent = real_agent(&home);
    let session = proto::SessionId::new("s-20261130-realpeer").expect("id");
    let dir = home.root.join(format!("home/sessions/{session}"));
    std::fs::create_dir_all(&dir).expect("session dir");
    let before = prepared_log(session.as_str());
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dir.join("0.jsonl"))
        .expect("log");
    std::io::Write::write_all(&mut f, before.as_bytes()).expect("write");
    drop(f);

    // The repaired history renders, and the model calls list_dir: 24 tokens cut its path.
    let t = agent.chat(Some(&session), "List the directory /home/owner/films");
    let log = records(&home, &session, 0);
    assert_eq!(
        t.reply.end,
        TurnEnd::Cut {
            finish: "length".into(),
            withdrawn: 1
        },
        "the log: {log:?}"
    );
    let cut: Vec<&proto::ToolCall> = log
        .iter()
        .filter_map(|r| match r {
            LogRecord::Withdrawn {
                cause: Withdrawal::Cut,
                calls,
                ..
            } => calls.first(),
            _ => None,
        })
        .collect();
    assert_eq!(cut.len(), 1, "{log:?}");
    assert!(
        cut[0].arguments.starts_with("{\"path\": \"/home/")
            && serde_json::from_str::<serde_json::Value>(&cut[0].arguments).is_err(),
        "{:?}",
        cut[0]
    );
    // The next turn is rendered and answered (what the model says does not matter).
    let t = agent.chat(Some(&session), "List the directory /home/owner/books");
    assert!(
        matches!(t.reply.end, TurnEnd::Answered | TurnEnd::Cut { .. }),
        "{:?}",
        t.reply
    );
    let log = records(&home, &session, 0);
    // The older loopd's call was withdrawn once, at the first turn; the log only grew.
    assert_eq!(
        log.iter()
            .filter(|r| matches!(
                r,
                LogRecord::Withdrawn {
                    cause: Withdrawal::Unrenderable,
                    ..
                }
            ))
            .count(),
        1
    );
    let after = std::fs::read_to_string(dir.join("0.jsonl")).expect("log");
    assert!(after.starts_with(&before));
    assert!(
        !home
            .audit_lines()
            .iter()
            .any(|l| matches!(l, proto::AuditLine::Decision(_))),
        "no cut call reached brokerd"
    );
}
