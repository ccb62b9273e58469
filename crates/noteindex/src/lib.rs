//! The full-text index of the notes and the session logs: SQLite's FTS5 (BM25 ranking),
//! one file per label (class × untrusted flag), so that a search unit can be given only the
//! partitions its grant allows and its result labelled by what was bound. A partition holds
//! both kinds of documents (a note, a session log record), told apart by a kind column.
//! The indexer (`boxmaker-indexer`) writes the partitions ([`Partition`]) and publishes
//! copies that never change; a search unit reads those read-only, opened immutable on a
//! read-only bind ([`search`]). The notes and logs are the source of truth: a partition is
//! rebuilt from them.

mod error;
mod label;
mod search;

use std::path::Path;

use proto::DataClass;
use rusqlite::{Connection, OpenFlags, params};

pub use error::IndexError;
pub use label::{MAX_RECORD, UNKNOWN, note_label, record_of};
pub use search::{Hit, holds_any, search};

/// The longest query, in bytes.
pub const MAX_QUERY: usize = 1024;

/// The most hits a search returns.
pub const MAX_HITS: usize = 20;

/// A partition's label: what a document in it reads as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

    /// Its place in [`LABELS`].
    pub fn position(self) -> usize {
        LABELS
            .iter()
            .position(|l| *l == self)
            .unwrap_or(LABELS.len() - 1)
    }
}

/// What a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A note: `name` is the note's name.
    Note,
    /// One record of a session log: `name` is the session, with its epoch.
    Session,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Note => "note",
            Self::Session => "session",
        }
    }
}

/// `meta` names each document (its kind, its note or session, the epoch and the byte
/// offset of a log record); `docs` is the full-text index of their text, rowid for rowid.
const SCHEMA: &str = "\
    CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, \
        name TEXT NOT NULL, epoch INTEGER, at INTEGER); \
    CREATE INDEX IF NOT EXISTS meta_name ON meta (kind, name, epoch, at); \
    CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(text, tokenize = 'unicode61');";

/// One partition, open for writing (the indexer's working copy). A rollback journal, not
/// WAL: every change is one transaction, so a crash mid-update leaves it as it was before.
#[derive(Debug)]
pub struct Partition {
    conn: Connection,
    path: std::path::PathBuf,
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
        conn.execute("INSERT INTO docs(docs) VALUES ('integrity-check')", [])
            .map_err(&err)?;
        let (meta, docs): (i64, i64) = conn
            .query_row(
                "SELECT (SELECT count(*) FROM meta), (SELECT count(*) FROM docs)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(&err)?;
        if check != "ok" || meta != docs {
            return Err(IndexError::Corrupt {
                path: path.to_owned(),
                detail: if check == "ok" {
                    format!("{meta} documents named, {docs} indexed")
                } else {
                    check
                },
            });
        }
        Ok(Self {
            conn,
            path: path.to_owned(),
        })
    }

    /// Whether the partition holds no document.
    pub fn is_empty(&self) -> Result<bool, IndexError> {
        self.conn
            .query_row("SELECT NOT EXISTS (SELECT 1 FROM meta)", [], |r| r.get(0))
            .map_err(IndexError::at(&self.path))
    }

    /// A batch of changes, one transaction: committed whole or not at all.
    pub fn batch(&mut self) -> Result<Batch<'_>, IndexError> {
        let tx = self
            .conn
            .transaction()
            .map_err(IndexError::at(&self.path))?;
        Ok(Batch {
            tx,
            path: &self.path,
            changed: false,
        })
    }
}

/// Changes to one partition, in one transaction.
#[derive(Debug)]
pub struct Batch<'a> {
    tx: rusqlite::Transaction<'a>,
    path: &'a Path,
    changed: bool,
}

impl Batch<'_> {
    fn delete(
        &mut self,
        filter: &str,
        args: impl rusqlite::Params + Copy,
    ) -> Result<(), IndexError> {
        let err = IndexError::at(self.path);
        self.tx
            .execute(
                &format!("DELETE FROM docs WHERE rowid IN (SELECT id FROM meta WHERE {filter})"),
                args,
            )
            .map_err(&err)?;
        let n = self
            .tx
            .execute(&format!("DELETE FROM meta WHERE {filter}"), args)
            .map_err(&err)?;
        self.changed |= n > 0;
        Ok(())
    }

    fn insert(
        &mut self,
        kind: Kind,
        name: &str,
        at: Option<(u64, u64)>,
        text: &str,
    ) -> Result<(), IndexError> {
        let err = IndexError::at(self.path);
        let (epoch, at) = at.map_or((None, None), |(e, a)| (Some(e), Some(a)));
        let epoch = epoch.map(|e| i64::try_from(e).unwrap_or(i64::MAX));
        let at = at.map(|a| i64::try_from(a).unwrap_or(i64::MAX));
        self.tx
            .execute(
                "INSERT INTO meta(kind, name, epoch, at) VALUES (?1, ?2, ?3, ?4)",
                params![kind.as_str(), name, epoch, at],
            )
            .map_err(&err)?;
        let id = self.tx.last_insert_rowid();
        self.tx
            .execute(
                "INSERT INTO docs(rowid, text) VALUES (?1, ?2)",
                params![id, text],
            )
            .map_err(&err)?;
        self.changed = true;
        Ok(())
    }

    /// Removes note `name` (nothing when it is not there).
    pub fn remove_note(&mut self, name: &str) -> Result<(), IndexError> {
        self.delete("kind = 'note' AND name = ?1", params![name])
    }

    /// Puts note `name` with `text`; the caller removed what there was of it.
    pub fn put_note(&mut self, name: &str, text: &str) -> Result<(), IndexError> {
        self.insert(Kind::Note, name, None, text)
    }

    /// Removes every record of session `session`.
    pub fn remove_session(&mut self, session: &str) -> Result<(), IndexError> {
        self.delete("kind = 'session' AND name = ?1", params![session])
    }

    /// Removes the records of `session`'s epoch `epoch` from byte `from` of its log on.
    pub fn remove_log_from(
        &mut self,
        session: &str,
        epoch: u64,
        from: u64,
    ) -> Result<(), IndexError> {
        let epoch = i64::try_from(epoch).unwrap_or(i64::MAX);
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        self.delete(
            "kind = 'session' AND name = ?1 AND epoch = ?2 AND at >= ?3",
            params![session, epoch, from],
        )
    }

    /// Puts the log record of `session`'s epoch `epoch` that starts at byte `at`.
    pub fn put_record(
        &mut self,
        session: &str,
        epoch: u64,
        at: u64,
        text: &str,
    ) -> Result<(), IndexError> {
        self.insert(Kind::Session, session, Some((epoch, at)), text)
    }

    /// Commits the batch; says whether it changed anything.
    pub fn commit(self) -> Result<bool, IndexError> {
        let changed = self.changed;
        self.tx.commit().map_err(IndexError::at(self.path))?;
        Ok(changed)
    }
}
