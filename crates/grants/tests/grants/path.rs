//! Paths: the one normal form, what is refused, and which paths a grant's entry covers.

use grants::constraints::{is_under, normalize_path};

#[test]
fn normal_paths_pass_unchanged() {
    for p in [
        "/",
        "/a",
        "/home/owner/notes/a.md",
        "/a/...",
        "/a/..b",
        "/a/b..",
        "/a/.b",
    ] {
        assert_eq!(normalize_path(p).expect(p), p);
    }
}

#[test]
fn slashes_and_dots_collapse() {
    for (raw, normal) in [
        ("//", "/"),
        ("/.", "/"),
        ("/./", "/"),
        ("/a/", "/a"),
        ("/a//b", "/a/b"),
        ("//a///b//", "/a/b"),
        ("/a/./b", "/a/b"),
        ("/a/.", "/a"),
        ("/./a/./b/.", "/a/b"),
        ("/a/b\\c", "/a/b\\c"),
    ] {
        assert_eq!(normalize_path(raw).expect(raw), normal, "{raw}");
    }
}

#[test]
fn dot_dot_is_refused_anywhere() {
    for raw in [
        "/..",
        "/../etc/shadow",
        "/home/owner/notes/../../etc/shadow",
        "/home/owner/notes/..",
        "/home/owner/notes/../",
        "/a/./../b",
        "//..//",
    ] {
        let err = normalize_path(raw).expect_err(raw).to_string();
        assert!(err.contains("`..`"), "{raw}: {err}");
    }
}

#[test]
fn relative_empty_and_nul_are_refused() {
    for raw in ["", "a", "./a", "../a", "~/notes", " /a", "a/b"] {
        let err = normalize_path(raw).expect_err(raw).to_string();
        assert!(err.contains("not an absolute path"), "{raw}: {err}");
    }
    for raw in ["/a\0", "/a\0/b", "\0/a"] {
        let err = normalize_path(raw).expect_err(raw).to_string();
        assert!(err.contains("NUL"), "{raw:?}: {err}");
    }
}

#[test]
fn prefix_matches_only_at_a_component_boundary() {
    let root = "/home/owner/notes";
    for p in [root, "/home/owner/notes/a", "/home/owner/notes/a/b/c"] {
        assert!(is_under(p, root), "{p}");
    }
    for p in [
        "/home/owner/notes2",
        "/home/owner/notes.bak/a",
        "/home/owner/note",
        "/home/owner",
        "/",
        "/etc/shadow",
        "/home/owner/Notes",
    ] {
        assert!(!is_under(p, root), "{p}");
    }
}

#[test]
fn the_root_grant_covers_everything() {
    for p in ["/", "/etc/shadow", "/home/owner/notes"] {
        assert!(is_under(p, "/"), "{p}");
    }
}
