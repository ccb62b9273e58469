//! The session log from outside: a torn last line is cut and the session loads; a log
//! behind a link, open to others or corrupt is refused and never written through.

use std::io::Write;
use std::path::PathBuf;

use loopd::store::{Store, StoreError};
use proto::{Epoch, LogRecord, SessionId, Timestamp};

/// A store in a fresh home with one record in session `s-1`: the home, the store, the
/// session, the record and its log file.
fn one_record(name: &str) -> (PathBuf, Store, SessionId, LogRecord, PathBuf) {
    let home = std::env::temp_dir().join(format!("bx-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let store = Store::open(&home).expect("store");
    let id = SessionId::new("s-1").expect("id");
    let rec = LogRecord::User {
        time: Timestamp::from_millis(0).expect("time"),
        content: "hello".into(),
    };
    store.append(&id, Epoch(0), &rec).expect("append");
    let path = home.join("sessions/s-1/0.jsonl");
    (home, store, id, rec, path)
}

#[test]
fn a_torn_last_line_is_cut_and_the_session_loads() {
    let (home, store, id, rec, path) = one_record("torn");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    f.write_all(b"{\"type\":\"us").expect("torn");
    drop(f);
    // Reading never writes; the torn bytes are simply not a record yet.
    let s = store.load(&id).expect("load").expect("session");
    assert_eq!(s.records, vec![rec.clone()]);
    store.repair(&id).expect("repair");
    store.append(&id, Epoch(0), &rec).expect("append after");
    assert_eq!(
        store
            .load(&id)
            .expect("load")
            .expect("session")
            .records
            .len(),
        2
    );
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn a_linked_open_or_corrupt_log_is_refused_and_never_written_through() {
    use std::os::unix::fs::PermissionsExt;
    let (home, store, id, rec, path) = one_record("refused");
    let refused = |what: &str| match store.load(&id) {
        Err(e) => e.to_string(),
        Ok(s) => panic!("{what}: loaded {s:?}"),
    };

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let why = refused("open to others");
    assert!(
        why.ends_with("mode 644 sets 44, which this daemon never does"),
        "{why}"
    );
    assert!(
        matches!(store.load(&id), Err(StoreError::Refused { path: p, .. }) if p == path),
        "the refusal names the log"
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    // A link in the log's place: not read, not repaired, not appended to.
    let outside = home.join("outside.jsonl");
    std::fs::write(&outside, "{\"torn").expect("write");
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::remove_file(&path).expect("rm");
    std::os::unix::fs::symlink(&outside, &path).expect("link");
    assert!(refused("a link").ends_with("it is a symbolic link"));
    assert!(store.repair(&id).is_err());
    assert!(store.append(&id, Epoch(0), &rec).is_err());
    assert_eq!(std::fs::read(&outside).expect("read"), b"{\"torn");

    std::fs::remove_file(&path).expect("rm");
    std::fs::write(&path, "{\"not\":\"a record\"}\n").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let why = refused("corrupt");
    assert!(why.contains("0.jsonl line 1:"), "{why}");
    match store.load(&id) {
        Err(StoreError::Corrupt { path: p, line, .. }) => assert_eq!((p, line), (path, 1)),
        other => panic!("not a corrupt line: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn a_store_that_cannot_be_made_names_its_directory_and_keeps_the_cause() {
    let home = std::env::temp_dir().join(format!("bx-store-file-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::write(&home, "not a directory").expect("home");
    match Store::open(&home) {
        Err(StoreError::Io {
            path,
            error: source,
        }) => {
            assert_eq!(path, home.join("sessions"));
            assert_eq!(source.kind(), std::io::ErrorKind::NotADirectory);
        }
        other => panic!("not an I/O error on sessions/: {other:?}"),
    }
    let _ = std::fs::remove_file(&home);
}

#[test]
fn the_pinned_core_memory_loads_with_its_epoch_and_a_planted_one_is_refused() {
    let (home, store, id, _, _) = one_record("pin");
    let s = store.load(&id).expect("load").expect("session");
    assert_eq!(s.core, None, "an epoch from before pinning has no pin");
    std::fs::create_dir_all(home.join("memory")).expect("memory");
    std::fs::write(home.join("memory/core.md"), "CORE").expect("core");
    assert_eq!(
        store
            .core_of_epoch(&home.join("memory/core.md"), &s)
            .expect("pin"),
        "CORE"
    );
    // The owner's edit does not reach the pinned epoch.
    std::fs::write(home.join("memory/core.md"), "EDITED").expect("edit");
    let s = store.load(&id).expect("load").expect("session");
    assert_eq!(s.core.as_deref(), Some("CORE"));
    assert_eq!(s.system(), "CORE");
    let pin = home.join("sessions/s-1/0.core");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&pin).expect("pin").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    // A pin that is not what loopd writes is refused, never read through.
    std::fs::remove_file(&pin).expect("rm");
    std::os::unix::fs::symlink(home.join("memory/core.md"), &pin).expect("link");
    match store.load(&id) {
        Err(e @ StoreError::Refused { .. }) => {
            assert_eq!(
                e.to_string(),
                format!("{}: it is a symbolic link", pin.display())
            );
        }
        other => panic!("not refused: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&home);
}
