//! `paths`: absolute, normalised, matched as a prefix at a path-component boundary.
//!
//! A decision must not depend on what the file system looks like at the moment, so nothing
//! here touches it. `..` is refused rather than resolved because `a/link/..` is not `a` when
//! `link` is a symlink; symlinks below a granted directory are refused by brokerd before it
//! binds the one covered path into the tool's unit (`brokerd::run::bind`), and again by the tool,
//! which re-checks the real path against the roots.

use super::PathError;

/// Brings an absolute request path to its normal form: `//` and `.` components collapse, a
/// trailing slash goes. Refuses relative paths, NUL bytes and any `..` component.
pub fn normalize_path(raw: &str) -> Result<String, PathError> {
    let path = || raw.to_owned();
    if raw.contains('\0') {
        return Err(PathError::Nul { path: path() });
    }
    if !raw.starts_with('/') {
        return Err(PathError::NotAbsolute { path: path() });
    }
    let mut out = String::with_capacity(raw.len());
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathError::DotDot { path: path() }),
            name => {
                out.push('/');
                out.push_str(name);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// A grant's path must already be in normal form, so that what the owner reads in the file
/// is exactly what is matched.
pub(super) fn validate_entry(entry: &str) -> Result<(), PathError> {
    let normal = normalize_path(entry)?;
    if normal == entry {
        Ok(())
    } else {
        Err(PathError::NotNormal {
            entry: entry.to_owned(),
            normal,
        })
    }
}

/// Whether the normalised `path` is `root` or inside it. Both sides are normal, so a string
/// prefix that ends at a `/` is a component boundary.
pub fn is_under(path: &str, root: &str) -> bool {
    root == "/"
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_entries_must_be_normal() {
        for ok in ["/", "/home/owner/notes", "/srv/a b", "/a/..."] {
            validate_entry(ok).expect(ok);
        }
        for (bad, word) in [
            ("/home/owner/notes/", "write \"/home/owner/notes\""),
            ("//home", "write \"/home\""),
            ("/a/./b", "write \"/a/b\""),
            ("/a/.", "write \"/a\""),
            ("/a/../b", "`..`"),
            ("home/owner", "absolute"),
            ("", "absolute"),
            ("/a\0", "NUL"),
        ] {
            let err = validate_entry(bad).expect_err(bad).to_string();
            assert!(err.contains(word), "{bad:?}: {err}");
        }
    }
}
