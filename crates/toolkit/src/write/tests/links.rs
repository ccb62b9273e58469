//! Links below the granted root, there before the call or put in during it: never
//! followed, and what was there is left as it was.

use std::fs;
use std::os::unix::fs::symlink;

use proto::Hash32;
use proto::tools::WriteMode;
use proto::tools::stage::{Found, Look, StageFailure};

use super::super::commit::{Step, commit_with};
use super::super::{commit, look};
use super::{Scratch, commit_of, failure, old_of, read, write};

#[test]
fn a_link_below_the_root_is_never_followed() {
    let s = Scratch::new("links");
    symlink(s.outside(), s.at("evil.md")).expect("link");
    assert_eq!(
        failure(look(&Look {
            target: s.target("evil.md")
        })),
        StageFailure::Link
    );
    let c = commit_of(
        &s,
        "evil.md",
        write(WriteMode::Replace, "pwned"),
        Found::Sha256(Hash32::digest(b"keep me\n")),
        Some("keep me\n"),
    );
    assert_eq!(failure(commit(&c)), StageFailure::Link);
    // A link as a directory on the way.
    fs::create_dir(s.0.join("elsewhere")).expect("dir");
    symlink(s.0.join("elsewhere"), s.at("sub")).expect("link");
    let c = commit_of(
        &s,
        "sub/new.md",
        write(WriteMode::Create, "x"),
        Found::Absent,
        None,
    );
    assert_eq!(failure(commit(&c)), StageFailure::Link);
    assert_eq!(fs::read_dir(s.0.join("elsewhere")).expect("dir").count(), 0);
    assert_eq!(read(&s.outside()), "keep me\n");
}

#[test]
fn a_link_to_another_file_inside_the_root_is_not_followed_either() {
    let s = Scratch::new("inner-link");
    fs::write(s.at("real.md"), "real\n").expect("file");
    symlink("real.md", s.at("alias.md")).expect("link");
    assert_eq!(
        failure(look(&Look {
            target: s.target("alias.md")
        })),
        StageFailure::Link
    );
    fs::create_dir(s.at("d")).expect("d");
    symlink("d", s.at("dlink")).expect("link");
    let c = commit_of(
        &s,
        "dlink/x.md",
        write(WriteMode::Create, "x"),
        Found::Absent,
        None,
    );
    assert_eq!(failure(commit(&c)), StageFailure::Link);
    assert!(!s.at("d/x.md").exists());
}

#[test]
fn a_link_swapped_in_between_look_and_commit_is_refused() {
    let s = Scratch::new("swap-between");
    let p = s.at("a.md");
    // The same bytes as the outside file: only the link refuses it, not the hash.
    fs::write(&p, "keep me\n").expect("file");
    let old = old_of(&s, "a.md");
    fs::remove_file(&p).expect("rm");
    symlink(s.outside(), &p).expect("link");
    let c = commit_of(
        &s,
        "a.md",
        write(WriteMode::Replace, "pwned\n"),
        old,
        Some("keep me\n"),
    );
    assert_eq!(failure(commit(&c)), StageFailure::Link);
    assert_eq!(read(&s.outside()), "keep me\n");
}

#[test]
fn a_link_swapped_in_during_the_commit_is_put_back_untouched() {
    let s = Scratch::new("swap-during");
    let p = s.at("a.md");
    fs::write(&p, "old\n").expect("file");
    let old = old_of(&s, "a.md");
    let c = commit_of(
        &s,
        "a.md",
        write(WriteMode::Replace, "new\n"),
        old,
        Some("old\n"),
    );
    let out = commit_with(&c, &mut |step| {
        if step == Step::Written {
            fs::remove_file(&p).expect("rm");
            symlink(s.outside(), &p).expect("link");
        }
    });
    assert_eq!(failure(out), StageFailure::Changed);
    assert!(
        fs::symlink_metadata(&p)
            .expect("meta")
            .file_type()
            .is_symlink(),
        "put back"
    );
    assert_eq!(read(&s.outside()), "keep me\n");
    assert!(s.litter("").is_empty());
}

#[test]
fn a_directory_swapped_for_a_link_after_it_was_opened_changes_nothing() {
    let s = Scratch::new("dir-swap");
    fs::create_dir(s.at("sub")).expect("sub");
    fs::create_dir(s.0.join("elsewhere")).expect("elsewhere");
    let c = commit_of(
        &s,
        "sub/new.md",
        write(WriteMode::Create, "x\n"),
        Found::Absent,
        None,
    );
    commit_with(&c, &mut |step| {
        if step == Step::Checked {
            fs::rename(s.at("sub"), s.at("moved")).expect("move");
            symlink(s.0.join("elsewhere"), s.at("sub")).expect("link");
        }
    })
    .expect("written where the directory was opened");
    assert_eq!(read(&s.at("moved/new.md")), "x\n");
    assert_eq!(fs::read_dir(s.0.join("elsewhere")).expect("dir").count(), 0);
}
