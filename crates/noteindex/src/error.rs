//! Why the index could not be written or searched. Each text prints what it wraps, which
//! `source()` does not return (docs/decisions.md F16).

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The query is not FTS5 query syntax (an unbalanced quote, a bare operator, an unknown
    /// column): SQLite's message says where.
    #[error("the search query is not valid: {detail}")]
    Query { detail: String },
    /// The query is empty or longer than [`crate::MAX_QUERY`] bytes.
    #[error("a search query is 1 to {} bytes, not {len}", crate::MAX_QUERY)]
    QueryLength { len: usize },
    /// A partition is not a sound index (not SQLite, or its full-text index disagrees with
    /// its content). The indexer rebuilds it from the notes and logs.
    #[error("the index {} is corrupt: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    /// Anything else SQLite refused (a full disk, a missing file).
    #[error("the index {} failed: {error}", path.display())]
    Sqlite {
        path: PathBuf,
        error: rusqlite::Error,
    },
}

impl IndexError {
    pub(crate) fn at(path: &Path) -> impl Fn(rusqlite::Error) -> Self + '_ {
        move |source| {
            let corrupt = matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
            );
            if corrupt {
                Self::Corrupt {
                    path: path.to_owned(),
                    detail: source.to_string(),
                }
            } else {
                Self::Sqlite {
                    path: path.to_owned(),
                    error: source,
                }
            }
        }
    }
}
