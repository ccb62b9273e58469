//! The audit log: its one writer, its checkpoint, and its verification at start and daily.
//!
//! brokerd's single audit writer (pre-M1 design section 6, brief decision 10).
//!
//! Files are `DIR/YYYY-MM-DD.jsonl`, one line per record, each ending in `\n`. `prev` is
//! the SHA-256 of the previous line's stored bytes, chained across files from 32 zero
//! bytes; `seq` grows by one per line across files. A record goes to the file of its UTC
//! date, except that the writer never goes back to an earlier file when the clock does:
//! readers walk files in name order, so name order must stay chain order.
//!
//! One writer: an exclusive `flock` on `DIR/.lock`, held while the [`AuditLog`] lives.
//! Each append is one `write_all` of line and newline (O_APPEND) followed by `sync_data`,
//! and returns only after that, so a caller that answers after `append` returns never
//! answers a decision that is not on disk. A failed write or fsync poisons the log: what
//! reached the disk is unknown and a failed fsync cannot be retried safely (the kernel may
//! have dropped the dirty pages), so the caller must stop serving and restart.
//!
//! At open the log is verified with proto's `ChainVerifier` from its checkpoint (the whole
//! log when there is none; `checkpoint.rs`, docs/decisions.md A8); see `scan.rs` for what
//! is recovered and what refuses start. Nothing is ever truncated or rewritten.
//! [`verify_whole`] verifies the whole log while brokerd serves, up to a link the writer
//! reached ([`AuditLog::position`]), and [`write_checkpoint`] writes a checkpoint there.

mod checkpoint;
mod error;
mod files;
mod recover;
mod report;
mod scan;
#[cfg(test)]
mod tests;
mod whole;

use std::cell::Cell;
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use nix::fcntl::Flock;
use proto::chain::{ChainHead, line_hash};

use proto::{AuditEvent, AuditLine, Hash32, Timestamp};

pub use checkpoint::Problem;
pub use error::AuditError;
pub use report::{Appended, OpenReport, Recovered};
use scan::Range;
pub use scan::{Position, Spot};
pub use whole::{Whole, verify_whole, write_checkpoint};

/// Where record times come from. Injectable so tests can cross a day boundary.
pub type Clock = Box<dyn Fn() -> Timestamp + Send>;

/// Told each durability step of every append, in order; the seam that proves a record is
/// on disk before its answer leaves brokerd.
pub type Observer = Box<dyn Fn(DurabilityEvent) + Send>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurabilityEvent {
    /// The line and its newline were handed to the kernel.
    Written { seq: u64 },
    /// `sync_data` returned: the line is on disk.
    Synced { seq: u64 },
}

/// The single audit writer. Holds the directory lock until dropped.
pub struct AuditLog {
    dir: PathBuf,
    /// Kept open for directory fsyncs after a day file is created.
    dir_handle: File,
    _lock: Flock<File>,
    current: Option<DayFile>,
    head: ChainHead,
    /// Where the last link ends (none: the log has no line).
    last: Option<Spot>,
    /// Torn lines that recovery lines account for.
    recovered: u64,
    clock: Clock,
    observer: Option<Observer>,
    /// Why the log was poisoned, if it was.
    poisoned: Option<String>,
    /// Test-only fault injection (see `inject`); always `None` outside tests.
    fault: Cell<Option<Fault>>,
}

struct DayFile {
    name: String,
    file: File,
    /// Its length, and how many lines it holds.
    len: u64,
    lines: u64,
}

/// Points in an append where a test can make the I/O fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Write,
    Sync,
}

/// An append failure, and whether it leaves the disk in an unknown state.
struct Failure {
    error: AuditError,
    poison: bool,
}

impl AuditLog {
    /// Opens (creating if missing) the audit log in `dir`, with the system clock.
    pub fn open(dir: &Path) -> Result<(Self, OpenReport), AuditError> {
        Self::open_with_clock(dir, Box::new(Timestamp::now))
    }

    /// As [`AuditLog::open`], with record times taken from `clock`.
    pub fn open_with_clock(dir: &Path, clock: Clock) -> Result<(Self, OpenReport), AuditError> {
        Self::lock(dir)?.open(clock, &mut |_| {})
    }

    /// Takes the log's lock, the first step of opening it: what else brokerd opens at start
    /// is opened once it holds this, so that a second brokerd stops here before it touches
    /// anything.
    pub fn lock(dir: &Path) -> Result<Locked, AuditError> {
        Ok(Locked {
            dir_handle: files::open_dir(dir)?,
            lock: files::take_lock(dir)?,
            dir: dir.to_owned(),
        })
    }
}

/// The audit log's lock, held: [`Locked::open`] then verifies the log and opens its writer.
#[derive(Debug)]
pub struct Locked {
    dir: PathBuf,
    dir_handle: File,
    lock: Flock<File>,
}

impl Locked {
    /// Verifies the log from its checkpoint (after checking that the checkpoint matches the
    /// bytes; the whole log when there is none), showing `linked` every line past it that is
    /// a link of the chain, in order (what brokerd rebuilds from the log, the calls used,
    /// it reads here, in the one pass the verification makes; the checkpoint in the report
    /// holds what the lines before it left), and opens the writer after its last line.
    pub fn open(
        self,
        clock: Clock,
        linked: &mut dyn FnMut(&AuditLine),
    ) -> Result<(AuditLog, OpenReport), AuditError> {
        let Self {
            dir,
            dir_handle,
            lock,
        } = self;
        let dir = dir.as_path();
        let from = checkpoint::read(dir)?;
        if let Some(cp) = &from {
            checkpoint::check(dir, cp)?;
        }
        let range = Range {
            from: from.as_ref(),
            ..Range::default()
        };
        let scan = scan::scan(dir, range, linked)?;
        let current = match scan.files.last() {
            Some(name) => {
                let (len, lines) = match &scan.end {
                    Some(end) if end.file == *name => (end.end, end.line),
                    _ => (0, 0),
                };
                let path = dir.join(name);
                let file = files::open_log(&path)?;
                // A previous brokerd may have died between a write and its fsync. Those
                // bytes are chained on below, so they must be on disk before anything
                // chains on them from another file.
                file.sync_data().map_err(|source| AuditError::Io {
                    path,
                    op: "fsync",
                    error: source,
                })?;
                Some(DayFile {
                    name: name.clone(),
                    file,
                    len,
                    lines,
                })
            }
            None => None,
        };
        dir_handle.sync_all().map_err(|source| AuditError::Io {
            path: dir.to_owned(),
            op: "fsync the directory",
            error: source,
        })?;
        let mut log = AuditLog {
            dir: dir.to_owned(),
            dir_handle,
            _lock: lock,
            current,
            head: scan.head,
            last: scan.last,
            recovered: scan.recovered,
            clock,
            observer: None,
            poisoned: None,
            fault: Cell::new(None),
        };
        let recovered = scan.tail.map(|tail| log.recover(tail)).transpose()?;
        let report = OpenReport {
            files: scan.files.len(),
            lines: scan.lines,
            earlier_recoveries: scan.recovered,
            recovered,
            head: log.head,
            from,
            read: scan.read,
        };
        Ok((log, report))
    }
}

impl AuditLog {
    /// Sets the durability observer (replacing any earlier one).
    pub fn set_observer(&mut self, observer: Observer) {
        self.observer = Some(observer);
    }

    /// Records how a tool run ended when the tool did not report it itself (a limit of its
    /// unit, a signal, an exit status): `tool_failed`, after the call's decision line.
    pub fn tool_failed(
        &mut self,
        req: &proto::ToolRequest,
        failure: &proto::ToolFailure,
    ) -> Result<Appended, AuditError> {
        self.append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::ToolFailed {
                seq,
                time,
                prev,
                session: req.session.clone(),
                call: req.call,
                tool: req.tool.clone(),
                failure: failure.clone(),
            })
        })
    }

    /// Appends one line. `build` gets the `seq`, time and `prev` the line must carry and
    /// returns the line; it is checked, written, fsynced, and only then is `Ok` returned.
    pub fn append(
        &mut self,
        build: impl FnOnce(u64, Timestamp, Hash32) -> AuditLine,
    ) -> Result<Appended, AuditError> {
        if let Some(cause) = &self.poisoned {
            return Err(AuditError::Poisoned {
                dir: self.dir.clone(),
                cause: cause.clone(),
            });
        }
        let ChainHead {
            next_seq: seq,
            prev,
        } = self.head;
        let time = (self.clock)();
        let line = build(seq, time, prev);
        let mismatch = |field| Err(AuditError::Mismatch { seq, field });
        if line.seq() != seq {
            return mismatch("seq");
        }
        if line.prev() != prev {
            return mismatch("prev");
        }
        if line.time() != time {
            return mismatch("time");
        }
        let mut bytes = serde_json::to_vec(&line)
            .map_err(|source| AuditError::Encode { seq, error: source })?;
        // serde_json escapes control characters in strings, so this cannot happen; a line
        // with a raw newline would split into two lines on disk, so it is checked anyway.
        if bytes.contains(&b'\n') {
            return mismatch("encoding (a raw newline)");
        }
        let hash = line_hash(&bytes);
        bytes.push(b'\n');
        match self.write_line(&files::day_name(time), &bytes, seq) {
            Ok(spot) => {
                self.head = ChainHead {
                    next_seq: seq + 1,
                    prev: hash,
                };
                self.last = Some(spot);
                Ok(Appended { seq, hash })
            }
            Err(Failure { error, poison }) => {
                if poison {
                    self.poisoned = Some(error.to_string());
                }
                Err(error)
            }
        }
    }

    /// The `seq` and `prev` the next line will carry.
    pub fn head(&self) -> ChainHead {
        self.head
    }

    /// Whether an earlier write or fsync failed (every append now fails).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// The last link, on disk, and where it ends: where a checkpoint written now points.
    /// `None` while the log has no line.
    pub fn position(&self) -> Option<Position> {
        let at = self.last.clone()?;
        let seq = self.head.next_seq.checked_sub(1)?;
        Some(Position {
            at,
            seq,
            hash: self.head.prev,
            recovered: self.recovered,
        })
    }

    /// The audit directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn write_line(&mut self, day: &str, bytes: &[u8], seq: u64) -> Result<Spot, Failure> {
        // Only ever forward: a record whose date is before the current file's (the clock
        // went back) joins the current file, so name order stays chain order.
        let current = match self.current.take() {
            Some(c) if c.name.as_str() >= day => c,
            old => match self.create_day(day) {
                Ok(c) => c,
                Err(f) => {
                    self.current = old;
                    return Err(f);
                }
            },
        };
        let result = self.write_to(&current, bytes, seq);
        let mut current = current;
        // Counted even when the write failed: the log is poisoned then, and never read again.
        current.len += u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        current.lines += 1;
        let spot = Spot {
            file: current.name.clone(),
            end: current.len,
            line: current.lines,
        };
        self.current = Some(current);
        result.map(|()| spot)
    }

    fn write_to(&self, current: &DayFile, bytes: &[u8], seq: u64) -> Result<(), Failure> {
        let fail = |op, source| Failure {
            error: AuditError::Io {
                path: self.dir.join(&current.name),
                op,
                error: source,
            },
            poison: true,
        };
        // One write_all on an O_APPEND descriptor: a crash leaves at most a torn tail,
        // which the next start recovers.
        self.inject(Fault::Write)
            .and_then(|()| (&current.file).write_all(bytes))
            .map_err(|e| fail("write", e))?;
        self.notify(DurabilityEvent::Written { seq });
        self.inject(Fault::Sync)
            .and_then(|()| current.file.sync_data())
            .map_err(|e| fail("fsync", e))?;
        self.notify(DurabilityEvent::Synced { seq });
        Ok(())
    }

    /// Creates `day`'s file and makes its name durable.
    fn create_day(&self, day: &str) -> Result<DayFile, Failure> {
        let file = files::create_log(&self.dir.join(day)).map_err(|error| Failure {
            error,
            poison: false,
        })?;
        // The new name must be durable before any line in it is answered. The file now
        // exists; if its entry cannot be synced, its fate is unknown: poison.
        self.dir_handle.sync_all().map_err(|source| Failure {
            error: AuditError::Io {
                path: self.dir.clone(),
                op: "fsync the directory",
                error: source,
            },
            poison: true,
        })?;
        Ok(DayFile {
            name: day.to_owned(),
            file,
            len: 0,
            lines: 0,
        })
    }

    fn notify(&self, event: DurabilityEvent) {
        if let Some(observer) = &self.observer {
            observer(event);
        }
    }

    /// Fails the I/O at `at` once, if a test armed it. Without `unsafe` there is no way to
    /// make a real write or fsync fail on demand (and as root permissions do not), so the
    /// poisoning logic is tested through this.
    fn inject(&self, at: Fault) -> std::io::Result<()> {
        if self.fault.get() == Some(at) {
            self.fault.set(None);
            return Err(std::io::Error::other("injected fault"));
        }
        Ok(())
    }
}

impl fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuditLog")
            .field("dir", &self.dir)
            .field("current", &self.current.as_ref().map(|c| &c.name))
            .field("head", &self.head)
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}
