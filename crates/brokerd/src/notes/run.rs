//! A note tool's run: what its unit has bound, the label that gives its result, and, for a
//! write, brokerd's commit of what the unit left. Labels come from brokerd's record and
//! the bytes it read itself, never from what the tool says it returned.

use std::path::PathBuf;
use std::sync::MutexGuard;

use proto::tools::{NoteMode, ToolArgs};

use super::{NoteError, Notes, UNKNOWN};
use crate::policy::Labels;
use crate::run::bind::Bind;
use crate::run::runner::{RunOutcome, RunSpec};
use crate::sessions::SessionState;

/// Where a unit finds the one note it reads, the notes it lists, and the directory it
/// writes into.
const READ_AT: &str = "/note/note.md";
const LIST_AT: &str = "/notes";
const WRITE_AT: &str = "/note-out";
const SEARCH_AT: &str = "/index";

/// What a note call is, taken from its arguments before they go to the spec.
#[derive(Debug)]
pub enum Prep {
    NotANote,
    Read(String),
    List,
    Write(String, NoteMode),
    Search,
}

impl Prep {
    pub fn of(args: &ToolArgs) -> Self {
        match args {
            ToolArgs::NoteRead(a) => Self::Read(a.name.clone()),
            ToolArgs::NoteList(_) => Self::List,
            ToolArgs::NoteWrite(a) => Self::Write(a.name.clone(), a.mode),
            // Both searches bind the same partitions: each holds notes and session records.
            ToolArgs::NoteSearch(_) | ToolArgs::SessionSearch(_) => Self::Search,
            _ => Self::NotANote,
        }
    }

    /// Binds what the call may see into `spec` and labels it. With `isolated` (a runner
    /// that binds), each is bound at a fixed place whatever its name: the mount points
    /// systemd leaves in the tools' shared empty root then never name a note. A search
    /// binds the published index partitions of classes up to `reach` (its grant's
    /// `max_class`), each file at `/index/<label>.sqlite`.
    pub fn bind<'a>(
        self,
        notes: &'a Notes,
        spec: &mut RunSpec,
        isolated: bool,
        reach: proto::DataClass,
    ) -> Result<Bound<'a>, NoteError> {
        let at = |real: String, fixed: &str| Bind {
            target: if isolated {
                fixed.to_owned()
            } else {
                real.clone()
            },
            source: real,
        };
        let dir = notes.dir().display().to_string();
        Ok(match self {
            Self::NotANote => Bound::NotANote,
            Self::Read(name) => {
                let found = notes.find(&name);
                let path = notes.path(&name);
                if std::fs::symlink_metadata(&path).is_err() {
                    // Nothing to bind: brokerd's own answer, which carries no note.
                    return Err(NoteError::Missing { name });
                }
                let bind = at(path.display().to_string(), READ_AT);
                spec.invocation.notes = Some(bind.target.clone());
                spec.bind = Some(bind);
                Bound::Read {
                    bytes: if found.matches { found.bytes } else { None },
                    labels: found.labels,
                }
            }
            Self::List => {
                // Held to the end of the unit: no note appears that the label missed.
                let held = notes.lock();
                let labels = notes.list_labels()?;
                let bind = at(dir, LIST_AT);
                spec.invocation.notes = Some(bind.target.clone());
                spec.bind = Some(bind);
                Bound::List {
                    labels,
                    _held: held,
                }
            }
            Self::Write(name, mode) => {
                let incoming = notes.incoming(&spec.unit)?;
                let bind = at(incoming.display().to_string(), WRITE_AT);
                spec.invocation.notes = Some(bind.target.clone());
                spec.write_bind = Some(bind);
                Bound::Write {
                    name,
                    mode,
                    dir: incoming,
                }
            }
            Self::Search => {
                // No lock: a published partition is never written after its rename, so what
                // the unit opens is what brokerd labelled (the same file, or a newer one of
                // the same label).
                let (parts, labels) = notes.index().reach(reach);
                for (label, path) in parts {
                    let bind = at(
                        path.display().to_string(),
                        &format!("{SEARCH_AT}/{}", label.file_name()),
                    );
                    spec.invocation.index.push(bind.target.clone());
                    spec.index_binds.push(bind);
                }
                Bound::Search { labels }
            }
        })
    }
}

/// A note call's unit, set up.
#[derive(Debug)]
pub enum Bound<'a> {
    NotANote,
    /// `bytes`: what brokerd read and could vouch for (`None` when it could not).
    Read {
        bytes: Option<Vec<u8>>,
        labels: Labels,
    },
    List {
        labels: Labels,
        _held: MutexGuard<'a, ()>,
    },
    Write {
        name: String,
        mode: NoteMode,
        dir: PathBuf,
    },
    /// `labels`: the highest partition bound.
    Search {
        labels: Labels,
    },
}

impl Bound<'_> {
    /// The labels the bound notes add to the result, and the outcome the model gets.
    /// `writer` is the session's state now (a write's label).
    pub fn finish(
        self,
        notes: &Notes,
        outcome: RunOutcome,
        writer: &SessionState,
    ) -> (Labels, RunOutcome) {
        match self {
            Self::NotANote => (Labels::NONE, outcome),
            Self::Read { bytes, labels } => {
                // The unit's content must be the bytes brokerd vouched for (or, cut, their
                // start); anything else is what brokerd cannot vouch for.
                let vouched = match (&outcome, &bytes) {
                    (RunOutcome::Ok { content, truncated }, Some(b)) => {
                        let c = content.as_bytes();
                        if *truncated {
                            b.starts_with(c)
                        } else {
                            c == b.as_slice()
                        }
                    }
                    (RunOutcome::Failed { .. }, _) => true,
                    (RunOutcome::Ok { .. }, None) | (RunOutcome::Staged(_), _) => false,
                };
                (if vouched { labels } else { UNKNOWN }, outcome)
            }
            Self::List { labels, .. } => (labels, outcome),
            Self::Search { labels } => (labels, outcome),
            Self::Write { name, mode, dir } => {
                let (read, outcome) = match outcome {
                    RunOutcome::Ok { .. } => {
                        let done = notes.commit(&name, mode, &dir, writer);
                        let outcome = match done.answer {
                            Ok(content) => RunOutcome::Ok {
                                content,
                                truncated: false,
                            },
                            Err(e) => RunOutcome::failed(e.to_string()),
                        };
                        (done.read, outcome)
                    }
                    failed @ RunOutcome::Failed { .. } => (Labels::NONE, failed),
                    // A note unit is sent no stage, so it can answer none.
                    RunOutcome::Staged(_) => (
                        Labels::NONE,
                        RunOutcome::failed("the note unit answered as a hands unit"),
                    ),
                };
                notes.discard(&dir);
                (read, outcome)
            }
        }
    }
}
