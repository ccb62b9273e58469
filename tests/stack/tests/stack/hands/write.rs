//! `write_file` through brokerd: create, replace and append land with the mode the design
//! gives them, and the audit line proves what was replaced and what is left.

use std::os::unix::fs::PermissionsExt;

use proto::tools::stage::StageFailure;
use proto::{DataClass, DecisionRecord, ToolFailure, ToolResponse};
use stack::Home;

use super::{call, decision, grant, sha, tool_failed, write_args};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

#[test]
fn create_replace_and_append_land_and_the_audit_proves_each() {
    let home = Home::new("hands-write", "");
    let dir = home.files("notes", &[]);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).expect("chmod");
    home.write_grant(
        "notes-write",
        &grant("write_file", "auto", &dir, "result_class = \"private\"", ""),
    );
    let _d = home.start();
    let file = dir.join("plan.md");

    let created = call(
        &home,
        "s-w",
        1,
        "write_file",
        &write_args(&file, "create", "one\n"),
    );
    let ToolResponse::Result { content, class, .. } = &created else {
        panic!("{created:?}")
    };
    assert!(
        content.starts_with(&format!("wrote {}: 4 bytes", file.display())),
        "{content}"
    );
    assert_eq!(
        *class,
        DataClass::Private,
        "labelled like a read of the file"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("file"), "one\n");
    assert_eq!(
        mode(&file),
        0o640,
        "the directory's read and write bits (0750 & 0664)"
    );
    let line = decision(&home, "s-w", 1);
    assert!(
        matches!(line.decision, DecisionRecord::Allowed { .. }),
        "{line:?}"
    );
    let w = line.write.expect("the write's record");
    assert_eq!(w.path, file.display().to_string());
    assert_eq!(w.old_sha256, None, "a new file replaces nothing");
    assert_eq!(w.new_sha256, Some(sha("one\n")));
    assert_eq!(w.new_size, Some(4));

    // A replace keeps the file's own mode.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let replaced = call(
        &home,
        "s-w",
        2,
        "write_file",
        &write_args(&file, "replace", "two\n"),
    );
    assert!(
        matches!(replaced, ToolResponse::Result { .. }),
        "{replaced:?}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("file"), "two\n");
    assert_eq!(mode(&file), 0o600, "a replace keeps the mode");
    let w = decision(&home, "s-w", 2).write.expect("record");
    assert_eq!(
        (w.old_sha256, w.new_sha256),
        (Some(sha("one\n")), Some(sha("two\n")))
    );

    let appended = call(
        &home,
        "s-w",
        3,
        "write_file",
        &write_args(&file, "append", "three\n"),
    );
    assert!(
        matches!(appended, ToolResponse::Result { .. }),
        "{appended:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("file"),
        "two\nthree\n"
    );
    let w = decision(&home, "s-w", 3).write.expect("record");
    assert_eq!(w.old_sha256, Some(sha("two\n")));
    assert_eq!(w.new_sha256, Some(sha("two\nthree\n")));
    assert_eq!(w.new_size, Some(10));
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["plan.md"]);
    home.assert_audit_good();
}

#[test]
fn a_create_over_a_file_that_exists_fails_in_the_commit_typed_and_audited() {
    let home = Home::new("hands-exists", "");
    let dir = home.files("notes", &[("plan.md", "mine\n")]);
    home.write_grant("notes-write", &grant("write_file", "auto", &dir, "", ""));
    let _d = home.start();
    let file = dir.join("plan.md");
    let r = call(
        &home,
        "s-x",
        1,
        "write_file",
        &write_args(&file, "create", "theirs\n"),
    );
    let exists = ToolFailure::Write {
        failure: StageFailure::Exists,
    };
    assert!(
        matches!(&r, ToolResponse::Failed { failure: Some(f), message } if *f == exists && message.contains("exists")),
        "{r:?}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("file"), "mine\n");
    assert_eq!(tool_failed(&home, "s-x", 1), [exists]);
    home.assert_audit_good();
}

#[test]
fn a_replace_of_a_missing_file_fails_before_anyone_is_asked() {
    let home = Home::new("hands-missing", "");
    let dir = home.files("notes", &[]);
    home.write_grant("notes-write", &grant("write_file", "ask", &dir, "", ""));
    let _d = home.start();
    let file = dir.join("gone.md");
    let r = call(
        &home,
        "s-m",
        1,
        "write_file",
        &write_args(&file, "replace", "x"),
    );
    assert!(
        matches!(
            &r,
            ToolResponse::Failed {
                failure: Some(ToolFailure::Write {
                    failure: StageFailure::NotFound
                }),
                ..
            }
        ),
        "{r:?}"
    );
    let line = decision(&home, "s-m", 1);
    assert!(
        matches!(&line.decision, DecisionRecord::Failed { failure: StageFailure::NotFound, grant, .. } if grant == "notes-write"),
        "{line:?}"
    );
    assert!(!file.exists());
    super::nothing_pending(&home);
    home.assert_audit_good();
}
