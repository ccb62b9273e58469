//! The new text of each write, and the edit's exact, unique match.

use proto::tools::hands::MAX_FILE;
use proto::tools::stage::WriteCall;
use proto::tools::{EditFileArgs, WriteFileArgs, WriteMode};
use textedit::{EditError, Matches, apply, matches};

fn write(mode: WriteMode, content: &str) -> WriteCall {
    WriteCall::WriteFile(WriteFileArgs {
        content: content.into(),
        mode,
        path: "/n/a".into(),
    })
}

fn edit(old: &str, new: &str) -> WriteCall {
    WriteCall::EditFile(EditFileArgs {
        new: new.into(),
        old: old.into(),
        path: "/n/a".into(),
    })
}

#[test]
fn each_write_mode_against_a_file_and_none() {
    use WriteMode::{Append, Create, Replace};
    assert_eq!(apply(None, &write(Create, "x")), Ok("x".into()));
    assert_eq!(apply(Some(""), &write(Create, "x")), Err(EditError::Exists));
    assert_eq!(apply(Some("old"), &write(Replace, "x")), Ok("x".into()));
    assert_eq!(apply(None, &write(Replace, "x")), Err(EditError::Missing));
    assert_eq!(
        apply(Some("a\n"), &write(Append, "b\n")),
        Ok("a\nb\n".into())
    );
    assert_eq!(apply(None, &write(Append, "b\n")), Ok("b\n".into()));
    assert_eq!(apply(None, &edit("a", "b")), Err(EditError::Missing));
}

#[test]
fn an_edit_replaces_its_one_exact_match() {
    let text = "fn main() {\n    println!(\"hi\");\n}\n";
    assert_eq!(
        apply(Some(text), &edit("\"hi\"", "\"hello\"")),
        Ok("fn main() {\n    println!(\"hello\");\n}\n".into())
    );
    // Exact: no whitespace, case or line-end normalisation.
    assert_eq!(
        apply(Some(text), &edit("println!( \"hi\")", "x")),
        Err(EditError::NotFound)
    );
    assert_eq!(
        apply(Some("a\r\nb"), &edit("a\nb", "x")),
        Err(EditError::NotFound)
    );
    assert_eq!(apply(Some("ÄÖ"), &edit("Ö", "o")), Ok("Äo".into()));
}

#[test]
fn zero_or_several_matches_fail_with_the_count() {
    assert_eq!(
        apply(Some("abc"), &edit("x", "y")),
        Err(EditError::NotFound)
    );
    assert_eq!(
        apply(Some("x x"), &edit("x", "y")),
        Err(EditError::Several(2))
    );
    assert_eq!(
        apply(Some("x x x"), &edit("x", "y"))
            .expect_err("3")
            .to_string(),
        "old occurs 3 times in the file; include more of the text around the change so that \
         it occurs once"
    );
    // One occurrence overlapping another names no one place.
    assert_eq!(matches("aaa", "aa"), Matches::Several(2));
    assert_eq!(matches("aab", "aa"), Matches::One(0));
    assert_eq!(matches("éé", "é"), Matches::Several(2));
    assert_eq!(matches("xéy", "é"), Matches::One(1));
    assert_eq!(matches("", "a"), Matches::None);
}

#[test]
fn a_write_may_not_leave_more_than_max_file() {
    let max = usize::try_from(MAX_FILE).expect("fits");
    let old = "a".repeat(max);
    assert_eq!(
        apply(Some(&old), &write(WriteMode::Append, "b")),
        Err(EditError::TooLarge { size: MAX_FILE + 1 })
    );
    assert_eq!(
        apply(Some(&old), &write(WriteMode::Replace, "b")),
        Ok("b".into())
    );
    let grow = format!("{}x", "a".repeat(max - 1));
    assert!(matches!(
        apply(Some(&grow), &edit("x", "yy")),
        Err(EditError::TooLarge { .. })
    ));
}
