//! `read_file` and `list_dir`.
//!
//! brokerd has checked the requested path lexically against the grant (absolute, no `..`,
//! under a granted prefix at a component boundary). What it cannot see from there is where
//! symlinks lead, so this module resolves the real path and checks it against the real
//! paths of the roots. Inside a transient unit only the granted paths are bound at all, so
//! this is the second wall; under the development runner it is the only one.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use proto::toolrun::ToolInvocation;

use crate::text::{read_capped, to_content};
use crate::{Content, Failure, FileError, max_bytes};

pub fn read_file(path: &str, inv: &ToolInvocation) -> Result<Content, Failure> {
    let path = lexically_granted(path, &inv.roots)?;
    let real = really_granted(path, &inv.roots)?;
    let checked = fs::metadata(&real).map_err(|e| io_error(path, e))?;
    if checked.is_dir() {
        return Err(FileError::IsDirectory { path: path.into() }.into());
    }
    // A FIFO or device would block or never end; only regular files are read.
    if !checked.is_file() {
        return Err(FileError::NotRegular { path: path.into() }.into());
    }
    // The open file must be the one checked (same device and inode): a symlink swapped
    // into the path after the check cannot redirect the read.
    let file = File::open(&real).map_err(|e| io_error(path, e))?;
    let opened = file.metadata().map_err(|e| io_error(path, e))?;
    if (opened.dev(), opened.ino()) != (checked.dev(), checked.ino()) {
        return Err(FileError::Changed { path: path.into() }.into());
    }
    let max = max_bytes(inv);
    let (bytes, more) = read_capped(file, max).map_err(|e| io_error(path, e))?;
    to_content(bytes, more, max)
}

pub fn list_dir(path: &str, inv: &ToolInvocation) -> Result<Content, Failure> {
    let path = lexically_granted(path, &inv.roots)?;
    let real = really_granted(path, &inv.roots)?;
    let meta = fs::metadata(&real).map_err(|e| io_error(path, e))?;
    if !meta.is_dir() {
        return Err(FileError::NotDirectory { path: path.into() }.into());
    }
    let mut lines = Vec::new();
    for entry in fs::read_dir(&real).map_err(|e| io_error(path, e))? {
        let entry = entry.map_err(|e| io_error(path, e))?;
        // file_type() does not follow symlinks: a link is shown as a link, never entered.
        let kind = entry.file_type().map_err(|e| io_error(path, e))?;
        let name = printable(&entry.file_name().to_string_lossy());
        let line = if kind.is_symlink() {
            let target = fs::read_link(entry.path())
                .map(|t| printable(&t.to_string_lossy()))
                .unwrap_or_else(|_| "?".into());
            format!("{name} -> {target}")
        } else if kind.is_dir() {
            format!("{name}/")
        } else {
            name
        };
        lines.push(line);
    }
    lines.sort();
    Ok(join_capped(&lines, max_bytes(inv)))
}

/// One entry per line; whole lines only, as many as fit in `max` bytes.
pub(crate) fn join_capped(lines: &[String], max: usize) -> Content {
    let mut content = String::new();
    for line in lines {
        if content.len() + line.len() + 1 > max {
            return Content {
                content,
                truncated: true,
            };
        }
        // Writing to a String cannot fail.
        let _ = writeln!(content, "{line}");
    }
    Content {
        content,
        truncated: false,
    }
}

/// A file name with every hidden character escaped (`inert::hidden`: controls, every line
/// break such as U+2028, zero-width and bidi characters, …): a name holding one must not be
/// able to forge extra entries (or a fake `-> target`) in the listing the model reads, nor
/// hide what it is.
fn printable(name: &str) -> String {
    if name.chars().any(inert::hidden) {
        name.chars()
            .flat_map(|c| {
                if inert::hidden(c) {
                    c.escape_default().collect::<Vec<_>>()
                } else {
                    vec![c]
                }
            })
            .collect()
    } else {
        name.to_owned()
    }
}

/// The lexical check again (brokerd made it already): absolute, no `..` components,
/// under a root as written. Refusing here keeps a bad invocation from even probing the
/// file system.
fn lexically_granted<'a>(path: &'a str, roots: &[String]) -> Result<&'a Path, FileError> {
    let p = Path::new(path);
    let path = path.to_owned();
    if !p.is_absolute() {
        return Err(FileError::NotAbsolute { path });
    }
    if p.components().any(|c| c == Component::ParentDir) {
        return Err(FileError::ParentDir { path });
    }
    if !roots.iter().any(|r| within(p, Path::new(r))) {
        return Err(FileError::Outside { path });
    }
    Ok(p)
}

/// Resolves `path` and requires that no symlink lies below the granted root it is under:
/// the real path must be the root's real path joined with the rest as written. Deny grants
/// and patterns were matched by brokerd on the path as written, so following a link inside
/// a granted directory (to `.ssh`, say) would read what they refuse. Links in the root's
/// own prefix (the owner's layout) are fine.
fn really_granted(path: &Path, roots: &[String]) -> Result<PathBuf, FileError> {
    let real = fs::canonicalize(path).map_err(|e| io_error(path, e))?;
    let exact = roots.iter().any(|r| {
        let root = Path::new(r);
        let Ok(rest) = path.strip_prefix(root) else {
            return false;
        };
        let real_root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        real == real_root.join(rest)
    });
    if exact {
        Ok(real)
    } else {
        Err(FileError::Symlink { path: path.into() })
    }
}

/// `path` equals `root` or lies below it, compared by whole components, so `/a/notes`
/// covers `/a/notes/x` but not `/a/notes2`.
fn within(path: &Path, root: &Path) -> bool {
    root.is_absolute() && path.starts_with(root)
}

fn io_error(path: &Path, source: io::Error) -> FileError {
    FileError::Io {
        path: path.into(),
        error: source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_compares_whole_components() {
        assert!(within(Path::new("/a/notes"), Path::new("/a/notes")));
        assert!(within(Path::new("/a/notes/x"), Path::new("/a/notes")));
        assert!(within(Path::new("/a/notes/x"), Path::new("/a/notes/")));
        assert!(!within(Path::new("/a/notes2"), Path::new("/a/notes")));
        assert!(!within(Path::new("/a"), Path::new("/a/notes")));
        assert!(within(Path::new("/anything"), Path::new("/")));
        assert!(!within(Path::new("/a/x"), Path::new("a")));
    }

    #[test]
    fn lexical_check_refuses_relative_dots_and_outside() {
        let roots = vec!["/a/notes".to_owned()];
        assert!(lexically_granted("/a/notes/x", &roots).is_ok());
        for (bad, word) in [
            ("a/notes/x", "absolute"),
            ("/a/notes/../x", ".."),
            ("/a/notes2/x", "outside"),
        ] {
            let err = lexically_granted(bad, &roots).expect_err(bad);
            assert!(err.to_string().contains(word), "{bad}: {err}");
        }
        assert!(matches!(
            lexically_granted("a/notes/x", &roots),
            Err(FileError::NotAbsolute { path }) if path == "a/notes/x"
        ));
        assert!(matches!(
            lexically_granted("/a/notes/../x", &roots),
            Err(FileError::ParentDir { path }) if path == "/a/notes/../x"
        ));
        assert!(matches!(
            lexically_granted("/a/notes/x", &[]),
            Err(FileError::Outside { path }) if path == "/a/notes/x"
        ));
    }

    #[test]
    fn listing_is_capped_at_whole_lines() {
        let lines = vec!["a".to_owned(), "bb/".to_owned(), "c -> d".to_owned()];
        let all = join_capped(&lines, 100);
        assert_eq!(all.content, "a\nbb/\nc -> d\n");
        assert!(!all.truncated);
        let cut = join_capped(&lines, 6);
        assert_eq!(cut.content, "a\nbb/\n");
        assert!(cut.truncated);
        let exact = join_capped(&lines, 13);
        assert!(!exact.truncated);
    }

    #[test]
    fn control_characters_in_names_are_escaped() {
        assert_eq!(printable("plain name"), "plain name");
        assert_eq!(printable("evil\nsecret -> /etc"), "evil\\nsecret -> /etc");
        assert_eq!(printable("tab\there"), "tab\\there");
    }

    #[test]
    fn every_line_break_and_invisible_character_in_names_is_escaped() {
        for (name, shown) in [
            ("evil\u{2028}secret -> /etc", "evil\\u{2028}secret -> /etc"),
            ("evil\u{2029}x", "evil\\u{2029}x"),
            ("evil\u{85}x", "evil\\u{85}x"),
            ("\u{200b}zero", "\\u{200b}zero"),
            ("\u{feff}bom", "\\u{feff}bom"),
            ("txt.\u{202e}exe", "txt.\\u{202e}exe"),
            ("日本語 é", "日本語 é"),
        ] {
            assert_eq!(printable(name), shown, "{name:?}");
        }
    }
}
