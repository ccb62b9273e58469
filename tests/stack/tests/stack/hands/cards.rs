//! A write's card (docs/decisions.md H8, H10): brokerd shows a unified diff for a replace
//! and an edit, the content for a new file, inert and with the full sizes; the approval
//! binds the content the diff was made from, and the commit writes only over it.

use daemon::conn::Conn;
use proto::approval::{AnswerOutcome, ApprovalAnswer, Empty, Refusal, Shows, Verdict};
use proto::tools::stage::StageFailure;
use proto::{Message, ToolFailure, ToolResponse};
use stack::Home;

use super::{answer, grant, pending, sha, tool_failed, write_args};

fn card(home: &Home) -> proto::approval::ApprovalCard {
    let mut admin = Conn::connect(&home.admin_sock()).expect("admin");
    let listing = admin
        .call(1, Message::ApprovalList(Empty {}), |_| {})
        .expect("list");
    let Message::ApprovalListing(listing) = listing.msg else {
        panic!("{listing:?}")
    };
    listing.pending[0].clone()
}

#[test]
fn the_card_shows_the_diff_and_binds_the_content_it_was_made_from() {
    let home = Home::new("hands-card", "");
    let dir = home.files("notes", &[("plan.md", "a\nb\nc\n")]);
    home.write_grant("notes-write", &grant("write_file", "ask", &dir, "", ""));
    let _d = home.start();
    let file = dir.join("plan.md");
    let (approval, waiting) = pending(
        &home,
        "s-c",
        1,
        "write_file",
        &write_args(&file, "replace", "a\nB\nc\n\u{1b}[31m\n"),
    );
    let c = card(&home);
    let w = c.write.clone().expect("a write's card");
    assert_eq!(w.shows, Shows::Diff);
    assert_eq!(w.old_sha256, Some(sha("a\nb\nc\n")));
    assert_eq!((w.old_size, w.new_size), (Some(6), 12));
    assert!(
        w.text.starts_with(&format!(
            "--- a{}\n+++ b{}\n",
            file.display(),
            file.display()
        )),
        "{}",
        w.text
    );
    assert!(w.text.contains("-b\n+B\n"), "{}", w.text);
    // bxctl shows it set apart and inert: the escape is text, never a colour.
    let shown = String::from_utf8_lossy(&home.bxctl(&["approvals"]).stdout).into_owned();
    assert!(shown.contains("| -b") && shown.contains("| +B"), "{shown}");
    assert!(!shown.contains('\u{1b}'), "{shown}");
    // An answer bound to another old content (or another diff) is refused and audited.
    let mut admin = Conn::connect(&home.admin_sock()).expect("admin");
    for change in [
        |w: &mut proto::approval::WriteCard| w.old_sha256 = Some(sha("x")),
        |w: &mut proto::approval::WriteCard| w.text.push('!'),
    ] {
        let mut other = c.clone();
        change(other.write.as_mut().expect("write"));
        let reply = admin
            .call(
                2,
                Message::ApprovalAnswer(ApprovalAnswer {
                    approval: approval.clone(),
                    binding: other.bound(),
                    verdict: Verdict::Approve,
                    post: None,
                    by: None,
                }),
                |_| {},
            )
            .expect("reply");
        assert_eq!(
            reply.msg,
            Message::ApprovalAnswered(AnswerOutcome::Refused {
                refusal: Refusal::Changed
            })
        );
    }
    // The file changes while the card waits: the approved commit finds other content and
    // writes nothing.
    std::fs::write(&file, "a\nb\nc\nd\n").expect("change");
    assert!(home.bxctl(&["approve", &approval]).status.success());
    let r = answer(waiting);
    let changed = ToolFailure::Write {
        failure: StageFailure::Changed,
    };
    assert!(
        matches!(&r, ToolResponse::Failed { failure: Some(f), .. } if *f == changed),
        "{r:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        "a\nb\nc\nd\n"
    );
    assert_eq!(tool_failed(&home, "s-c", 1), [changed]);
    home.assert_audit_good();
}

#[test]
fn a_new_files_card_shows_its_content() {
    let home = Home::new("hands-card-new", "");
    let dir = home.files("notes", &[]);
    home.write_grant("notes-write", &grant("write_file", "ask", &dir, "", ""));
    let _d = home.start();
    let file = dir.join("new.md");
    let (approval, waiting) = pending(
        &home,
        "s-n",
        1,
        "write_file",
        &write_args(&file, "create", "hello\n"),
    );
    let w = card(&home).write.expect("write");
    assert_eq!(
        (w.shows, w.text.as_str(), w.old_sha256, w.new_size),
        (Shows::Content, "hello\n", None, 6)
    );
    assert!(home.bxctl(&["approve", &approval]).status.success());
    assert!(matches!(answer(waiting), ToolResponse::Result { .. }));
    assert_eq!(std::fs::read_to_string(&file).expect("file"), "hello\n");
}
