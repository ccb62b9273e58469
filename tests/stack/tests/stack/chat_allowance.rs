//! The session answer in the chat, through a real pseudo-terminal (`expectrl`): the compact
//! card says what "allow for this session" would allow and offers the `s` key; `s` answers
//! it, and the next call under the card's path runs without a card, while one beside it
//! still asks. A card of an `always_ask` grant offers no `s`, and the key answers nothing.

use std::time::Duration;

use expectrl::Expect;
use proto::{AuditEvent, AuditLine, DecisionRecord};
use stack::Home;

use crate::chat_approval::{chat, compact, requested};

fn script(notes: &std::path::Path, other: &std::path::Path) -> String {
    format!(
        r#"
[[rule]]
[rule.match]
tool_result_contains = "a.txt"
[rule.answer]
text = "The notes hold a.txt."

[[rule]]
[rule.match]
tool_result_contains = "b.txt"
[rule.answer]
text = "The sub holds b.txt."

[[rule]]
[rule.match]
tool_result_contains = "denied"
[rule.answer]
text = "The owner said no."

[[rule]]
[rule.match]
user_contains = "sub"
[[rule.answer.tool_calls]]
name = "list_dir"
arguments = '{{"path":"{notes}/sub"}}'

[[rule]]
[rule.match]
user_contains = "other"
[[rule.answer.tool_calls]]
name = "list_dir"
arguments = '{{"path":"{other}"}}'

[[rule]]
[rule.match]
user_contains = "list"
[[rule.answer.tool_calls]]
name = "list_dir"
arguments = '{{"path":"{notes}"}}'
"#,
        notes = notes.display(),
        other = other.display()
    )
}

/// A home whose `list_dir` grant asks on its `root` (holding `notes/a.txt`,
/// `notes/sub/b.txt` and `other/c.txt`), with `extra` in the grant; the stack running.
fn setup(name: &str, extra: &str) -> (Home, stack::Agent, std::path::PathBuf) {
    let home = Home::new(name, "");
    let root = home.files("root", &[]);
    let notes = home.files("root/notes", &[("a.txt", "a")]);
    home.files("root/notes/sub", &[("b.txt", "b")]);
    let other = home.files("root/other", &[("c.txt", "c")]);
    home.write_grant("notes", &crate::allowance::list_grant(&root, extra));
    let agent = home.start_agent(&script(&notes, &other), "");
    (home, agent, notes)
}

fn decided(home: &Home) -> Vec<DecisionRecord> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => Some(r.decision),
            _ => None,
        })
        .collect()
}

#[test]
fn the_compact_card_offers_the_session_and_s_allows_the_calls_under_its_path() {
    let (home, _agent, notes) = setup("inline-session", "");
    let mut p = chat(&home.config());
    p.expect("you> ").expect("prompt");
    p.send_line("please list my notes").expect("send");
    let drawn = p
        .expect("answer: [a] approve  [s] this session  [d] deny  [l] later")
        .expect("the card offers the session answer");
    let card = compact(&String::from_utf8_lossy(drawn.before()), "list_dir");
    let offer = format!(
        "  this session: list_dir at or under {}, for 1 h, while the label stays private or \
         below\n",
        notes.display()
    );
    assert!(card.contains(&offer), "{card}");
    p.send("s").expect("the session answer");
    let ids = requested(&home);
    assert_eq!(ids.len(), 1, "{ids:?}");
    p.expect(format!("approve for this session {}", ids[0]).as_str())
        .expect("the whole id, echoed before the answer");
    p.expect("[approved for this session]").expect("taken");
    p.expect("The notes hold a.txt.").expect("the call ran");

    // Below the path: no card, it runs.
    p.expect("you> ").expect("prompt");
    p.send_line("and the sub").expect("send");
    let ran = p
        .expect("The sub holds b.txt.")
        .expect("ran without asking");
    let shown = String::from_utf8_lossy(ran.before()).into_owned();
    assert!(!shown.contains("approval "), "no card: {shown}");
    assert!(!shown.contains("waits for your approval"), "{shown}");
    assert_eq!(requested(&home).len(), 1);

    // Beside it, under the same grant: a card again, which `d` denies.
    p.expect("you> ").expect("prompt");
    p.send_line("the other one").expect("send");
    p.expect("[s] this session").expect("a card again");
    p.send("d").expect("deny");
    p.expect("The owner said no.").expect("denied");
    p.expect("you> ").expect("prompt");
    p.send_line("/quit").expect("quit");
    p.expect("continue it with").expect("resume line");

    let allowance = home.audit_lines().into_iter().find_map(|l| match l {
        AuditLine::Event(AuditEvent::AllowanceGranted { allowance, .. }) => Some(allowance),
        _ => None,
    });
    let d = decided(&home);
    assert!(
        matches!(&d[..], [
            DecisionRecord::Approved { allowance: None, .. },
            DecisionRecord::Approved { allowance: a, .. },
            DecisionRecord::Denied { .. },
        ] if *a == allowance && a.is_some()),
        "{d:?}"
    );
}

#[test]
fn an_always_ask_card_offers_no_session_answer_and_s_answers_nothing() {
    let (home, _agent, _notes) = setup("inline-always", "always_ask = true");
    let mut p = chat(&home.config());
    p.expect("you> ").expect("prompt");
    p.send_line("please list my notes").expect("send");
    let drawn = p
        .expect("answer: [a] approve  [d] deny  [l] later")
        .expect("the card, without the session answer");
    let card = compact(&String::from_utf8_lossy(drawn.before()), "list_dir");
    assert!(!card.contains("this session"), "{card}");
    // `s` is no key here: had it answered, the call would have run before the `d`.
    p.send("s").expect("s");
    std::thread::sleep(Duration::from_millis(300));
    p.send("d").expect("deny");
    p.expect("[denied]").expect("only the d answered");
    p.expect("The owner said no.").expect("denied");
    p.expect("you> ").expect("prompt");
    p.send_line("/quit").expect("quit");
    p.expect("continue it with").expect("resume line");
    assert!(
        matches!(&decided(&home)[..], [DecisionRecord::Denied { .. }]),
        "{:?}",
        decided(&home)
    );
    assert!(
        !home
            .audit_lines()
            .iter()
            .any(|l| matches!(l, AuditLine::Event(AuditEvent::ApprovalRefused { .. })))
    );
}
