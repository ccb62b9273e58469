//! A search over the partitions a unit was given: each opened read-only and immutable (the
//! bind is read-only, and brokerd holds its writes until the unit ends), the hits of all
//! merged by BM25 rank.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};

use crate::{IndexError, MAX_HITS, MAX_QUERY};

/// One note found: its name, a snippet around the match (`[`…`]` mark the terms), and its
/// BM25 rank (lower is better; ranks of different partitions are compared as they are).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub name: String,
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

/// Searches the partitions at `paths` for `query` (FTS5 query syntax), best hits first, at
/// most [`MAX_HITS`].
pub fn search(paths: &[&Path], query: &str) -> Result<Vec<Hit>, IndexError> {
    if query.trim().is_empty() || query.len() > MAX_QUERY {
        return Err(IndexError::QueryLength { len: query.len() });
    }
    let mut hits = Vec::new();
    for path in paths {
        let err = IndexError::at(path);
        let conn = Connection::open_with_flags(
            immutable_uri(path),
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(&err)?;
        let mut stmt = conn
            .prepare(
                "SELECT name, snippet(notes, 2, '[', ']', '…', 12), bm25(notes) FROM notes \
                 WHERE notes MATCH ?1 ORDER BY rank LIMIT ?2",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map(params![query, MAX_HITS], |r| {
                Ok(Hit {
                    name: r.get(0)?,
                    snippet: r.get(1)?,
                    rank: r.get(2)?,
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
