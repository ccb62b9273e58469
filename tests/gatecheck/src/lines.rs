//! No source file has more than [`MAX_LINES`] lines.
//!
//! Source files are those with the extensions in [`SOURCE_EXTENSIONS`], the scripts in
//! [`SCRIPTS`], and any other file without an extension whose first bytes are `#!`.

use std::path::Path;

use crate::{Check, Error, Outcome};

/// The most lines a source file may have.
pub const MAX_LINES: usize = 500;

/// File name extensions of source files.
pub const SOURCE_EXTENSIONS: &[&str] = &["rs", "nix", "sh", "bash", "py"];

/// Scripts without an extension that are always source files.
pub const SCRIPTS: &[&str] = &["tests/gate", ".ci/run"];

/// The number of lines in `bytes`: newlines, plus one for a last line without a newline.
pub fn count_lines(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    match bytes.last() {
        Some(b'\n') | None => newlines,
        Some(_) => newlines + 1,
    }
}

/// Whether the file at `rel` (relative, `/`-separated) is a source file by its name alone.
pub fn is_source_name(rel: &str) -> bool {
    SCRIPTS.contains(&rel) || extension(rel).is_some_and(|ext| SOURCE_EXTENSIONS.contains(&ext))
}

/// The extension of the last path component, if it has one (`.gitignore` has none).
fn extension(rel: &str) -> Option<&str> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => Some(ext),
        _ => None,
    }
}

/// Checks every source file among `files` (relative to `root`). Files that no longer exist
/// (deleted but still in the index) and directories (submodules) are skipped.
pub fn check(root: &Path, files: &[String]) -> Result<Outcome, Error> {
    let mut outcome = Outcome {
        check: Check::Lines,
        checked: 0,
        problems: Vec::new(),
    };
    for rel in files {
        if rel.starts_with("target/") {
            continue;
        }
        let by_name = is_source_name(rel);
        if !by_name && extension(rel).is_some() {
            continue;
        }
        let path = root.join(rel);
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        if !by_name && !bytes.starts_with(b"#!") {
            continue;
        }
        outcome.checked += 1;
        let count = count_lines(&bytes);
        if count > MAX_LINES {
            outcome.problems.push(format!(
                "{rel}: {count} lines (at most {MAX_LINES} allowed)"
            ));
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("// line {i}\n")).collect()
    }

    #[test]
    fn counts_lines_with_and_without_final_newline() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\n"), 1);
        assert_eq!(count_lines(b"a\nb"), 2);
        assert_eq!(count_lines(b"\n\n"), 2);
        assert_eq!(count_lines(numbered(501).as_bytes()), 501);
    }

    #[test]
    fn knows_source_files_by_name() {
        assert!(is_source_name("crates/proto/src/lib.rs"));
        assert!(is_source_name("nix/module.nix"));
        assert!(is_source_name("tests/peer/run.py"));
        assert!(is_source_name("tests/gate"));
        assert!(is_source_name(".ci/run"));
        assert!(!is_source_name("README.md"));
        assert!(!is_source_name("Cargo.toml"));
        assert!(!is_source_name(".gitignore"));
        assert!(!is_source_name("tests/other"));
    }

    #[test]
    fn flags_a_501_line_file_and_passes_500() {
        let dir = TempDir::new("lines");
        dir.write("src/long.rs", &numbered(MAX_LINES + 1));
        dir.write("src/ok.rs", &numbered(MAX_LINES));
        dir.write("docs/long.md", &numbered(2000));
        dir.write(
            "tests/gate",
            &format!("#!/usr/bin/env bash\n{}", numbered(600)),
        );
        dir.write(
            "tools/helper",
            &format!("#!/bin/sh\n{}", numbered(MAX_LINES)),
        );
        dir.write("LICENSE", &numbered(900));
        let files: Vec<String> = [
            "LICENSE",
            "docs/long.md",
            "gone.rs",
            "src/long.rs",
            "src/ok.rs",
            "tests/gate",
            "tools/helper",
        ]
        .map(str::to_owned)
        .to_vec();
        let outcome = check(dir.path(), &files).expect("check runs");
        assert_eq!(
            outcome.problems,
            vec![
                "src/long.rs: 501 lines (at most 500 allowed)".to_owned(),
                "tests/gate: 601 lines (at most 500 allowed)".to_owned(),
                "tools/helper: 501 lines (at most 500 allowed)".to_owned(),
            ]
        );
        assert_eq!(outcome.checked, 4);
    }

    #[test]
    fn passes_when_every_file_fits() {
        let dir = TempDir::new("lines-ok");
        dir.write("a.rs", &numbered(MAX_LINES));
        dir.write("b.nix", "{ }\n");
        dir.write("target/debug/huge.rs", &numbered(5000));
        let files = ["a.rs", "b.nix", "target/debug/huge.rs"].map(str::to_owned);
        let outcome = check(dir.path(), &files).expect("check runs");
        assert!(outcome.passed(), "{outcome}");
        assert_eq!(outcome.checked, 2);
    }
}
