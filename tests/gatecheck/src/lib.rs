//! gatecheck: the boxmaker house rules that the gate (`tests/gate`) checks besides rustfmt,
//! clippy, the tests and cargo-deny.
//!
//! - [`lines`]: no source file has more than [`lines::MAX_LINES`] lines.
//! - [`roles`]: every workspace member declares its kind, and the kinds depend on each other
//!   only as the brief allows (role crates never depend on each other).
//! - [`modules`]: within each workspace member, no two top-level modules import each other
//!   in a circle (`crate::` paths, read as text), and no module and one of its children
//!   (`super::` paths too).
//! - [`deps`]: every dependency named in any `Cargo.toml` has a row with a reason in
//!   `docs/dependencies.md` (format in [`doc`]).
//! - [`docrefs`]: every repository path and socket name the docs mention exists.
//!
//! Each check returns an [`Outcome`]: what was checked and the rule violations found. An
//! [`Error`] means the check could not run at all (git or cargo failed, a file did not parse).

pub mod deps;
pub mod doc;
pub mod docrefs;
pub mod lines;
pub mod modules;
pub mod roles;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a check could not run.
#[derive(Debug)]
pub enum Error {
    /// The command line was not understood.
    Usage(String),
    /// A file could not be read.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// An external command (git, cargo) could not be started or failed.
    Command { command: String, detail: String },
    /// `cargo metadata` printed something that is not the expected JSON.
    Metadata(serde_json::Error),
    /// A `Cargo.toml` did not parse.
    Manifest { path: String, detail: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(text) => write!(f, "usage: {text}"),
            Self::Io { path, source } => write!(f, "cannot read {}: {source}", path.display()),
            Self::Command { command, detail } => write!(f, "`{command}` failed: {detail}"),
            Self::Metadata(err) => write!(f, "cannot parse `cargo metadata` output: {err}"),
            Self::Manifest { path, detail } => write!(f, "cannot parse {path}: {detail}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Metadata(err) => Some(err),
            Self::Usage(_) | Self::Command { .. } | Self::Manifest { .. } => None,
        }
    }
}

/// One of the house-rule checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Lines,
    Roles,
    Modules,
    Deps,
    Docs,
}

impl Check {
    /// Every check, in the order `gatecheck all` runs them.
    pub const ALL: [Self; 5] = [
        Self::Lines,
        Self::Roles,
        Self::Modules,
        Self::Deps,
        Self::Docs,
    ];

    /// The subcommand name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lines => "lines",
            Self::Roles => "roles",
            Self::Modules => "modules",
            Self::Deps => "deps",
            Self::Docs => "docs",
        }
    }

    /// The check a subcommand names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|check| check.name() == name)
    }

    /// What the check checks, for the report.
    fn unit(self) -> &'static str {
        match self {
            Self::Lines => "source files",
            Self::Roles => "workspace members",
            Self::Modules => "top-level modules",
            Self::Deps => "dependency declarations",
            Self::Docs => "docs",
        }
    }
}

/// The result of one check that ran: how many things it looked at, and every violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub check: Check,
    pub checked: usize,
    pub problems: Vec<String>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for problem in &self.problems {
            writeln!(f, "gatecheck {}: {problem}", self.check.name())?;
        }
        if self.passed() {
            write!(
                f,
                "gatecheck {}: ok ({} {} checked)",
                self.check.name(),
                self.checked,
                self.check.unit()
            )
        } else {
            write!(
                f,
                "gatecheck {}: FAILED, {} problem(s) in {} {}",
                self.check.name(),
                self.problems.len(),
                self.checked,
                self.check.unit()
            )
        }
    }
}

/// The repository's file listing ([`repo_files`]), read by the first check that needs it
/// and shared by the checks after it.
#[derive(Debug, Default)]
pub struct RepoFiles(Option<Vec<String>>);

impl RepoFiles {
    fn get(&mut self, root: &Path) -> Result<&[String], Error> {
        let files = match self.0.take() {
            Some(files) => files,
            None => repo_files(root)?,
        };
        Ok(self.0.insert(files))
    }
}

/// Runs one check on the repository at `root`. `files` is the file listing, read here if no
/// check before has read it.
pub fn run(check: Check, root: &Path, files: &mut RepoFiles) -> Result<Outcome, Error> {
    match check {
        Check::Lines => lines::check(root, files.get(root)?),
        Check::Roles => roles::check_metadata(&roles::cargo_metadata(root)?),
        Check::Modules => {
            let crates = modules::members(&roles::cargo_metadata(root)?)?;
            modules::check(root, &crates, files.get(root)?, modules::ALLOWED)
        }
        Check::Deps => {
            let manifests = deps::read_manifests(root, files.get(root)?)?;
            let doc_path = root.join(deps::DOC_PATH);
            let doc = match std::fs::read_to_string(&doc_path) {
                Ok(text) => Some(text),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(Error::Io {
                        path: doc_path,
                        source,
                    });
                }
            };
            deps::check(&manifests, doc.as_deref())
        }
        Check::Docs => docs(root, files.get(root)?),
    }
}

/// The `docs` check: reads each doc and `sockets.rs` and reports what [`docrefs`] finds.
fn docs(root: &Path, files: &[String]) -> Result<Outcome, Error> {
    let read = |rel: &str| {
        let path = root.join(rel);
        std::fs::read_to_string(&path).map_err(|source| Error::Io { path, source })
    };
    let socks = docrefs::sockets(&read(docrefs::SOCKETS_PATH)?);
    let tree = docrefs::Tree::new(files);
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in files.iter().filter(|f| docrefs::is_doc(f)) {
        checked += 1;
        problems.extend(docrefs::check_doc(doc, &read(doc)?, &tree, &socks));
    }
    Ok(Outcome {
        check: Check::Docs,
        checked,
        problems,
    })
}

/// The repository's files that git tracks or would track (untracked but not ignored), as
/// paths relative to `root` with `/` separators, sorted, without anything under `target/`.
pub fn repo_files(root: &Path) -> Result<Vec<String>, Error> {
    let mut command = Command::new("git");
    command.arg("-C").arg(root).args([
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
    ]);
    let output = run_command(
        &mut command,
        "git ls-files --cached --others --exclude-standard",
    )?;
    let mut files: Vec<String> = output
        .split('\0')
        .filter(|path| !path.is_empty() && !path.starts_with("target/"))
        .map(str::to_owned)
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// Runs `command` and returns its standard output; a failure carries its standard error.
fn run_command(command: &mut Command, describe: &str) -> Result<String, Error> {
    let output = command.output().map_err(|err| Error::Command {
        command: describe.to_owned(),
        detail: err.to_string(),
    })?;
    if !output.status.success() {
        return Err(Error::Command {
            command: describe.to_owned(),
            detail: format!(
                "{}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        });
    }
    String::from_utf8(output.stdout).map_err(|err| Error::Command {
        command: describe.to_owned(),
        detail: format!("output is not UTF-8: {err}"),
    })
}

#[cfg(test)]
pub(crate) mod testutil {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A directory under the system temp directory, removed when dropped.
    pub(crate) struct TempDir(PathBuf);

    impl TempDir {
        pub(crate) fn new(label: &str) -> Self {
            static COUNTER: AtomicUsize = AtomicUsize::new(0);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let path = std::env::temp_dir().join(format!(
                "gatecheck-{label}-{}-{}-{nanos}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).expect("create temp dir");
            Self(path)
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }

        /// Writes `contents` to `rel` under this directory, creating parents.
        pub(crate) fn write(&self, rel: &str, contents: &str) {
            let path = self.0.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("create parent dir");
            }
            std::fs::write(path, contents).expect("write temp file");
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_round_trip() {
        for check in Check::ALL {
            assert_eq!(Check::from_name(check.name()), Some(check));
        }
        assert_eq!(Check::from_name("all"), None);
    }

    #[test]
    fn outcome_report_names_every_problem() {
        let outcome = Outcome {
            check: Check::Lines,
            checked: 3,
            problems: vec!["a.rs: 501 lines".to_owned(), "b.rs: 600 lines".to_owned()],
        };
        let text = outcome.to_string();
        assert!(text.contains("gatecheck lines: a.rs: 501 lines"));
        assert!(text.contains("gatecheck lines: b.rs: 600 lines"));
        assert!(text.ends_with("FAILED, 2 problem(s) in 3 source files"));
        let ok = Outcome {
            problems: Vec::new(),
            ..outcome
        };
        assert_eq!(
            ok.to_string(),
            "gatecheck lines: ok (3 source files checked)"
        );
    }
}
