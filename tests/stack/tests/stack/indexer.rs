//! The indexer as a process (`boxmaker-indexer`, run once as its oneshot unit would, or
//! `--watch`): it writes nothing outside `index/`, publishes a partition as a new file
//! (the one a search holds never changes), and rebuilds `index/` from the files.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use stack::{Daemon, Home};

use crate::notes::{notes_home, write};
use crate::session_search::owner_search;

/// Every path under `dir` (links not followed) but `skip` with what a write changes:
/// inode, size, mode, modification and change time. The stamp of `skip`'s parent is left
/// out (making `skip` changes it); a name added there is not.
fn tree(dir: &Path, skip: &Path) -> BTreeMap<PathBuf, (u64, u64, u32, i64, i64)> {
    let mut all = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("ls").flatten() {
            let path = e.path();
            if path == skip {
                continue;
            }
            let m = std::fs::symlink_metadata(&path).expect("stat");
            if m.is_dir() {
                todo.push(path.clone());
            }
            if skip.parent() == Some(path.as_path()) {
                all.insert(path, (0, 0, 0, 0, 0));
                continue;
            }
            let stamp = (
                m.ino(),
                m.size(),
                m.mode(),
                m.mtime_nsec() + m.mtime() * 1_000_000_000,
                m.ctime_nsec() + m.ctime() * 1_000_000_000,
            );
            all.insert(path, stamp);
        }
    }
    all
}

/// A secret note, a private one, and a session log; brokerd stopped.
fn filled(name: &str) -> Home {
    let (home, secrets) = notes_home(name);
    let _d = home.start();
    let key = format!(r#"{{"path":"{}/key.txt"}}"#, secrets.display());
    crate::notes::call(&home, "s-1", 1, "read_file", &key);
    write(&home, "s-1", 2, "vault", "the launch code is hunter2");
    write(&home, "s-2", 1, "plain", "buy a launch pad");
    let dir = home.root.join("home/sessions/s-1");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("0.jsonl"),
        "{\"type\":\"user\",\"time\":\"2026-12-01T10:00:00.000Z\",\"content\":\"launch now\"}\n",
    )
    .expect("log");
    std::fs::write(home.root.join("home/sessions/.changed"), "now").expect("trigger");
    home
}

#[test]
fn the_indexer_writes_nothing_outside_index() {
    let home = filled("indexer-writes");
    let root = home.root.join("home");
    let index = root.join("index");
    let before = tree(&home.root, &index);
    home.index();
    assert_eq!(tree(&home.root, &index), before);
    // Again, with something to do: a note rewritten, a log grown.
    std::fs::write(root.join("memory/notes/plain.md"), "edited by hand").expect("edit");
    let before_second = tree(&home.root, &index);
    home.index();
    assert_eq!(tree(&home.root, &index), before_second);
    let mut published: Vec<String> = std::fs::read_dir(&index)
        .expect("index")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    published.sort();
    assert_eq!(
        published,
        [
            ".lock",
            "private-untrusted.sqlite",
            "private.sqlite",
            "public-untrusted.sqlite",
            "public.sqlite",
            "secret-untrusted.sqlite",
            "secret.sqlite",
            "work"
        ]
    );
}

#[test]
fn a_published_file_a_search_holds_is_never_modified() {
    let home = filled("indexer-held");
    home.index();
    let secret = home.root.join("home/index/secret.sqlite");
    let held = std::fs::File::open(&secret).expect("open");
    let meta = held.metadata().expect("fstat");
    let bytes = std::fs::read(&secret).expect("read");
    // A new secret note: the next run publishes a new secret partition.
    let (ino, mtime) = (meta.ino(), meta.mtime_nsec());
    {
        let _d = home.start();
        write(&home, "s-1", 3, "vault2", "another launch secret");
    }
    home.index();
    assert_ne!(
        std::fs::metadata(&secret).expect("stat").ino(),
        ino,
        "a new file"
    );
    let now = held.metadata().expect("fstat");
    assert_eq!(
        (now.ino(), now.mtime_nsec(), now.size()),
        (ino, mtime, meta.size())
    );
    let mut again = Vec::new();
    std::io::Read::read_to_end(&mut &held, &mut again).expect("read");
    assert_eq!(again, bytes, "the held file is as it was");
    assert_eq!(now.nlink(), 0, "replaced, not written");
}

#[test]
fn deleting_the_index_rebuilds_it_with_the_same_hits() {
    let home = filled("indexer-rebuild");
    home.index();
    let _d = home.start();
    let before = owner_search(&home, "launch");
    assert_eq!(before.hits.len(), 3, "{before:?}");
    std::fs::remove_dir_all(home.root.join("home/index")).expect("delete");
    home.index();
    assert_eq!(owner_search(&home, "launch"), before);
}

#[test]
fn watching_it_indexes_a_note_written_a_moment_ago() {
    let (home, _secrets) = notes_home("indexer-watch");
    let _d = home.start();
    let mut cmd = std::process::Command::new(stack::bin("boxmaker-indexer"));
    cmd.arg("--config").arg(home.config()).arg("--watch");
    let watch = Daemon::spawn(cmd, &home.root);
    write(&home, "s-1", 1, "plain", "buy a launch pad");
    let found = stack::poll_until(Duration::from_secs(10), || {
        owner_search(&home, "launch").hits.len() == 1
    });
    assert!(found.is_some(), "{}", watch.log());
}

#[test]
fn the_configuration_may_come_from_boxmaker_config() {
    let (home, _secrets) = notes_home("indexer-env");
    let out = std::process::Command::new(stack::bin("boxmaker-indexer"))
        .env("BOXMAKER_CONFIG", home.config())
        .output()
        .expect("indexer");
    assert!(out.status.success(), "{out:?}");
    assert!(
        home.root
            .join("home/index/secret-untrusted.sqlite")
            .is_file()
    );
}
