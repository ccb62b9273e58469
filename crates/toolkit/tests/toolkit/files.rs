//! read_file and list_dir: the root, symlinks, the cap, binary content, the listing.

use crate::support::{TempDir, failed, list_dir, ok, read_file, run};

#[test]
fn read_file_inside_the_root_returns_the_text() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("notes/a.txt"), "hello\n").expect("write");
    let out = run(&read_file(t.s("notes/a.txt"), vec![t.s("notes")]), None);
    assert_eq!(ok(out), ("hello\n".into(), false));
}

#[test]
fn read_file_outside_the_root_is_refused() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("notes2"), "secret").expect("write");
    let out = run(&read_file(t.s("notes2"), vec![t.s("notes")]), None);
    failed(out, "outside the granted paths");
}

#[test]
fn read_file_never_follows_a_symlink_below_the_root() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("notes")).expect("mkdir");
    std::fs::write(t.path("secret"), "secret").expect("write");
    std::fs::write(t.path("notes/inside.txt"), "fine").expect("write");
    std::os::unix::fs::symlink(t.path("secret"), t.path("notes/escape")).expect("symlink");
    std::os::unix::fs::symlink("inside.txt", t.path("notes/alias")).expect("symlink");
    let roots = vec![t.s("notes")];
    let msg = failed(
        run(&read_file(t.s("notes/escape"), roots.clone()), None),
        "links are not followed",
    );
    // The message does not say where the link leads.
    assert!(!msg.contains(&t.s("secret")), "{msg}");
    // Not even a link that stays inside the root: deny grants and patterns were matched on
    // the path as written, and a link could lead to what they refuse.
    failed(
        run(&read_file(t.s("notes/alias"), roots.clone()), None),
        "links are not followed",
    );
    // A link in the root's own prefix is the owner's layout, and fine.
    std::os::unix::fs::symlink(t.path("notes"), t.path("notes-link")).expect("symlink");
    assert_eq!(
        ok(run(
            &read_file(t.s("notes-link/inside.txt"), vec![t.s("notes-link")]),
            None
        )),
        ("fine".into(), false)
    );
}

#[test]
fn read_file_truncates_at_max_bytes() {
    let t = TempDir::new();
    std::fs::write(t.path("big.txt"), "0123456789").expect("write");
    let mut inv = read_file(t.s("big.txt"), vec![t.s("")]);
    inv.max_bytes = 4;
    assert_eq!(ok(run(&inv, None)), ("0123".into(), true));
    inv.max_bytes = 10;
    assert_eq!(ok(run(&inv, None)), ("0123456789".into(), false));
}

#[test]
fn read_file_on_a_directory_points_to_list_dir() {
    let t = TempDir::new();
    std::fs::create_dir(t.path("d")).expect("mkdir");
    failed(
        run(&read_file(t.s("d"), vec![t.s("")]), None),
        "is a directory, use list_dir",
    );
}

#[test]
fn read_file_refuses_binary_content() {
    let t = TempDir::new();
    std::fs::write(t.path("bin"), b"\x7fELF\0\0\x01").expect("write");
    failed(
        run(&read_file(t.s("bin"), vec![t.s("")]), None),
        "not UTF-8 text",
    );
    std::fs::write(t.path("latin1"), b"caf\xe9").expect("write");
    let (text, _) = ok(run(&read_file(t.s("latin1"), vec![t.s("")]), None));
    assert_eq!(text, "caf\u{FFFD}");
}

#[test]
fn list_dir_sorts_marks_directories_and_shows_links_unfollowed() {
    let t = TempDir::new();
    std::fs::create_dir_all(t.path("d/sub")).expect("mkdir");
    std::fs::write(t.path("d/b.txt"), "x").expect("write");
    std::os::unix::fs::symlink("/etc", t.path("d/c")).expect("symlink");
    let out = run(&list_dir(t.s("d"), vec![t.s("d")]), None);
    assert_eq!(ok(out), ("b.txt\nc -> /etc\nsub/\n".into(), false));
    let mut small = list_dir(t.s("d"), vec![t.s("d")]);
    small.max_bytes = 8;
    assert_eq!(ok(run(&small, None)), ("b.txt\n".into(), true));
    // Listing through the link is refused.
    failed(
        run(&list_dir(t.s("d/c"), vec![t.s("d")]), None),
        "links are not followed",
    );
    failed(
        run(&list_dir(t.s("d/b.txt"), vec![t.s("d")]), None),
        "not a directory",
    );
}
