//! The index on its own: partitions written, searched read-only and immutable, a syntax
//! error typed, a corrupt file recognised, a crash mid-update losing nothing.

use noteindex::{IndexError, LABELS, Label, Partition, search};

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
    pa.put("garden", "h1", "tomatoes and basil in the garden")
        .expect("put");
    pa.put("shop", "h2", "buy tomatoes").expect("put");
    pa.put("shop", "h3", "buy bread").expect("replace");
    let mut pb = Partition::open(&b).expect("open b");
    pb.put("vault", "h4", "tomatoes tomatoes tomatoes")
        .expect("put");
    drop((pa, pb));
    // Read-only files: an immutable open writes nothing, not even a journal.
    for p in [&a, &b] {
        let mut perm = std::fs::metadata(p).expect("meta").permissions();
        perm.set_readonly(true);
        std::fs::set_permissions(p, perm).expect("chmod");
    }
    let hits = search(&[a.as_path(), b.as_path()], "tomatoes").expect("search");
    let names: Vec<&str> = hits.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["vault", "garden"]);
    assert!(hits[1].snippet.contains("[tomatoes]"), "{:?}", hits[1]);
    let only_a = search(&[a.as_path()], "bread").expect("search");
    assert_eq!(only_a.len(), 1);
    assert!(search(&[a.as_path()], "vault").expect("search").is_empty());
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
    Partition::open(&a)
        .expect("open")
        .put("n", "h", "x")
        .expect("put");
    for q in ["\"unbalanced", "AND", "nocolumn: x", "x NEAR("] {
        match search(&[a.as_path()], q) {
            Err(IndexError::Query { .. }) => {}
            other => panic!("{q}: {other:?}"),
        }
    }
    match search(&[a.as_path()], " ") {
        Err(IndexError::QueryLength { len: 1 }) => {}
        other => panic!("{other:?}"),
    }
    let long = "x".repeat(noteindex::MAX_QUERY + 1);
    assert!(matches!(
        search(&[a.as_path()], &long),
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
        search(&[a.as_path()], "x"),
        Err(IndexError::Corrupt { .. })
    ));
}

#[test]
fn an_unfinished_update_is_rolled_back() {
    let dir = tmp("crash");
    let a = dir.join("private.sqlite");
    let mut p = Partition::open(&a).expect("open");
    p.put("kept", "h1", "kept text").expect("put");
    drop(p);
    // A crash mid-update: a transaction begun, pages spilled into the file, the process
    // gone. Copying the file and its journal then is what a crash leaves on disk.
    let conn = rusqlite::Connection::open(&a).expect("open");
    conn.execute_batch(
        "PRAGMA cache_size = 1; BEGIN; DELETE FROM notes; \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) \
         INSERT INTO notes(name, hash, text) SELECT 'x' || i, 'h', printf('%.*c', 2000, 'y') FROM n;",
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
    assert_eq!(
        p.docs().expect("docs"),
        [("kept".to_owned(), "h1".to_owned())]
    );
}
