//! What a path call binds into its tool unit: the one path the call covers (the file, or the
//! listed directory), never the grant's whole roots, so a tool cannot reach a sibling that
//! another grant labels higher.
//!
//! Binding one path must not undo the tool's refusal of links: systemd follows symlinks in a
//! bind's source, so a link below the granted directory would be bound as its target. brokerd
//! therefore resolves the path the way the tool does (`boxmaker-tool`'s `really_granted`): no
//! component below the granted root may be a symlink, links in the root's own prefix (the
//! owner's layout) are followed, and what is bound is the real path, at the path the tool
//! reads. Only metadata is read (lstat, realpath), never a file's content.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use grants::constraints::is_under;

/// One path bound read-only into a tool unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    /// What systemd binds: the real path, as brokerd resolved it.
    pub source: String,
    /// Where the tool finds it: the covered path, as the call named it.
    pub target: String,
}

/// Why a covered path binds nothing; the text is for the model and the audit, and never
/// names where a link points. Each text is whole (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// A component below the granted root is a symbolic link.
    #[error("{path} goes through a symlink below the granted directory; links are not followed")]
    Link { path: String },
    /// lstat of a component below the root failed (it does not exist, say).
    #[error("{}", lstat_failed(path, error))]
    Io { path: String, error: io::Error },
    /// The granted root itself cannot be resolved.
    #[error("brokerd cannot see the granted directory {root}: {error}")]
    Root { root: String, error: io::Error },
    /// The granted root's real path is not UTF-8.
    #[error("the real path of {root} is not UTF-8")]
    RootNotUtf8 { root: String },
    /// No granted root holds the path.
    #[error("{path} is outside the granted paths")]
    Outside { path: String },
}

/// A component that could not be looked at, as the model reads it.
fn lstat_failed(path: &str, error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => format!("{path} does not exist"),
        io::ErrorKind::PermissionDenied => format!("{path}: permission denied"),
        _ => format!("{path}: {error}"),
    }
}

/// Resolves the covered `path` (normalised, under one of `roots`) to what may be bound.
/// Err: a link below the root, a path that does not exist, or a root brokerd cannot see.
pub fn resolve(path: &str, roots: &[String]) -> Result<Bind, BindError> {
    let mut first_err = None;
    for root in roots.iter().filter(|r| is_under(path, r)) {
        match resolve_under(path, root) {
            Ok(source) => {
                return Ok(Bind {
                    source,
                    target: path.to_owned(),
                });
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| BindError::Outside {
        path: path.to_owned(),
    }))
}

/// Every name by which what `bind` binds is reached through a granted path, for labelling:
/// its source and target, and, for each granted path that is the same file or directory
/// (by device and inode, as a symlink's target or a bind mount is) as the source or one of
/// its ancestors, that granted path joined with the rest. brokerd sees a granted path whose
/// prefix is a link only as systemd mounted it into its view, a plain directory at the
/// link's name; the inode is the one thing that still says where it really is.
pub fn names<'a>(bind: &Bind, granted: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names = vec![bind.source.clone(), bind.target.clone()];
    let ancestors: Vec<(u64, u64, &Path)> = Path::new(&bind.source)
        .ancestors()
        .filter_map(|a| fs::metadata(a).ok().map(|m| (m.dev(), m.ino(), a)))
        .collect();
    for root in granted {
        let Ok(m) = fs::metadata(root) else { continue };
        for (dev, ino, a) in &ancestors {
            if (m.dev(), m.ino()) != (*dev, *ino) {
                continue;
            }
            let rest = Path::new(&bind.source)
                .strip_prefix(a)
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let name = join(Path::new(root), &rest.to_string_lossy());
            let name = name.to_string_lossy().into_owned();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

fn resolve_under(path: &str, root: &str) -> Result<String, BindError> {
    let rest = path.strip_prefix(root).unwrap_or_default();
    let mut walked = PathBuf::from(root);
    for part in rest.split('/').filter(|p| !p.is_empty()) {
        walked.push(part);
        match fs::symlink_metadata(&walked) {
            Ok(m) if m.file_type().is_symlink() => {
                // The target is not named: it may be outside what the owner granted.
                return Err(BindError::Link {
                    path: path.to_owned(),
                });
            }
            Ok(_) => {}
            Err(source) => {
                return Err(BindError::Io {
                    path: path.to_owned(),
                    error: source,
                });
            }
        }
    }
    let real_root = fs::canonicalize(root).map_err(|source| BindError::Root {
        root: root.to_owned(),
        error: source,
    })?;
    let real = join(&real_root, rest);
    real.into_os_string()
        .into_string()
        .map_err(|_| BindError::RootNotUtf8 {
            root: root.to_owned(),
        })
}

fn join(root: &Path, rest: &str) -> PathBuf {
    match rest.trim_start_matches('/') {
        "" => root.to_path_buf(),
        rest => root.join(rest),
    }
}
