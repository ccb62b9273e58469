//! A search over the partitions a unit was given: each opened read-only and immutable (the
//! bind is read-only, and a published partition is never written after its rename), the
//! hits of all merged by BM25 rank.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};

use crate::{IndexError, Kind, MAX_HITS, MAX_QUERY};

/// One document found: a note (its name) or a session log record (its session and epoch),
/// a snippet around the match (`[`…`]` mark the terms), and its BM25 rank (lower is better;
/// ranks of different partitions are compared as they are).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub kind: Kind,
    /// The note's name, or the session's id.
    pub name: String,
    /// A session record's epoch; `None` for a note.
    pub epoch: Option<u64>,
    pub snippet: String,
    pub rank: f64,
}

/// The URI of an immutable read-only open: SQLite then takes no lock and writes nothing
/// (no journal, no `-shm`), which a read-only bind needs.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

fn open_immutable(path: &Path) -> Result<Connection, IndexError> {
    Connection::open_with_flags(
        immutable_uri(path),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(IndexError::at(path))
}

/// Whether the published partition at `path` holds any document, of either kind (a unit
/// it is bound into could read them all). Opened immutable: it never changes.
pub fn holds_any(path: &Path) -> Result<bool, IndexError> {
    open_immutable(path)?
        .query_row("SELECT EXISTS (SELECT 1 FROM meta)", [], |r| r.get(0))
        .map_err(IndexError::at(path))
}

/// Searches the partitions at `paths` for `query` (FTS5 query syntax), documents of `kind`
/// only (`None`: both), best hits first, at most [`MAX_HITS`].
pub fn search(paths: &[&Path], query: &str, kind: Option<Kind>) -> Result<Vec<Hit>, IndexError> {
    if query.trim().is_empty() || query.len() > MAX_QUERY {
        return Err(IndexError::QueryLength { len: query.len() });
    }
    let mut hits = Vec::new();
    for path in paths {
        let conn = open_immutable(path)?;
        let mut stmt = conn
            .prepare(
                "SELECT m.kind, m.name, m.epoch, snippet(docs, 0, '[', ']', '…', 12), bm25(docs) \
                 FROM docs JOIN meta m ON m.id = docs.rowid \
                 WHERE docs MATCH ?1 AND (?2 IS NULL OR m.kind = ?2) ORDER BY rank LIMIT ?3",
            )
            .map_err(IndexError::at(path))?;
        let rows = stmt
            .query_map(params![query, kind.map(Kind::as_str), MAX_HITS], |r| {
                let kind: String = r.get(0)?;
                let epoch: Option<i64> = r.get(2)?;
                Ok(Hit {
                    kind: if kind == "session" {
                        Kind::Session
                    } else {
                        Kind::Note
                    },
                    name: r.get(1)?,
                    epoch: epoch.and_then(|e| u64::try_from(e).ok()),
                    snippet: r.get(3)?,
                    rank: r.get(4)?,
                })
            })
            .map_err(|e| query_error(e, path))?;
        for row in rows {
            hits.push(row.map_err(|e| query_error(e, path))?);
        }
    }
    hits.sort_by(|a, b| a.rank.total_cmp(&b.rank));
    hits.truncate(MAX_HITS);
    Ok(hits)
}

/// A plain SQLite error while matching is the query's fault (FTS5 reports its syntax errors
/// so); corruption and the rest are the index's.
fn query_error(e: rusqlite::Error, path: &Path) -> IndexError {
    match &e {
        rusqlite::Error::SqliteFailure(f, Some(msg))
            if f.extended_code == rusqlite::ffi::SQLITE_ERROR =>
        {
            IndexError::Query {
                detail: msg.clone(),
            }
        }
        _ => IndexError::at(path)(e),
    }
}
