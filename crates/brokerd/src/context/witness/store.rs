//! The durable witness store (docs/decisions.md W4, W9): one append-only file in a directory
//! of its own (`home/witness/`, made 0700 when missing), `witness.jsonl`, a line per witness
//! report, fdatasynced before the report's `witness_recorded`. Which calls were used is kept
//! here in memory only: a use is durable in the audit line of its decision
//! (`AuditRecord::witness`), and [`Store::mark_used`] marks it again from the audit log at
//! start. Bounded: the last `broker.max_witness_records` reports are kept, older ones
//! forgotten (their calls are then `not_witnessed`); the file is rewritten with what is kept
//! (temp file, fsync, rename) once it holds twice that many lines. At start the file is read
//! back: a torn last line (a write that died) is cut off, any other line that does not parse
//! refuses the start. A `used` line, which brokerd wrote before W9, is read as a use and kept
//! by the rewrite (the audit lines of those uses do not name them).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use daemon::durable::{self, ReadError};
use proto::attest::{CompletionId, WitnessRef, WitnessReport};
use proto::{AuditLine, AuditRecord};
use serde::{Deserialize, Serialize};

const FILE: &str = "witness.jsonl";
const TMP: &str = "witness.jsonl.tmp";
/// Mode bits the store never sets: a file others may write or read is refused.
const FORBIDDEN: u32 = 0o077;

/// One line of the store. `Used` is only ever read (and kept by the rewrite): see W9.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Report {
        report: WitnessReport,
    },
    Used {
        completion: CompletionId,
        index: u32,
    },
}

/// Why the store cannot be used. Each text is whole: it prints what it wraps
/// (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
    #[error("{}: {error}", path.display())]
    Refused { path: PathBuf, error: ReadError },
    #[error("{} line {line}: {reason}", path.display())]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// A report kept, and which of its calls were used.
#[derive(Debug)]
pub struct Entry {
    pub report: WitnessReport,
    pub used: BTreeSet<u32>,
    /// The uses this file records in `used` lines (written before W9), a subset of `used`.
    recorded: BTreeSet<u32>,
}

/// The reports a store kept when [`Store::kept`] was taken: each one's calls' model ids.
#[derive(Debug, Default, Clone)]
pub struct Kept(HashMap<CompletionId, Vec<String>>);

impl Kept {
    pub fn keeps(&self, id: &CompletionId) -> bool {
        self.0.contains_key(id)
    }

    /// The model's id of call `at` of report `id`.
    pub fn call_id(&self, id: &CompletionId, at: usize) -> Option<String> {
        self.0.get(id)?.get(at).cloned()
    }
}

/// What the store holds, and its file.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    file: File,
    /// Lines in the file.
    lines: usize,
    max: usize,
    entries: HashMap<CompletionId, Entry>,
    /// The reports kept, oldest first.
    order: VecDeque<CompletionId>,
}

/// What opening found, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    pub kept: usize,
    pub torn: bool,
}

impl Store {
    /// Opens (or creates) the store in `dir`, keeping at most `max` reports.
    pub fn open(dir: &Path, max: usize) -> Result<(Self, Opened), StoreError> {
        let path = dir.join(FILE);
        let io = |source| StoreError::Io {
            path: path.clone(),
            error: source,
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| StoreError::Io {
                path: dir.to_owned(),
                error: source,
            })?;
        let mut store = Self {
            dir: dir.to_owned(),
            file: durable::open(&path, Some(0o600), FORBIDDEN).map_err(|source| {
                StoreError::Refused {
                    path: path.clone(),
                    error: source,
                }
            })?,
            lines: 0,
            max,
            entries: HashMap::new(),
            order: VecDeque::new(),
        };
        let read = durable::open(&path, None, FORBIDDEN).map_err(|source| StoreError::Refused {
            path: path.clone(),
            error: source,
        })?;
        let mut reader = BufReader::new(read);
        let (mut good, mut torn) = (0u64, false);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            if buf.last() != Some(&b'\n') {
                torn = true;
                break;
            }
            let line: Line = serde_json::from_slice(&buf).map_err(|e| StoreError::Corrupt {
                path: path.clone(),
                line: store.lines + 1,
                reason: e.to_string(),
            })?;
            store.apply(line);
            store.lines += 1;
            good += n as u64;
        }
        if torn {
            store.file.set_len(good).map_err(io)?;
            store.file.sync_all().map_err(io)?;
        }
        let kept = store.entries.len();
        Ok((store, Opened { kept, torn }))
    }

    fn apply(&mut self, line: Line) {
        match line {
            Line::Report { report } => {
                let id = report.completion.clone();
                self.entries.insert(
                    id.clone(),
                    Entry {
                        report,
                        used: BTreeSet::new(),
                        recorded: BTreeSet::new(),
                    },
                );
                self.order.push_back(id);
                while self.order.len() > self.max {
                    if let Some(old) = self.order.pop_front() {
                        self.entries.remove(&old);
                    }
                }
            }
            Line::Used { completion, index } => {
                if let Some(e) = self.entries.get_mut(&completion) {
                    e.used.insert(index);
                    e.recorded.insert(index);
                }
            }
        }
    }

    /// Marks the use an audit line records, if it is a decision that used a witnessed call
    /// (`AuditRecord::witness`): how the uses are rebuilt at start, from every link of the
    /// audit log's chain. `true`: it named a completion the store keeps.
    pub fn mark_audited(&mut self, line: &AuditLine) -> bool {
        match line {
            AuditLine::Decision(AuditRecord {
                witness: Some(w), ..
            }) => self.mark_used(w),
            _ => false,
        }
    }

    pub fn get(&self, id: &CompletionId) -> Option<&Entry> {
        self.entries.get(id)
    }

    /// The model's id of call `at` of the kept report `id`.
    pub fn call_id(&self, id: &CompletionId, at: usize) -> Option<String> {
        Some(self.entries.get(id)?.report.calls.get(at)?.id.clone())
    }

    /// A snapshot of the reports kept: each one's calls' model ids.
    pub fn kept(&self) -> Kept {
        Kept(
            self.entries
                .iter()
                .map(|(id, e)| {
                    (
                        id.clone(),
                        e.report.calls.iter().map(|c| c.id.clone()).collect(),
                    )
                })
                .collect(),
        )
    }

    /// Records a report, on disk before it returns. `Ok(false)`: that completion is
    /// recorded already (nothing is written).
    pub fn record(&mut self, report: WitnessReport) -> Result<bool, StoreError> {
        if self.entries.contains_key(&report.completion) {
            return Ok(false);
        }
        self.write(Line::Report { report })?;
        Ok(true)
    }

    /// Marks the call `w` names as used, in memory: its decision's audit line is the durable
    /// record. `false`: no such completion is kept (a use of a forgotten record is moot:
    /// its calls are `not_witnessed`).
    pub fn mark_used(&mut self, w: &WitnessRef) -> bool {
        match self.entries.get_mut(&w.completion) {
            Some(e) => {
                e.used.insert(w.index);
                true
            }
            None => false,
        }
    }

    fn write(&mut self, line: Line) -> Result<(), StoreError> {
        let path = self.dir.join(FILE);
        let io = |source| StoreError::Io {
            path: path.clone(),
            error: source,
        };
        let mut bytes = serde_json::to_vec(&line).map_err(|e| io(e.into()))?;
        bytes.push(b'\n');
        self.file.write_all(&bytes).map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.lines += 1;
        self.apply(line);
        if self.lines > 2 * self.max {
            self.rewrite()?;
        }
        Ok(())
    }

    /// Forgets every report, on disk before it returns: their calls are `not_witnessed` from
    /// now on. For an audit log that starts anew (the owner moved a broken one aside, A3)
    /// while reports are kept: the uses of their calls were in the old log.
    pub fn forget_all(&mut self) -> Result<(), StoreError> {
        self.entries.clear();
        self.order.clear();
        self.rewrite()
    }

    /// Rewrites the file with what is kept: each report, then the uses `used` lines recorded.
    fn rewrite(&mut self) -> Result<(), StoreError> {
        let path = self.dir.join(FILE);
        let mut bytes = Vec::new();
        let mut lines = 0;
        for id in &self.order {
            let Some(e) = self.entries.get(id) else {
                continue;
            };
            let report = Line::Report {
                report: e.report.clone(),
            };
            let uses = e.recorded.iter().map(|&index| Line::Used {
                completion: id.clone(),
                index,
            });
            for line in std::iter::once(report).chain(uses) {
                serde_json::to_writer(&mut bytes, &line).map_err(|e| StoreError::Io {
                    path: path.clone(),
                    error: e.into(),
                })?;
                bytes.push(b'\n');
                lines += 1;
            }
        }
        durable::replace_file(&path, &self.dir.join(TMP), &bytes, 0o600).map_err(|e| {
            StoreError::Io {
                path: e.path,
                error: e.source,
            }
        })?;
        self.file =
            durable::open(&path, Some(0o600), FORBIDDEN).map_err(|source| StoreError::Refused {
                path: path.clone(),
                error: source,
            })?;
        self.lines = lines;
        Ok(())
    }
}
