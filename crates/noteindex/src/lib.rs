//! The full-text index of the notes: SQLite's FTS5 (BM25 ranking), one file per label
//! (class × untrusted flag), so that a search unit can be given only the partitions its
//! grant allows and its result labelled by what was bound. brokerd writes the partitions
//! ([`Partition`]); a search unit reads them read-only, opened immutable on a read-only bind
//! ([`search`]). The notes are the source of truth: a partition is rebuilt from them.

mod error;
mod search;

use std::path::Path;

use proto::DataClass;
use rusqlite::{Connection, OpenFlags, params};

pub use error::IndexError;
pub use search::{Hit, search};

/// The longest query, in bytes.
pub const MAX_QUERY: usize = 1024;

/// The most hits a search returns.
pub const MAX_HITS: usize = 20;

/// A partition's label: what a note in it reads as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Label {
    pub class: DataClass,
    pub untrusted: bool,
}

/// Every partition, lowest first.
pub const LABELS: [Label; 6] = {
    use DataClass::{Private, Public, Secret};
    const fn l(class: DataClass, untrusted: bool) -> Label {
        Label { class, untrusted }
    }
    [
        l(Public, false),
        l(Public, true),
        l(Private, false),
        l(Private, true),
        l(Secret, false),
        l(Secret, true),
    ]
};

impl Label {
    /// The partition's file name, e.g. `private-untrusted.sqlite`.
    pub fn file_name(self) -> String {
        let flag = if self.untrusted { "-untrusted" } else { "" };
        format!("{}{flag}.sqlite", self.class.as_str())
    }

    /// The label a partition's file name says, when it is one.
    pub fn of_file(file: &str) -> Option<Self> {
        LABELS.into_iter().find(|l| l.file_name() == file)
    }
}

const SCHEMA: &str = "CREATE VIRTUAL TABLE IF NOT EXISTS notes \
                      USING fts5(name UNINDEXED, hash UNINDEXED, text, tokenize = 'unicode61')";

/// One partition, open for writing (brokerd's). A rollback journal, not WAL: a reader on a
/// read-only bind cannot create WAL's `-shm`, and every change is one transaction, so a
/// crash mid-update leaves the partition as it was before it.
#[derive(Debug)]
pub struct Partition {
    conn: Connection,
}

impl Partition {
    /// Opens (creating when missing) the partition at `path` and checks it. A file that is
    /// not a sound index is [`IndexError::Corrupt`]: the caller removes it and rebuilds.
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        let err = IndexError::at(path);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(&err)?;
        conn.pragma_update(None, "journal_mode", "DELETE")
            .map_err(&err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(&err)?;
        conn.execute_batch(SCHEMA).map_err(&err)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(&err)?;
        // FTS5's own consistency check: the full-text index agrees with its content.
        conn.execute("INSERT INTO notes(notes) VALUES ('integrity-check')", [])
            .map_err(&err)?;
        if check != "ok" {
            return Err(IndexError::Corrupt {
                path: path.to_owned(),
                detail: check,
            });
        }
        Ok(Self { conn })
    }

    /// Every note in the partition, with the hash of the bytes it was indexed from.
    pub fn docs(&self) -> Result<Vec<(String, String)>, IndexError> {
        let err = IndexError::at(Path::new("index"));
        let mut stmt = self
            .conn
            .prepare("SELECT name, hash FROM notes")
            .map_err(&err)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(&err)?;
        rows.collect::<Result<_, _>>().map_err(&err)
    }

    /// Whether the partition holds no note.
    pub fn is_empty(&self) -> Result<bool, IndexError> {
        let err = IndexError::at(Path::new("index"));
        self.conn
            .query_row("SELECT NOT EXISTS (SELECT 1 FROM notes)", [], |r| r.get(0))
            .map_err(&err)
    }

    /// Puts `name` (hash `hash`) with `text` in the partition, replacing what it had of it,
    /// in one transaction.
    pub fn put(&mut self, name: &str, hash: &str, text: &str) -> Result<(), IndexError> {
        self.apply(&[], &[(name, hash, text)])
    }

    /// Removes the notes `remove`, then puts each `(name, hash, text)` of `put` (replacing
    /// what the partition had of it), all in one transaction: a rebuild is one commit.
    pub fn apply(&mut self, remove: &[&str], put: &[(&str, &str, &str)]) -> Result<(), IndexError> {
        let err = IndexError::at(Path::new("index"));
        let tx = self.conn.transaction().map_err(&err)?;
        {
            let mut delete = tx
                .prepare("DELETE FROM notes WHERE name = ?1")
                .map_err(&err)?;
            let mut insert = tx
                .prepare("INSERT INTO notes(name, hash, text) VALUES (?1, ?2, ?3)")
                .map_err(&err)?;
            for name in remove {
                delete.execute(params![name]).map_err(&err)?;
            }
            for (name, hash, text) in put {
                delete.execute(params![name]).map_err(&err)?;
                insert.execute(params![name, hash, text]).map_err(&err)?;
            }
        }
        tx.commit().map_err(&err)
    }

    /// Removes `name` from the partition (nothing when it is not there).
    pub fn remove(&mut self, name: &str) -> Result<(), IndexError> {
        let err = IndexError::at(Path::new("index"));
        self.conn
            .execute("DELETE FROM notes WHERE name = ?1", params![name])
            .map(drop)
            .map_err(&err)
    }
}
