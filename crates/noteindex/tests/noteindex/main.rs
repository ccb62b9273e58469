//! The index on its own: partitions written, searched read-only and immutable, a syntax
//! error typed, a corrupt file recognised, a crash mid-update losing nothing.

use noteindex::{IndexError, Kind, LABELS, Label, Partition, holds_any, search};

/// Puts note `name` with `text` in one transaction, replacing what there was of it.
fn put(p: &mut Partition, name: &str, text: &str) {
    let mut b = p.batch().expect("batch");
    b.remove_note(name).expect("remove");
    b.put_note(name, text).expect("put");
    b.commit().expect("commit");
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("noteindex-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir
}

#[test]
fn partitions_are_named_by_label() {
    let names: Vec<String> = LABELS.iter().map(|l| l.file_name()).collect();
    assert_eq!(names[0], "public.sqlite");
    assert_eq!(names[5], "secret-untrusted.sqlite");
    for l in LABELS {
        assert_eq!(Label::of_file(&l.file_name()), Some(l));
    }
    assert_eq!(Label::of_file("secret.db"), None);
}

#[test]
fn found_by_rank_across_partitions_read_only() {
    let dir = tmp("rank");
    let a = dir.join("public.sqlite");
    let b = dir.join("secret.sqlite");
    let mut pa = Partition::open(&a).expect("open a");
    put(&mut pa, "garden", "tomatoes and basil in the garden");
    put(&mut pa, "shop", "buy tomatoes");
    put(&mut pa, "shop", "buy bread");
    let mut pb = Partition::open(&b).expect("open b");
    put(&mut pb, "vault", "tomatoes tomatoes tomatoes");
    drop((pa, pb));
    // Read-only files: an immutable open writes nothing, not even a journal.
    for p in [&a, &b] {
        let mut perm = std::fs::metadata(p).expect("meta").permissions();
        perm.set_readonly(true);
        std::fs::set_permissions(p, perm).expect("chmod");
    }
    let hits = search(&[a.as_path(), b.as_path()], "tomatoes", None).expect("search");
    let names: Vec<&str> = hits.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["vault", "garden"]);
    assert!(hits[1].snippet.contains("[tomatoes]"), "{:?}", hits[1]);
    let only_a = search(&[a.as_path()], "bread", None).expect("search");
    assert_eq!(only_a.len(), 1);
    assert!(
        search(&[a.as_path()], "vault", None)
            .expect("search")
            .is_empty()
    );
    assert_eq!(
        std::fs::read_dir(&dir).expect("ls").count(),
        2,
        "nothing written"
    );
}

#[test]
fn a_syntax_error_is_typed() {
    let dir = tmp("syntax");
    let a = dir.join("public.sqlite");
    put(&mut Partition::open(&a).expect("open"), "n", "x");
    for q in ["\"unbalanced", "AND", "nocolumn: x", "x NEAR("] {
        match search(&[a.as_path()], q, None) {
            Err(IndexError::Query { .. }) => {}
            other => panic!("{q}: {other:?}"),
        }
    }
    match search(&[a.as_path()], " ", None) {
        Err(IndexError::QueryLength { len: 1 }) => {}
        other => panic!("{other:?}"),
    }
    let long = "x".repeat(noteindex::MAX_QUERY + 1);
    assert!(matches!(
        search(&[a.as_path()], &long, None),
        Err(IndexError::QueryLength { .. })
    ));
}

#[test]
fn a_corrupt_file_is_recognised() {
    let dir = tmp("corrupt");
    let a = dir.join("public.sqlite");
    std::fs::write(&a, b"not a database at all, just some bytes to be read").expect("write");
    match Partition::open(&a) {
        Err(IndexError::Corrupt { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        search(&[a.as_path()], "x", None),
        Err(IndexError::Corrupt { .. })
    ));
}

#[test]
fn an_unfinished_update_is_rolled_back() {
    let dir = tmp("crash");
    let a = dir.join("private.sqlite");
    let mut p = Partition::open(&a).expect("open");
    put(&mut p, "kept", "kept text");
    drop(p);
    // A crash mid-update: a transaction begun, pages spilled into the file, the process
    // gone. Copying the file and its journal then is what a crash leaves on disk.
    let conn = rusqlite::Connection::open(&a).expect("open");
    conn.execute_batch(
        "PRAGMA cache_size = 1; BEGIN; DELETE FROM docs; DELETE FROM meta; \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) \
         INSERT INTO docs(rowid, text) SELECT i + 10, printf('%.*c', 2000, 'y') FROM n;",
    )
    .expect("begin");
    let crashed = tmp("crash-after");
    let b = crashed.join("private.sqlite");
    std::fs::copy(&a, &b).expect("copy");
    let journal = dir.join("private.sqlite-journal");
    assert!(journal.exists(), "the update is mid-way");
    std::fs::copy(&journal, crashed.join("private.sqlite-journal")).expect("copy journal");
    drop(conn);
    let p = Partition::open(&b).expect("reopen");
    assert!(!p.is_empty().expect("empty"));
    drop(p);
    let hits = search(&[b.as_path()], "kept OR y*", None).expect("search");
    let names: Vec<&str> = hits.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["kept"]);
}

#[test]
fn notes_and_session_records_share_a_partition_told_apart_by_kind() {
    let dir = tmp("kinds");
    let a = dir.join("secret.sqlite");
    let mut p = Partition::open(&a).expect("open");
    assert!(p.is_empty().expect("empty"));
    let mut b = p.batch().expect("batch");
    b.put_note("vault", "the launch code").expect("note");
    b.put_record("s-1", 0, 0, "what is the launch code")
        .expect("record");
    b.put_record("s-1", 0, 120, "the launch code is hunter2")
        .expect("record");
    b.put_record("s-1", 1, 0, "launch again").expect("record");
    assert!(b.commit().expect("commit"), "a change");
    drop(p);
    assert!(holds_any(&a).expect("holds"));
    let notes = search(&[a.as_path()], "launch", Some(Kind::Note)).expect("search");
    assert_eq!(notes.len(), 1);
    assert_eq!(
        (notes[0].kind, notes[0].name.as_str(), notes[0].epoch),
        (Kind::Note, "vault", None)
    );
    let records = search(&[a.as_path()], "launch", Some(Kind::Session)).expect("search");
    assert_eq!(records.len(), 3);
    assert!(
        records
            .iter()
            .all(|h| h.kind == Kind::Session && h.name == "s-1")
    );
    assert_eq!(
        search(&[a.as_path()], "launch", None)
            .expect("search")
            .len(),
        4
    );
    // Removing a log's records from a byte on, then a whole session.
    let mut p = Partition::open(&a).expect("open");
    let mut b = p.batch().expect("batch");
    b.remove_log_from("s-1", 0, 100).expect("remove");
    assert!(b.commit().expect("commit"));
    let left = search(&[a.as_path()], "launch", Some(Kind::Session)).expect("search");
    assert_eq!(left.len(), 2, "{left:?}");
    let mut b = p.batch().expect("batch");
    b.remove_session("s-2").expect("nothing");
    assert!(
        !b.commit().expect("commit"),
        "removing nothing is no change"
    );
    let mut b = p.batch().expect("batch");
    b.remove_session("s-1").expect("remove");
    b.remove_note("vault").expect("remove");
    assert!(b.commit().expect("commit"));
    assert!(p.is_empty().expect("empty"));
    drop(p);
    assert!(!holds_any(&a).expect("holds"));
}

#[test]
fn a_document_named_but_not_indexed_is_corruption() {
    let dir = tmp("halves");
    let a = dir.join("public.sqlite");
    put(&mut Partition::open(&a).expect("open"), "n", "some text");
    let conn = rusqlite::Connection::open(&a).expect("open");
    conn.execute("DELETE FROM docs", []).expect("delete");
    drop(conn);
    match Partition::open(&a) {
        Err(IndexError::Corrupt { detail, .. }) => {
            assert_eq!(detail, "1 documents named, 0 indexed");
        }
        other => panic!("{other:?}"),
    }
}
