//! The owner's first hour and every day after (issue 28 points 2 and 5), through a real
//! pseudo-terminal as the owner drives `bxctl dev`: the demo says it is a demo and answers
//! what it does not know with what it can show, by whole words; its note is the one `bxctl
//! notes` shows; `--continue` and `--session` show the last turns; `/help`, `/status` and
//! `/session`; Ctrl-D leaves as `/quit` does; the input history is there in the next run.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use expectrl::{Expect, Regex};

use crate::dev::{dev, dev_command, ends, on_pty, quit, state_dir};

const PROMPT: &str = "you> ";

/// bxctl in another terminal, with the export line `bxctl dev` printed.
fn bxctl(state: &Path, args: &[&str]) -> Output {
    Command::new(stack::bin("bxctl"))
        .args(args)
        .env("BOXMAKER_CONFIG", state.join("config.toml"))
        .output()
        .expect("bxctl")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_demo_says_it_is_one_and_matches_words_not_substrings() {
    let state = state_dir("demo");
    let mut s = dev(&state, &[]);
    // The banner said so before the prompt (dev() waited for it).
    let listed = bxctl(&state, &["status"]);
    assert!(
        stdout(&listed).contains("model       ok: demo (scripted; see docs/model.md)\n"),
        "{listed:?}"
    );
    // "playlist" holds "list": no listing, no approval card; the demo says what it can show.
    s.send_line("recommend a playlist for tea time")
        .expect("send");
    let said = s
        .expect("For a real model, see docs/model.md.")
        .expect("the demo's own answer");
    let before = String::from_utf8_lossy(said.before()).into_owned();
    assert!(
        before.contains("| I am boxmaker's demo model: a script, not a language model")
            && before.contains("\"List my notes\" (asks for your approval first)")
            && !before.contains("[tool "),
        "{before}"
    );
    s.expect(PROMPT).expect("prompt");
    // The demo's note is the one `bxctl notes` lists, labelled as the owner's.
    s.send_line("What is on my todo list?").expect("send");
    s.expect("[tool note_read (call 1): {\"name\":\"todo\"}]")
        .expect("the note tool");
    s.expect("[-> 30 bytes, private]")
        .expect("the owner's label");
    s.expect("| Your todo list has two items: buy milk, and ship boxmaker M1.")
        .expect("the answer");
    let notes = bxctl(&state, &["notes", "list"]);
    assert!(stdout(&notes).starts_with("todo.md  private"), "{notes:?}");
    // Every note tool has a sample grant.
    let grants = stdout(&bxctl(&state, &["grants", "show"]));
    for id in [
        "notes-list",
        "notes-read",
        "notes-search",
        "notes-write",
        "web-ask",
    ] {
        assert!(grants.contains(id), "{id}: {grants}");
    }
    quit(&mut s, &state);
    // Only bxctl dev wrote the roles' logs here: no journal prefix in any of them.
    for role in ["brokerd", "loopd", "inferproxy", "indexer"] {
        let log = std::fs::read_to_string(state.join(format!("logs/{role}.log"))).expect("log");
        assert!(
            !log.lines().any(|l| l.starts_with('<')),
            "{role}'s log has journal prefixes:\n{log}"
        );
    }
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn the_chat_has_help_status_and_session_and_ctrl_d_leaves_with_the_hint() {
    let state = state_dir("slash");
    let mut s = dev(&state, &[]);
    s.send_line("/help").expect("help");
    s.expect("/status    this session and its label, the model, the approvals waiting")
        .expect("the commands");
    s.expect(PROMPT).expect("prompt");
    s.send_line("/session").expect("session");
    s.expect("no session yet: your first message starts one")
        .expect("none yet");
    s.send_line("/hepl").expect("typo");
    s.expect("no command /hepl: /help lists them (nothing was sent)")
        .expect("refused, not sent");
    s.send_line("What is on my todo list?").expect("send");
    s.expect("buy milk").expect("answered");
    s.expect(PROMPT).expect("prompt");
    s.send_line("/status").expect("status");
    let found = s
        .expect(Regex(r"approvals  \d+ waiting"))
        .expect("the status");
    let status = String::from_utf8_lossy(found.before()).into_owned();
    assert!(
        status.contains("label      private, trusted")
            && status.contains("model      ok: demo (scripted; see docs/model.md)"),
        "{status}"
    );
    s.send_line("/session").expect("session");
    let found = s
        .expect(Regex(
            r"continue it later with `[^`]+ dev --state \S+ --session s-[0-9a-f-]+`",
        ))
        .expect("the session and its command");
    let hint = String::from_utf8_lossy(found.get(0).expect("match")).into_owned();
    let id = hint
        .rsplit(' ')
        .next()
        .expect("id")
        .trim_end_matches('`')
        .to_owned();
    s.expect(PROMPT).expect("prompt");
    // Ctrl-D at the prompt: the same hint as /quit, and the stack stops.
    s.send("\u{4}").expect("ctrl-d");
    s.expect(format!("[session {id}; continue it with `").as_str())
        .expect("the continue hint");
    ends(&s, &state, 0);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn continue_and_session_show_the_last_turns_and_history_survives_the_run() {
    let state = state_dir("continue");
    // A session from an earlier run.
    let first = dev_command(&state, &["-m", "What is on my todo list?"])
        .output()
        .expect("bxctl dev -m");
    assert!(first.status.success(), "{first:?}");
    let text = String::from_utf8_lossy(&first.stdout);
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("[session ")?.strip_suffix(']'))
        .expect("session line")
        .to_owned();
    // --continue: the most recent session, its last turns shown before the prompt.
    let mut s = on_pty(&state, &["--continue"]);
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    s.expect(format!("[session {id}: its last 1 turn of epoch 0]").as_str())
        .expect("the continued session");
    s.expect("you> What is on my todo list?")
        .expect("your words");
    s.expect("  [tool note_read: {\"name\":\"todo\"}]")
        .expect("the call");
    s.expect("  [-> 30 bytes, private]").expect("its result");
    s.expect("| Your todo list has two items")
        .expect("the answer");
    s.expect(PROMPT).expect("prompt");
    s.send_line("hello from the second run").expect("send");
    s.expect("For a real model").expect("answered");
    s.expect(PROMPT).expect("prompt");
    // The turn went into the same session.
    s.send_line("/quit").expect("quit");
    s.expect(format!("[session {id}; continue it with").as_str())
        .expect("the same session");
    ends(&s, &state, 0);
    // The history file is private, and holds what was typed.
    let history = state.join("xdg/boxmaker/chat-history");
    let mode = std::fs::metadata(&history)
        .expect("history")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    assert!(
        std::fs::read_to_string(&history)
            .expect("history")
            .contains("hello from the second run")
    );
    // --session ID shows them too; Up brings back the lines typed in the earlier run.
    let mut s = on_pty(&state, &["--session", &id]);
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    s.expect(format!("[session {id}: its last 2 turns of epoch 0]").as_str())
        .expect("the session's last turns");
    s.expect("you> hello from the second run")
        .expect("the last turn");
    s.expect(PROMPT).expect("prompt");
    // The earlier run's last line was `/quit`; the one before it is the message.
    s.send("\u{1b}[A").expect("up");
    s.expect("/quit").expect("the earlier run's last line");
    s.send("\u{1b}[A").expect("up");
    s.expect("hello from the second run")
        .expect("the line before it");
    s.send("\r").expect("enter");
    s.expect("For a real model").expect("sent again");
    quit(&mut s, &state);
    let _ = std::fs::remove_dir_all(&state);
}
