//! The durable state (`state`): what is new, the file's mode, what refuses a start.

use std::path::PathBuf;

use gatewayd::state::{REORDER_MS, Store};

#[test]
fn an_old_post_seen_again_is_not_new() {
    let dir = std::env::temp_dir().join(format!("gw-state-{}", std::process::id()));
    let mut s = Store::open(dir.clone(), 1_000_000).expect("open");
    assert!(s.is_new("a", 1_000_000));
    s.mark("a", 1_000_000);
    assert!(!s.is_new("a", 1_000_000), "handled");
    assert!(s.is_new("b", 1_000_000 - 1000), "a little out of order");
    assert!(
        !s.is_new("c", 1_000_000 - REORDER_MS - 1),
        "an old root brought back"
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gw-state-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// Why `Store::open` refuses the state in `dir`.
fn refusal(dir: &std::path::Path) -> String {
    match Store::open(dir.to_owned(), 0) {
        Ok(_) => panic!("{} was accepted", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_state_file_is_private_and_read_back() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("mode");
    let mut s = Store::open(dir.clone(), 7).expect("open");
    s.mark("a", 9);
    s.save().expect("save");
    let mode = std::fs::metadata(dir.join("state.json"))
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let again = Store::open(dir.clone(), 0).expect("open again");
    assert!(again.is_handled("a"));
    assert_eq!(again.cursor(), 9);
    // What an older gatewayd wrote (0644) is still read.
    std::fs::set_permissions(
        dir.join("state.json"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    Store::open(dir.clone(), 0).expect("0644 is read");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn corrupt_linked_or_writable_state_refuses_start() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("refused");
    let path = dir.join("state.json");
    std::fs::write(&path, "{\"threads\":{").expect("write");
    assert!(
        refusal(&dir).contains("EOF while parsing"),
        "{}",
        refusal(&dir)
    );

    std::fs::write(&path, "{}").expect("write");
    for mode in [0o664, 0o646] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let why = refusal(&dir);
        assert!(why.contains(&format!("mode {mode:o} sets")), "{why}");
    }

    std::fs::remove_file(&path).expect("rm");
    let elsewhere = scratch("refused-target").join("state.json");
    std::fs::write(&elsewhere, "{}").expect("write");
    std::os::unix::fs::symlink(&elsewhere, &path).expect("link");
    let why = refusal(&dir);
    assert!(why.ends_with("it is a symbolic link"), "{why}");

    std::fs::remove_file(&path).expect("rm");
    std::fs::create_dir(&path).expect("a directory in its place");
    assert!(
        refusal(&dir).ends_with("not a regular file"),
        "{}",
        refusal(&dir)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_refused_state_names_its_file_and_the_refusal() {
    use daemon::durable::Refusal;
    use gatewayd::state::StateError;
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("typed");
    let path = dir.join("state.json");
    std::fs::write(&path, "{}").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    match Store::open(dir.clone(), 0) {
        Err(StateError::Refused {
            path: p,
            why: Refusal::Mode { mode: 0o666, sets },
        }) => {
            assert_eq!(p, path);
            assert_eq!(sets, 0o022);
        }
        other => panic!("not refused for its mode: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(dir);
}
