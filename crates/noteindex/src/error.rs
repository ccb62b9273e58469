//! Why the index could not be written or searched.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum IndexError {
    /// The query is not FTS5 query syntax (an unbalanced quote, a bare operator, an unknown
    /// column): SQLite's message says where.
    Query { detail: String },
    /// The query is empty or longer than [`crate::MAX_QUERY`] bytes.
    QueryLength { len: usize },
    /// A partition is not a sound index (not SQLite, or its full-text index disagrees with
    /// its content). The indexer rebuilds it from the notes and logs.
    Corrupt { path: PathBuf, detail: String },
    /// Anything else SQLite refused (a full disk, a missing file).
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
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
                    source,
                }
            }
        }
    }
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Query { detail } => write!(f, "the search query is not valid: {detail}"),
            Self::QueryLength { len } => write!(
                f,
                "a search query is 1 to {} bytes, not {len}",
                crate::MAX_QUERY
            ),
            Self::Corrupt { path, detail } => {
                write!(f, "the index {} is corrupt: {detail}", path.display())
            }
            Self::Sqlite { path, source } => {
                write!(f, "the index {} failed: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for IndexError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Sqlite { source, .. } => Some(source),
            _ => None,
        }
    }
}
