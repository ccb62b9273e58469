//! `edit_file`: an exact, unique match is replaced; zero or two matches fail with the count
//! before anyone is asked, audited, and labelled like a read of the file.

use proto::tools::stage::StageFailure;
use proto::{DecisionRecord, DenyReason, ToolFailure, ToolResponse};
use stack::{Home, read_grant};

use super::{answer, call, decision, edit_args, grant, nothing_pending, pending, sha};

#[test]
fn an_edit_replaces_its_one_match_after_the_owner_approves() {
    let home = Home::new("hands-edit", "");
    let dir = home.files("notes", &[("todo.md", "- [ ] milk\n- [ ] bread\n")]);
    home.write_grant("notes-edit", &grant("edit_file", "ask", &dir, "", ""));
    let _d = home.start();
    let file = dir.join("todo.md");
    let (approval, waiting) = pending(
        &home,
        "s-e",
        1,
        "edit_file",
        &edit_args(&file, "- [ ] milk", "- [x] milk"),
    );
    assert!(home.bxctl(&["approve", &approval]).status.success());
    let r = answer(waiting);
    assert!(matches!(r, ToolResponse::Result { .. }), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        "- [x] milk\n- [ ] bread\n"
    );
    let line = decision(&home, "s-e", 1);
    assert!(
        matches!(line.decision, DecisionRecord::Approved { .. }),
        "{line:?}"
    );
    let w = line.write.expect("record");
    assert_eq!(w.old_sha256, Some(sha("- [ ] milk\n- [ ] bread\n")));
    assert_eq!(w.new_sha256, Some(sha("- [x] milk\n- [ ] bread\n")));
    home.assert_audit_good();
}

#[test]
fn an_edit_with_zero_or_two_matches_fails_with_the_count_asking_nobody() {
    let home = Home::new("hands-edit-count", "");
    let text = "- [ ] milk\n- [ ] bread\n";
    let dir = home.files("notes", &[("todo.md", text)]);
    // The file reads back secret: a failure's words say something of it.
    home.write_grant(
        "notes-edit",
        &grant("edit_file", "ask", &dir, "result_class = \"secret\"", ""),
    );
    let other = home.files("other", &[("a.txt", "a")]);
    home.write_grant(
        "other-read",
        &read_grant("auto", &other, "")
            .replace("max_taint = \"secret\"", "max_taint = \"private\""),
    );
    let _d = home.start();
    let file = dir.join("todo.md");

    let none = call(
        &home,
        "s-c",
        1,
        "edit_file",
        &edit_args(&file, "eggs", "ham"),
    );
    let edit = Some(ToolFailure::Write {
        failure: StageFailure::Edit,
    });
    assert!(
        matches!(&none, ToolResponse::Failed { message, failure } if message.contains("old occurs nowhere") && *failure == edit),
        "{none:?}"
    );
    let two = call(
        &home,
        "s-c",
        2,
        "edit_file",
        &edit_args(&file, "- [ ]", "- [x]"),
    );
    assert!(
        matches!(&two, ToolResponse::Failed { message, failure } if message.contains("old occurs 2 times") && *failure == edit),
        "{two:?}"
    );
    for n in [1, 2] {
        let line = decision(&home, "s-c", n);
        assert!(
            matches!(&line.decision, DecisionRecord::Failed { failure: StageFailure::Edit, grant, detail } if grant == "notes-edit" && detail.contains("old occurs")),
            "{line:?}"
        );
        assert_eq!(line.write, None);
    }
    nothing_pending(&home);
    assert_eq!(std::fs::read_to_string(&file).expect("file"), text);
    // The session now holds what the failures said of a secret file: a private read is
    // refused, while a fresh session reads it.
    let a = other.join("a.txt").display().to_string();
    let args = format!(r#"{{"path":"{a}"}}"#);
    let after = call(&home, "s-c", 3, "read_file", &args);
    assert!(
        matches!(
            after,
            ToolResponse::Denied {
                reason: DenyReason::TaintTooHigh,
                ..
            }
        ),
        "{after:?}"
    );
    let fresh = call(&home, "s-fresh", 1, "read_file", &args);
    assert!(matches!(fresh, ToolResponse::Result { .. }), "{fresh:?}");
    home.assert_audit_good();
}
