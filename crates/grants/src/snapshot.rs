//! The grant snapshot: every `grants/<id>.toml`, parsed by `proto`, checked, and hashed.
//! A snapshot is immutable; a reload (SIGHUP) builds a new one for later calls, and a call
//! in flight keeps the one it started with.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use proto::{Grant, Hash32};

use crate::constraints;
use crate::unitpath::{CredentialNameError, UnitPathError};

#[derive(Debug)]
pub struct Snapshot {
    hash: Hash32,
    grants: BTreeMap<String, Grant>,
    /// Each grant's canonical text (`Grant::canonical`), what the audit records.
    texts: BTreeMap<String, String>,
}

/// Why the grants directory cannot be loaded: the file, the place and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.place())]
pub struct GrantsError {
    pub file: PathBuf,
    /// 1-based; 0 when the reason is about the whole file.
    pub line: usize,
    pub column: usize,
    pub reason: String,
}

impl GrantsError {
    /// `file:line:column: reason`, or `file: reason` when the reason is the whole file's.
    fn place(&self) -> String {
        if self.line == 0 {
            format!("{}: {}", self.file.display(), self.reason)
        } else {
            format!(
                "{}:{}:{}: {}",
                self.file.display(),
                self.line,
                self.column,
                self.reason
            )
        }
    }
}

/// Why one file of the grants directory is refused, before the file and place are added.
#[derive(Debug, thiserror::Error)]
enum Refused {
    /// Reading the directory or the file.
    #[error("{0}")]
    Io(io::Error),
    #[error("a hidden grant file: grants are named <id>.toml")]
    Hidden,
    #[error("not a grant file: grants are named <id>.toml")]
    NotGrantFile,
    /// The file name is not a grant id.
    #[error("grant id {id:?} must be 1 to 64 characters of [a-z0-9_-] (it is the file name)")]
    Id { id: String },
    #[error("not a regular file")]
    NotRegular,
    #[error("larger than {MAX_GRANT_FILE} bytes")]
    TooLarge,
    #[error("{0}")]
    Secret(CredentialNameError),
    #[error("{0}")]
    Path(UnitPathError),
    /// What `constraints::validate` says of the grant's constraints.
    #[error("{0}")]
    Constraints(constraints::InvalidGrant),
    /// `always_ask = true` on a grant that never asks.
    #[error(
        "always_ask = true means nothing on a grant that never asks (it is for mode = \"ask\", \
         or if_untrusted = \"ask\"): remove it, or make the grant ask"
    )]
    AlwaysAsk,
}

impl From<CredentialNameError> for Refused {
    fn from(e: CredentialNameError) -> Self {
        Self::Secret(e)
    }
}

impl From<UnitPathError> for Refused {
    fn from(e: UnitPathError) -> Self {
        Self::Path(e)
    }
}

/// The largest grant file read; a grant is a few lines.
const MAX_GRANT_FILE: u64 = 64 * 1024;

/// A reason about the whole of `file` (no line).
fn whole(file: &Path, reason: Refused) -> GrantsError {
    GrantsError {
        file: file.to_owned(),
        line: 0,
        column: 0,
        reason: reason.to_string(),
    }
}

/// One entry of the grants directory: `(id, text)` for a grant file, `None` for a dot file
/// that is not one, or why it is refused.
fn read_entry(path: &Path) -> Result<Option<(String, String)>, GrantsError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name.starts_with('.') {
        // An editor's backup or a hidden grant: a hidden `.toml` would be a grant silently
        // dropped (a deny, say), so it is refused; other dot files are not grants.
        if name.ends_with(".toml") {
            return Err(whole(path, Refused::Hidden));
        }
        return Ok(None);
    }
    let Some(id) = name.strip_suffix(".toml") else {
        return Err(whole(path, Refused::NotGrantFile));
    };
    check_id(id).map_err(|reason| whole(path, reason))?;
    // NixOS links /etc files into the store, so links are followed here; the grants
    // directory is the owner's, written by the module, never by a role.
    let meta = std::fs::metadata(path).map_err(|e| whole(path, Refused::Io(e)))?;
    if !meta.is_file() {
        return Err(whole(path, Refused::NotRegular));
    }
    if meta.len() > MAX_GRANT_FILE {
        return Err(whole(path, Refused::TooLarge));
    }
    let text = std::fs::read_to_string(path).map_err(|e| whole(path, Refused::Io(e)))?;
    Ok(Some((id.to_owned(), text)))
}

impl Snapshot {
    /// Loads every grant in `dir`. Any bad file refuses the whole snapshot: a policy is
    /// never half loaded.
    pub fn load(dir: &Path) -> Result<Self, GrantsError> {
        let entries = std::fs::read_dir(dir).map_err(|e| whole(dir, Refused::Io(e)))?;
        let mut files = BTreeMap::new();
        for entry in entries {
            let path = entry.map_err(|e| whole(dir, Refused::Io(e)))?.path();
            if let Some((id, text)) = read_entry(&path)? {
                files.insert(id, (path, text));
            }
        }
        Self::from_texts(files)
    }

    /// Every reason `dir` does not load, each file on its own (where [`Snapshot::load`]
    /// stops at the first), in the order of the file names; empty when it loads.
    pub fn problems(dir: &Path) -> Vec<GrantsError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => return vec![whole(dir, Refused::Io(e))],
        };
        let mut paths = Vec::new();
        let mut problems = Vec::new();
        for entry in entries {
            match entry {
                Ok(e) => paths.push(e.path()),
                Err(e) => problems.push(whole(dir, Refused::Io(e))),
            }
        }
        paths.sort();
        for path in paths {
            let one = read_entry(&path).and_then(|found| match found {
                Some((id, text)) => {
                    Self::from_texts(BTreeMap::from([(id, (path.clone(), text))])).map(drop)
                }
                None => Ok(()),
            });
            if let Err(e) = one {
                problems.push(e);
            }
        }
        problems
    }

    /// Builds a snapshot from `(id → (path, text))`.
    pub fn from_texts(files: BTreeMap<String, (PathBuf, String)>) -> Result<Self, GrantsError> {
        let mut grants = BTreeMap::new();
        for (id, (path, text)) in &files {
            let grant = Grant::from_toml(text).map_err(|e| GrantsError {
                file: path.clone(),
                line: e.line,
                column: e.column,
                reason: e.reason,
            })?;
            check_grant(&grant).map_err(|reason| GrantsError {
                file: path.clone(),
                line: 0,
                column: 0,
                reason: reason.to_string(),
            })?;
            grants.insert(id.clone(), grant);
        }
        // Length-prefixed, so that no two different sets of files hash alike.
        let hash = Hash32::of_parts(
            files
                .iter()
                .flat_map(|(id, (_, text))| [id.as_bytes(), text.as_bytes()]),
        );
        let texts = grants
            .iter()
            .map(|(id, g)| (id.clone(), g.canonical()))
            .collect();
        Ok(Self {
            hash,
            grants,
            texts,
        })
    }

    pub fn hash(&self) -> Hash32 {
        self.hash
    }

    pub fn ids(&self) -> Vec<String> {
        self.grants.keys().cloned().collect()
    }

    /// The canonical text of every grant, by id.
    pub fn texts(&self) -> &BTreeMap<String, String> {
        &self.texts
    }

    /// The canonical text of each grant that is new or changed against `old`, by id.
    pub fn changed_since(&self, old: &Snapshot) -> BTreeMap<String, String> {
        self.texts
            .iter()
            .filter(|(id, text)| old.texts.get(*id) != Some(*text))
            .map(|(id, text)| (id.clone(), text.clone()))
            .collect()
    }

    pub fn get(&self, id: &str) -> Option<&Grant> {
        self.grants.get(id)
    }

    /// Every grant, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Grant)> {
        self.grants.iter().map(|(id, g)| (id.as_str(), g))
    }

    /// Every grant for `tool`, in id order.
    pub fn for_tool<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = (&'a str, &'a Grant)> {
        self.iter().filter(move |(_, g)| g.tool == tool)
    }
}

/// Grant ids name files and appear in audit records and approval cards.
fn check_id(id: &str) -> Result<(), Refused> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(Refused::Id { id: id.to_owned() })
    }
}

fn check_grant(grant: &Grant) -> Result<(), Refused> {
    // A key that changes nothing is refused, so a grant never silently means less than it
    // says: `always_ask` only withholds the session answer from a grant that asks.
    let asks = match grant.mode {
        proto::Mode::Ask => true,
        proto::Mode::Auto => grant.if_untrusted == Some(proto::IfUntrusted::Ask),
        proto::Mode::Deny => false,
    };
    if grant.always_ask && !asks {
        return Err(Refused::AlwaysAsk);
    }
    if let Some(secret) = &grant.secret {
        crate::unitpath::check_credential_name(secret)?;
    }
    if grant.mode != proto::Mode::Deny {
        // A run's workdir is bound into its unit like the paths.
        let c = &grant.constraints;
        for path in c.paths.iter().chain(&c.workdir) {
            crate::unitpath::check_granted_path(path)?;
        }
    }
    constraints::validate(grant).map_err(Refused::Constraints)
}
