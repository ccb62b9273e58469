//! Approvals inside the chat, through a real pseudo-terminal (`expectrl`): the card is
//! brokerd's, keys typed before it was drawn are discarded, Enter alone answers nothing, the
//! whole id is echoed before the answer goes, and the answer is audited like
//! `bxctl approve`'s. A chat that cannot reach the admin side shows the command instead, and
//! a unique 6-character prefix answers from outside.

use std::process::Command;
use std::time::Duration;

use expectrl::Expect;
use expectrl::session::OsSession as Session;
use proto::{AuditEvent, AuditLine, DecisionRecord, DenyReason};
use stack::{Home, bin};

/// The model says a few slow words before asking for the listing, so that a key pressed
/// while they stream is typed well before the card is drawn.
fn script(dir: &std::path::Path) -> String {
    format!(
        r#"
[[rule]]
[rule.match]
tool_result_contains = "note.txt"
[rule.answer]
text = "The directory holds note.txt."

[[rule]]
[rule.match]
tool_result_contains = "denied"
[rule.answer]
text = "The owner said no."

[[rule]]
[rule.match]
user_contains = "list"
[rule.answer]
text = "Let me look in the notes."
chunk_delay_ms = 300
[[rule.answer.tool_calls]]
name = "list_dir"
arguments = '{{"path":"{}"}}'
"#,
        dir.display()
    )
}

fn setup(name: &str) -> (Home, stack::Agent) {
    let home = Home::new(name, "");
    let dir = home.files("notes", &[("note.txt", "hello")]);
    home.write_grant(
        "notes-list",
        &format!(
            "tool = \"list_dir\"\nmode = \"ask\"\nmax_taint = \"secret\"\n\
             [constraints]\npaths = [\"{}\"]\n",
            dir.display()
        ),
    );
    let agent = home.start_agent(&script(&dir), "");
    (home, agent)
}

pub(crate) fn chat(config: &std::path::Path) -> Session {
    let mut cmd = Command::new(bin("bxctl"));
    cmd.arg("--config").arg(config).arg("chat");
    // A plain terminal: rustyline then only reads lines, with no cursor queries. The input
    // history goes next to the configuration, not into the home's.
    cmd.env("TERM", "dumb")
        .env("XDG_STATE_HOME", config.with_file_name("xdg"));
    let mut p = Session::spawn(cmd).expect("bxctl chat in a pty");
    p.set_expect_timeout(Some(Duration::from_secs(30)));
    p
}

/// The compact card, drawn for `tool` in `screen` (what the terminal showed from the call
/// to the answer line): the approval's line, the call with its arguments as quoted data,
/// one line with the grant, the taint and the expiry beside the time left; and no line
/// before it that says the same (the waiting line with the commands is for a chat that
/// cannot draw the card).
pub(crate) fn compact(screen: &str, tool: &str) -> String {
    // The terminal ends its lines with CR LF.
    let screen = screen.replace("\r\n", "\n");
    let at = screen.find("approval ").expect("the card's first line");
    let (before, card) = screen.split_at(at);
    assert!(!before.contains("waits for your approval"), "{screen}");
    let lines: Vec<&str> = card.lines().collect();
    assert!(lines[0].len() == "approval ".len() + 32, "{card}");
    assert!(
        lines[1].starts_with(&format!("  {tool} \"{{")) && lines[1].contains("(call "),
        "{card}"
    );
    let expiry = lines[2];
    assert!(expiry.starts_with("  grant "), "{card}");
    assert!(expiry.contains(", taint private, expires 20"), "{card}");
    assert!(
        expiry.ends_with(" min)") && expiry.contains("Z (in "),
        "{card}"
    );
    card.to_owned()
}

pub(crate) fn requested(home: &Home) -> Vec<String> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Event(AuditEvent::ApprovalRequested { approval, .. }) => Some(approval),
            _ => None,
        })
        .collect()
}

#[test]
fn the_chat_shows_brokerds_card_and_takes_only_an_explicit_key() {
    let (home, _agent) = setup("inline");
    let mut p = chat(&home.config());
    p.expect("you> ").expect("prompt");
    p.send_line("please list my notes").expect("send");
    // The model is still talking: this key is typed before any card exists.
    p.expect("Let").expect("the model's first words");
    p.send("a").expect("typed ahead");
    let drawn = p
        .expect("answer: [a] approve  [d] deny  [l] later")
        .expect("the card");
    let card = String::from_utf8_lossy(drawn.before()).into_owned();
    compact(&card, "list_dir");
    // Enter alone answers nothing; `d` does. Had the key typed ahead been kept, or Enter
    // taken, the call would have been approved first.
    p.send("\r").expect("enter");
    p.send("d").expect("deny");
    let ids = requested(&home);
    assert_eq!(ids.len(), 1, "{ids:?}");
    p.expect(format!("deny {}", ids[0]).as_str())
        .expect("the whole id, echoed before the answer");
    p.expect("[denied]").expect("brokerd took the answer");
    p.expect("The owner said no.").expect("the turn goes on");

    // Approve the next one with `a`.
    p.expect("you> ").expect("prompt");
    p.send_line("list them again").expect("send");
    p.expect("answer: [a] approve").expect("the second card");
    p.send("a").expect("approve");
    p.expect("[approved]").expect("approved");
    p.expect("The directory holds note.txt.")
        .expect("the listing ran");
    p.expect("you> ").expect("prompt");
    p.send_line("/quit").expect("quit");
    // As printed, it works: bxctl by its own path (it is not on PATH here).
    let exe = std::fs::canonicalize(bin("bxctl")).expect("bxctl");
    p.expect(format!("continue it with `{} --config ", exe.display()).as_str())
        .expect("the command that resumes the session");

    // Both answers are audited as `bxctl approve` answers are: by the local user.
    let me = nix::unistd::getuid().as_raw();
    let decided: Vec<DecisionRecord> = home
        .audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) if r.tool == "list_dir" => Some(r.decision),
            _ => None,
        })
        .collect();
    assert_eq!(decided.len(), 2, "{decided:?}");
    assert!(
        matches!(
            &decided[0],
            DecisionRecord::Denied {
                reason: DenyReason::ApprovalRefused,
                ..
            }
        ),
        "{decided:?}"
    );
    assert!(
        matches!(&decided[1], DecisionRecord::Approved { approver, post: None, .. } if approver.starts_with(&format!("uid {me}"))),
        "{decided:?}"
    );
}

#[test]
fn a_chat_without_the_admin_side_shows_the_command_and_a_prefix_answers() {
    let (home, _agent) = setup("inline-other");
    // The same chat socket, but an admin socket this user cannot reach.
    let config = std::fs::read_to_string(home.config()).expect("config");
    let elsewhere = home.root.join("run/nowhere");
    std::fs::create_dir_all(&elsewhere).expect("dir");
    let other = home.root.join("other.toml");
    let admin = format!(
        "admin_broker = \"{}/run/admin-broker\"",
        home.root.display()
    );
    assert!(config.contains(&admin));
    std::fs::write(
        &other,
        config.replace(
            &admin,
            &format!("admin_broker = \"{}\"", elsewhere.display()),
        ),
    )
    .expect("other config");
    let mut p = chat(&other);
    p.expect("you> ").expect("prompt");
    p.send_line("list my notes").expect("send");
    p.expect("waits for your approval")
        .expect("the waiting line");
    p.expect("approve ").expect("the command to run");
    p.expect("[not answerable here: cannot reach brokerd")
        .expect("why no card");
    let id = stack::wait_for_approval(&home.config());
    let out = home.bxctl(&["approve", &id[..6]]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(&format!("approve {id}\napproved\n")),
        "{text}"
    );
    p.expect("The directory holds note.txt.")
        .expect("the call ran");
    p.send_line("/quit").expect("quit");
    p.expect("continue it with").expect("resume line");
}

#[test]
fn ctrl_c_at_the_card_answers_nothing() {
    let (home, _agent) = setup("inline-ctrl-c");
    let mut p = chat(&home.config());
    p.expect("you> ").expect("prompt");
    p.send_line("list my notes").expect("send");
    p.expect("answer: [a] approve").expect("the card");
    p.send("\u{3}").expect("ctrl-c");
    p.expect("[interrupted]")
        .expect("ctrl-c is read as itself, not as an answer");
    // Then it is the SIGINT it is: the turn is cancelled and loopd withdraws the call,
    // which brokerd denies for that reason, never as an owner's answer.
    p.expect("turn cancelled").expect("the turn is cancelled");
    assert_eq!(requested(&home).len(), 1);
    let decided = stack::poll_until(Duration::from_secs(5), || {
        home.audit_lines().into_iter().find_map(|l| match l {
            AuditLine::Decision(d) => Some(d.decision),
            _ => None,
        })
    });
    assert!(
        matches!(
            &decided,
            Some(DecisionRecord::Denied { reason: DenyReason::ApprovalRefused, detail: Some(d), .. })
                if d.contains("loopd withdrew")
        ),
        "{decided:?}"
    );
}
