//! Links below the granted root (docs/decisions.md H4): one there when the call comes is
//! refused before anyone is asked; one swapped in while the owner looks at the card is
//! refused by the commit, and nothing outside the root changes.

use proto::tools::stage::StageFailure;
use proto::{DecisionRecord, ToolFailure, ToolResponse};
use stack::Home;

use super::{answer, decision, grant, nothing_pending, pending, tool_failed, write_args};

#[test]
fn a_link_swapped_in_during_the_call_is_refused_and_nothing_outside_changes() {
    let home = Home::new("hands-swap", "");
    let notes = home.files("notes/sub", &[("a.md", "same\n")]);
    let notes = notes.parent().expect("notes").to_path_buf();
    // Outside the granted root, a file with the very bytes the owner is shown.
    let outside = home.files("outside", &[("a.md", "same\n")]);
    home.write_grant("notes-write", &grant("write_file", "ask", &notes, "", ""));
    let _d = home.start();
    let target = notes.join("sub/a.md");

    // Control: without a swap, the approved write lands.
    let (approval, waiting) = pending(
        &home,
        "s-l",
        1,
        "write_file",
        &write_args(&target, "replace", "one\n"),
    );
    assert!(home.bxctl(&["approve", &approval]).status.success());
    assert!(matches!(answer(waiting), ToolResponse::Result { .. }));
    assert_eq!(std::fs::read_to_string(&target).expect("a"), "one\n");
    std::fs::write(&target, "same\n").expect("reset");

    // The look saw the file; while the card waits, `sub` becomes a link to `outside`.
    let (approval, waiting) = pending(
        &home,
        "s-l",
        2,
        "write_file",
        &write_args(&target, "replace", "pwned\n"),
    );
    std::fs::rename(notes.join("sub"), home.root.join("sub-moved")).expect("move");
    std::os::unix::fs::symlink(&outside, notes.join("sub")).expect("link");
    assert!(home.bxctl(&["approve", &approval]).status.success());
    let r = answer(waiting);
    let link = ToolFailure::Write {
        failure: StageFailure::Link,
    };
    assert!(
        matches!(&r, ToolResponse::Failed { failure: Some(f), .. } if *f == link),
        "{r:?}"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("a.md")).expect("outside"),
        "same\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.root.join("sub-moved/a.md")).expect("moved"),
        "same\n"
    );
    assert_eq!(tool_failed(&home, "s-l", 2), [link]);
    home.assert_audit_good();
}

#[test]
fn a_link_below_the_root_when_the_call_comes_is_refused_before_asking() {
    let home = Home::new("hands-link", "");
    let notes = home.files("notes", &[]);
    let outside = home.files("outside", &[("a.md", "theirs\n")]);
    std::os::unix::fs::symlink(outside.join("a.md"), notes.join("a.md")).expect("link");
    home.write_grant("notes-write", &grant("write_file", "ask", &notes, "", ""));
    let _d = home.start();
    let r = super::call(
        &home,
        "s-k",
        1,
        "write_file",
        &write_args(&notes.join("a.md"), "replace", "x"),
    );
    assert!(
        matches!(
            &r,
            ToolResponse::Failed {
                failure: Some(ToolFailure::Write {
                    failure: StageFailure::Link
                }),
                ..
            }
        ),
        "{r:?}"
    );
    let line = decision(&home, "s-k", 1);
    assert!(
        matches!(
            line.decision,
            DecisionRecord::Failed {
                failure: StageFailure::Link,
                ..
            }
        ),
        "{line:?}"
    );
    nothing_pending(&home);
    assert_eq!(
        std::fs::read_to_string(outside.join("a.md")).expect("a"),
        "theirs\n"
    );
    home.assert_audit_good();
}
