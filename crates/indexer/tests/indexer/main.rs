//! The indexer on its own, through its library (one pass at a time): what it indexes and
//! remembers, how it publishes, and how it rebuilds.

mod progress;
mod publish;

use std::path::{Path, PathBuf};

use indexer::{Indexer, Paths};
use noteindex::{Hit, Kind, LABELS, Label};

/// A home with the four source directories and `index/`.
#[derive(Debug)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    pub fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!("bx-indexer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in ["notes", "note-state/labels", "sessions", "session-labels"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        Self { root }
    }

    pub fn paths(&self) -> Paths {
        Paths {
            notes: self.root.join("notes"),
            note_labels: self.root.join("note-state/labels"),
            sessions: self.root.join("sessions"),
            session_labels: self.root.join("session-labels"),
            index: self.root.join("index"),
        }
    }

    pub fn indexer(&self) -> Indexer {
        Indexer::open(self.paths()).expect("open")
    }

    /// Appends `line` (one JSON record and its newline) to session `id`'s epoch `epoch`.
    pub fn log(&self, id: &str, epoch: u32, line: &str) {
        use std::io::Write;
        let dir = self.root.join("sessions").join(id);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(format!("{epoch}.jsonl")))
            .expect("log");
        f.write_all(line.as_bytes()).expect("append");
    }

    /// Exports session `id`'s label as brokerd does.
    pub fn label(&self, id: &str, class: &str, untrusted: bool) {
        let path = self.root.join(format!("session-labels/{id}.json"));
        let text = format!(r#"{{"class":"{class}","untrusted":{untrusted}}}"#);
        std::fs::write(path, text).expect("label");
    }

    pub fn published(&self, l: Label) -> PathBuf {
        self.root.join("index").join(l.file_name())
    }

    /// `query` over every published partition: each hit with the label it was found at.
    pub fn find(&self, query: &str, kind: Option<Kind>) -> Vec<(Hit, Label)> {
        let mut all = Vec::new();
        for l in LABELS {
            let path = self.published(l);
            for h in noteindex::search(&[path.as_path()], query, kind).expect("search") {
                all.push((h, l));
            }
        }
        all
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A user record of a session log, its line.
pub fn user(text: &str) -> String {
    format!(r#"{{"type":"user","time":"2026-12-01T10:00:00.000Z","content":"{text}"}}"#) + "\n"
}

pub fn label(class: proto::DataClass, untrusted: bool) -> Label {
    Label { class, untrusted }
}

pub fn inode(path: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).expect("meta"))
}
