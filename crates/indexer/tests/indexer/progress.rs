//! What the indexer remembers between passes: a pass indexes only what changed, up to the
//! last whole line of each log, and a lost or corrupt state rebuilds the same index.

use noteindex::Kind;
use proto::DataClass::{Private, Secret};

use crate::{Home, label, user};

#[test]
fn a_pass_indexes_what_changed_and_a_log_up_to_its_last_whole_line() {
    let home = Home::new("progress");
    let mut ix = home.indexer();
    home.log("s-1", 0, &user("the first launch"));
    home.label("s-1", "private", false);
    // Half a line: a write still going on.
    home.log(
        "s-1",
        0,
        r#"{"type":"user","time":"2026-12-01T10:00:00.000Z","content":"#,
    );
    let r = ix.pass().expect("pass");
    assert_eq!(r.records, 2, "moved in, and one record: {r:?}");
    assert_eq!(
        r.published.len(),
        6,
        "the first pass publishes every partition"
    );
    let hits = home.find("launch", Some(Kind::Session));
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].1, label(Private, false));
    assert_eq!((hits[0].0.name.as_str(), hits[0].0.epoch), ("s-1", Some(0)));
    // Nothing changed: nothing indexed, nothing published.
    let r = ix.pass().expect("pass");
    assert_eq!((r.notes, r.records, r.published.len()), (0, 0, 0), "{r:?}");
    // The line completed: only it is indexed, once.
    home.log("s-1", 0, "\"the second launch\"}\n");
    let r = ix.pass().expect("pass");
    assert_eq!(r.records, 1, "{r:?}");
    assert_eq!(r.published, [label(Private, false)]);
    assert_eq!(home.find("launch", None).len(), 2);
    // A new indexer (the next oneshot run) goes on from the state.
    drop(ix);
    let mut again = home.indexer();
    let r = again.pass().expect("pass");
    assert_eq!((r.notes, r.records, r.published.len()), (0, 0, 0), "{r:?}");
    assert_eq!(home.find("launch", None).len(), 2);
}

#[test]
fn a_lost_or_corrupt_state_rebuilds_the_same_hits() {
    let home = Home::new("rebuild");
    std::fs::write(home.root.join("notes/plain.md"), "buy a launch pad").expect("note");
    home.log("s-1", 0, &user("launch at noon"));
    home.log("s-1", 1, &user("launch again"));
    home.label("s-1", "secret", false);
    home.indexer().settle().expect("settle");
    let before = home.find("launch", None);
    assert_eq!(before.len(), 3, "{before:?}");
    let state = home.root.join("index/work/state.json");
    for damage in [None, Some("{not json"), Some("")] {
        match damage {
            None => std::fs::remove_file(&state).expect("remove"),
            Some(text) => std::fs::write(&state, text).expect("corrupt"),
        }
        let r = home.indexer().settle().expect("settle");
        assert_eq!(r.published.len(), 6, "{damage:?}: {r:?}");
        assert_eq!(home.find("launch", None), before, "{damage:?}");
    }
    // A corrupt working partition too.
    let work = home.root.join("index/work/secret.sqlite");
    std::fs::write(&work, vec![0x5a; 8192]).expect("corrupt");
    home.indexer().settle().expect("settle");
    assert_eq!(home.find("launch", None), before);
    assert!(before.iter().any(|(_, l)| *l == label(Secret, false)));
}

#[test]
fn a_note_or_session_that_is_gone_is_removed() {
    let home = Home::new("gone");
    std::fs::write(home.root.join("notes/plain.md"), "a launch pad").expect("note");
    home.log("s-1", 0, &user("launch now"));
    let mut ix = home.indexer();
    ix.settle().expect("settle");
    assert_eq!(home.find("launch", None).len(), 2);
    std::fs::remove_file(home.root.join("notes/plain.md")).expect("rm");
    std::fs::remove_dir_all(home.root.join("sessions/s-1")).expect("rm");
    let r = ix.pass().expect("pass");
    assert_eq!((r.notes, r.records), (1, 1), "{r:?}");
    assert!(home.find("launch", None).is_empty());
}

#[test]
fn what_is_not_a_note_or_a_record_is_passed_by() {
    let home = Home::new("bad");
    // A file larger than a note may be, a link, a directory: none is indexed.
    let max = usize::try_from(proto::notes::MAX_NOTE).expect("size");
    let big = "launch ".repeat(max / 7 + 1);
    std::fs::write(home.root.join("notes/big.md"), big).expect("big");
    std::os::unix::fs::symlink("/etc/passwd", home.root.join("notes/link.md")).expect("link");
    std::fs::create_dir(home.root.join("notes/dir.md")).expect("dir");
    std::fs::write(home.root.join("notes/plain.md"), "a launch pad").expect("note");
    home.log("s-1", 0, "not json at all\n");
    home.log("s-1", 0, &user("launch now"));
    let r = home.indexer().settle().expect("settle");
    assert_eq!(r.notes, 4, "{r:?}");
    let hits = home.find("launch OR root", None);
    let names: Vec<&str> = hits.iter().map(|(h, _)| h.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&"plain") && names.contains(&"s-1"),
        "{names:?}"
    );
}

#[test]
fn a_second_indexer_waits_for_the_first() {
    let home = Home::new("lock");
    let first = home.indexer();
    let paths = home.paths();
    let (tx, rx) = std::sync::mpsc::channel();
    let second = std::thread::spawn(move || {
        let ix = indexer::Indexer::open(paths).expect("open");
        tx.send(()).expect("send");
        drop(ix);
    });
    let waited = rx.recv_timeout(std::time::Duration::from_millis(500));
    assert!(
        waited.is_err(),
        "the second opened while the first held the lock"
    );
    drop(first);
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the second opens once the first is gone");
    second.join().expect("join");
}
