//! Publication: a partition is published by rename, never written after, and only when it
//! changed (or its published file is not the one the indexer left there).

use std::io::Read;

use proto::DataClass::Private;

use crate::{Home, inode, label, user};

#[test]
fn a_published_file_is_never_written_after_its_rename() {
    let home = Home::new("publish");
    home.label("s-1", "private", false);
    home.log("s-1", 0, &user("first words"));
    let mut ix = home.indexer();
    ix.pass().expect("pass");
    let path = home.published(label(Private, false));
    let held = inode(&path);
    let mut open = std::fs::File::open(&path).expect("open");
    let mut bytes = Vec::new();
    open.read_to_end(&mut bytes).expect("read");
    let other = home.published(label(proto::DataClass::Public, false));
    let untouched = inode(&other);
    home.log("s-1", 0, &user("second words"));
    let r = ix.pass().expect("pass");
    assert_eq!(r.published, [label(Private, false)]);
    // A new file in its place; the one a search holds is as it was.
    assert_ne!(inode(&path), held);
    let mut again = Vec::new();
    std::io::Seek::rewind(&mut open).expect("rewind");
    open.read_to_end(&mut again).expect("read");
    assert_eq!(again, bytes);
    assert_eq!(
        inode(&other),
        untouched,
        "an unchanged partition is not published"
    );
    // A published file damaged or removed is published again.
    std::fs::write(&other, b"garbage").expect("damage");
    std::fs::remove_file(&path).expect("remove");
    let r = ix.pass().expect("pass");
    assert_eq!(r.published.len(), 2, "{r:?}");
    assert_eq!(home.find("words", None).len(), 2);
    let names: Vec<String> = std::fs::read_dir(home.root.join("index"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
}
