//! `paths`: absolute, normalised, matched as a prefix at a path-component boundary.
//!
//! A decision must not depend on what the file system looks like at the moment, so nothing
//! here touches it. `..` is refused rather than resolved because `a/link/..` is not `a` when
//! `link` is a symlink; symlinks below a granted directory are refused by brokerd before it
//! binds the one covered path into the tool's unit (`brokerd::bind`), and again by the tool,
//! which re-checks the real path against the roots.

/// Brings an absolute request path to its normal form: `//` and `.` components collapse, a
/// trailing slash goes. Refuses relative paths, NUL bytes and any `..` component.
pub fn normalize_path(raw: &str) -> Result<String, String> {
    if raw.contains('\0') {
        return Err(format!("{raw:?} contains a NUL byte"));
    }
    if !raw.starts_with('/') {
        return Err(format!(
            "{raw:?} is not an absolute path (it must start with /)"
        ));
    }
    let mut out = String::with_capacity(raw.len());
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(format!(
                    "{raw:?} has a `..` component, which is never resolved (it could cross a \
                     symlink): name the path without it"
                ));
            }
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
pub(super) fn validate_entry(entry: &str) -> Result<(), String> {
    let normal = normalize_path(entry)?;
    if normal == entry {
        Ok(())
    } else {
        Err(format!("{entry:?} is not in normal form: write {normal:?}"))
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
    fn normal_paths_pass_unchanged() {
        for p in [
            "/",
            "/a",
            "/home/owner/notes/a.md",
            "/a/...",
            "/a/..b",
            "/a/b..",
            "/a/.b",
        ] {
            assert_eq!(normalize_path(p).expect(p), p);
        }
    }

    #[test]
    fn slashes_and_dots_collapse() {
        for (raw, normal) in [
            ("//", "/"),
            ("/.", "/"),
            ("/./", "/"),
            ("/a/", "/a"),
            ("/a//b", "/a/b"),
            ("//a///b//", "/a/b"),
            ("/a/./b", "/a/b"),
            ("/a/.", "/a"),
            ("/./a/./b/.", "/a/b"),
            ("/a/b\\c", "/a/b\\c"),
        ] {
            assert_eq!(normalize_path(raw).expect(raw), normal, "{raw}");
        }
    }

    #[test]
    fn dot_dot_is_refused_anywhere() {
        for raw in [
            "/..",
            "/../etc/shadow",
            "/home/owner/notes/../../etc/shadow",
            "/home/owner/notes/..",
            "/home/owner/notes/../",
            "/a/./../b",
            "//..//",
        ] {
            let err = normalize_path(raw).expect_err(raw);
            assert!(err.contains("`..`"), "{raw}: {err}");
        }
    }

    #[test]
    fn relative_empty_and_nul_are_refused() {
        for raw in ["", "a", "./a", "../a", "~/notes", " /a", "a/b"] {
            let err = normalize_path(raw).expect_err(raw);
            assert!(err.contains("not an absolute path"), "{raw}: {err}");
        }
        for raw in ["/a\0", "/a\0/b", "\0/a"] {
            let err = normalize_path(raw).expect_err(raw);
            assert!(err.contains("NUL"), "{raw:?}: {err}");
        }
    }

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
            let err = validate_entry(bad).expect_err(bad);
            assert!(err.contains(word), "{bad:?}: {err}");
        }
    }

    #[test]
    fn prefix_matches_only_at_a_component_boundary() {
        let root = "/home/owner/notes";
        for p in [root, "/home/owner/notes/a", "/home/owner/notes/a/b/c"] {
            assert!(is_under(p, root), "{p}");
        }
        for p in [
            "/home/owner/notes2",
            "/home/owner/notes.bak/a",
            "/home/owner/note",
            "/home/owner",
            "/",
            "/etc/shadow",
            "/home/owner/Notes",
        ] {
            assert!(!is_under(p, root), "{p}");
        }
    }

    #[test]
    fn the_root_grant_covers_everything() {
        for p in ["/", "/etc/shadow", "/home/owner/notes"] {
            assert!(is_under(p, "/"), "{p}");
        }
    }
}
