//! What the hands need from brokerd's configuration, opened at start and checked against
//! every snapshot (at start and on each reload): the programs `run` grants name, each an
//! absolute path with what its unit binds of the store, and the rules no grant may break
//! (docs/decisions.md H1, H11, H13).
//!
//! A snapshot is refused when an allowing `run` grant names a program the configuration
//! lacks, or one whose file is a shell or launcher without `shell = true`; when a write
//! (a `write_file` or `edit_file` grant, a `run` grant's `workdir`) reaches brokerd's own
//! files (its state, the grants, the owner's core memory); and, under
//! systemd, when a write has no hands user to run as, or the systemd cannot keep the hands
//! user's processes out of sight (`PrivatePIDs=`, 257).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use config::{Config, RunnerKind};
use grants::Snapshot;
use grants::constraints::{is_launcher, is_under, normalize_path};
use proto::{Grant, Mode};

/// The first systemd with `PrivatePIDs=`.
pub const PRIVATE_PIDS: u32 = 257;

/// One program a `run` grant may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The executable, absolute.
    pub path: PathBuf,
    /// The store paths its unit binds instead of `broker.sandbox_binds` (its closure and
    /// the tool's), when the configuration lists them.
    pub closure: Option<Vec<String>>,
}

/// The programs of `broker.programs`, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Programs(BTreeMap<String, Program>);

/// Why the hands' configuration, or a snapshot with it, cannot be used. Each text names
/// the grant or setting to change.
#[derive(Debug, thiserror::Error)]
pub enum HandsError {
    #[error("broker.program_closures.{name}: cannot read {}: {error}", path.display())]
    Closure {
        name: String,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("broker.program_closures.{name}: {line:?} in {} is not an absolute store path", path.display())]
    ClosureLine {
        name: String,
        path: PathBuf,
        line: String,
    },
    #[error(
        "grant {grant} names the program {program:?}, which broker.programs does not map to a \
         file (services.boxmaker.programs.{program} on NixOS)"
    )]
    Unconfigured { grant: String, program: String },
    #[error(
        "grant {grant}: broker.programs.{program} is {}, a shell or a launcher of other \
         programs: the grant must say constraints.shell = true", path.display()
    )]
    ShellByPath {
        grant: String,
        program: String,
        path: PathBuf,
    },
    #[error(
        "grant {grant} writes {place}, which reaches {what} ({}): the agent would write \
         brokerd's own files", file.display()
    )]
    OwnFiles {
        grant: String,
        place: String,
        what: &'static str,
        file: PathBuf,
    },
    #[error(
        "grant {grant} writes the owner's files, but broker.hands_user is not set \
         (services.boxmaker.hands.user): nobody to run the write units as"
    )]
    NoHandsUser { grant: String },
    #[error(
        "grant {grant} needs PrivatePIDs= (systemd {PRIVATE_PIDS}), and broker.systemd_version \
         is {version}: {why}"
    )]
    OldSystemd {
        grant: String,
        version: u32,
        why: &'static str,
    },
}

impl Programs {
    /// The configured programs, each closure file read (one store path a line).
    pub fn open(config: &Config) -> Result<Self, HandsError> {
        let b = &config.broker;
        let mut out = BTreeMap::new();
        for (name, path) in &b.programs {
            let closure = match b.program_closures.get(name) {
                Some(file) => Some(read_closure(name, file)?),
                None => None,
            };
            out.insert(
                name.clone(),
                Program {
                    path: path.clone(),
                    closure,
                },
            );
        }
        Ok(Self(out))
    }

    pub fn get(&self, name: &str) -> Option<&Program> {
        self.0.get(name)
    }

    /// Checks `snapshot` against the configuration (module text).
    pub fn check(&self, config: &Config, snapshot: &Snapshot) -> Result<(), HandsError> {
        let b = &config.broker;
        let systemd = b.runner == RunnerKind::Systemd;
        for (id, g) in snapshot.iter().filter(|(_, g)| g.mode != Mode::Deny) {
            if g.tool == "run" {
                self.check_programs(id, g)?;
            }
            let Some((place, hands_user)) = writes(g) else {
                continue;
            };
            own_files(config, id, &place)?;
            if systemd && hands_user && b.hands_user.is_none() {
                return Err(HandsError::NoHandsUser {
                    grant: id.to_owned(),
                });
            }
            if systemd && hands_user && b.systemd_version < PRIVATE_PIDS {
                let why = if g.tool == "run" {
                    "a program would run as the hands user beside that user's processes"
                } else if b.hands_shared_pids {
                    continue;
                } else {
                    "the write units would run as the hands user beside that user's \
                     processes (broker.hands_shared_pids = true accepts that)"
                };
                return Err(HandsError::OldSystemd {
                    grant: id.to_owned(),
                    version: b.systemd_version,
                    why,
                });
            }
        }
        Ok(())
    }

    fn check_programs(&self, id: &str, g: &Grant) -> Result<(), HandsError> {
        for name in &g.constraints.programs {
            let program = self.get(name).ok_or_else(|| HandsError::Unconfigured {
                grant: id.to_owned(),
                program: name.clone(),
            })?;
            let file = program.path.file_name().and_then(|f| f.to_str());
            if file.is_some_and(is_launcher) && !g.constraints.shell {
                return Err(HandsError::ShellByPath {
                    grant: id.to_owned(),
                    program: name.clone(),
                    path: program.path.clone(),
                });
            }
        }
        Ok(())
    }
}

/// The places an allowing grant writes, each with all below it (its `paths` for
/// `write_file` and `edit_file`, a `run` grant's `workdir`), and whether its units run as
/// the hands user (every write does).
fn writes(g: &Grant) -> Option<(Vec<String>, bool)> {
    match g.tool.as_str() {
        "write_file" | "edit_file" => Some((g.constraints.paths.clone(), true)),
        "run" => g.constraints.workdir.clone().map(|w| (vec![w], true)),
        _ => None,
    }
}

/// Refuses a place that holds, or lies inside, a file or directory brokerd or another role
/// writes or trusts: what the model could write there would become state, grants, the
/// configuration or the owner's system prompt.
fn own_files(config: &Config, grant: &str, places: &[String]) -> Result<(), HandsError> {
    let mut own: Vec<(&'static str, PathBuf)> = config.written_dirs();
    own.push(("the grants", config.grants.clone()));
    own.push(("the owner's core memory", config.core_memory_path()));
    for place in places {
        for (what, file) in &own {
            let Some(file_text) = file.to_str().and_then(|f| normalize_path(f).ok()) else {
                continue;
            };
            if is_under(place, &file_text) || is_under(&file_text, place) {
                return Err(HandsError::OwnFiles {
                    grant: grant.to_owned(),
                    place: place.clone(),
                    what,
                    file: file.clone(),
                });
            }
        }
    }
    Ok(())
}

fn read_closure(name: &str, file: &Path) -> Result<Vec<String>, HandsError> {
    let text = std::fs::read_to_string(file).map_err(|error| HandsError::Closure {
        name: name.to_owned(),
        path: file.to_owned(),
        error,
    })?;
    let mut paths = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fine = line.starts_with('/')
            && grants::unitpath::check_unit_path(line).is_ok()
            && !line.split('/').any(|c| c == "..");
        if !fine {
            return Err(HandsError::ClosureLine {
                name: name.to_owned(),
                path: file.to_owned(),
                line: line.to_owned(),
            });
        }
        paths.push(line.to_owned());
    }
    Ok(paths)
}
