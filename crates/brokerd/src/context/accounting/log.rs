//! The accounting's file: one JSON line per record, appended and synced (`sync_data`)
//! before the call that made it returns (a denial's record is not written when it is made:
//! its decision's audit line is its durable record, X8). When it holds twice the records kept, it is
//! rewritten (temp file, fsync, rename, directory fsync) with the highest label sent first
//! and then the records kept. A torn last line (a write that died before its sync, so never
//! acknowledged) is cut off at open; any other line that does not parse refuses start.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use proto::approval::CallRef;

use super::record::{OWNER, Record, add_sources};
use crate::policy::Labels;

/// The longest line the file may hold.
const MAX_LINE: usize = 64 * 1024;

/// Why the accounting cannot be used. Each text is whole: it prints what it wraps
/// (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "{}: line {line}: {reason}; brokerd will not start on an accounting it cannot read \
         (removing the file makes every prompt fail closed until the messages are accounted \
         again)",
        path.display()
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Sent {
        sent: Labels,
        /// The calls that made `sent` untrusted (absent in files written before them).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        sources: Vec<CallRef>,
    },
    Record(Record),
}

/// The highest label sent, and the calls that made it untrusted.
pub type Sent = (Labels, Vec<CallRef>);

#[derive(Debug)]
pub struct Log {
    path: PathBuf,
    file: File,
    lines: usize,
    max: usize,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LogError + '_ {
    move |source| LogError::Io {
        path: path.to_owned(),
        error: source,
    }
}

fn open_append(path: &Path) -> Result<File, LogError> {
    OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(io(path))
}

impl Log {
    /// The file at `path` (created if missing): the highest label sent it records and its
    /// records, oldest first.
    pub fn open(path: &Path, max: usize) -> Result<(Self, Sent, Vec<Record>), LogError> {
        let file = open_append(path)?;
        let mut reader = BufReader::new(&file);
        let mut sent = OWNER;
        let mut sources = Vec::new();
        let mut records = Vec::new();
        let (mut n, mut good) = (0usize, 0u64);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let got = reader.read_until(b'\n', &mut buf).map_err(io(path))?;
            if got == 0 {
                break;
            }
            if buf.last() != Some(&b'\n') {
                // Torn: never synced, so never acknowledged. Cut off.
                file.set_len(good).map_err(io(path))?;
                break;
            }
            n += 1;
            let corrupt = |reason: String| LogError::Corrupt {
                path: path.to_owned(),
                line: n,
                reason,
            };
            if buf.len() > MAX_LINE {
                return Err(corrupt(format!("longer than {MAX_LINE} bytes")));
            }
            match serde_json::from_slice::<Line>(&buf) {
                Ok(Line::Sent {
                    sent: s,
                    sources: from,
                }) => {
                    sent = sent.join(s);
                    add_sources(&mut sources, &from);
                }
                Ok(Line::Record(r)) => records.push(r),
                Err(e) => return Err(corrupt(e.to_string())),
            }
            good += u64::try_from(got).unwrap_or(u64::MAX);
        }
        let log = Self {
            path: path.to_owned(),
            file,
            lines: n,
            max: max.max(1),
        };
        Ok((log, (sent, sources), records))
    }

    pub fn path(&self) -> &PathBuf {
        &self.path
    }

    /// Appends `records` and syncs; or, when the file would pass twice the records kept,
    /// rewrites it with `sent` and the last records of `kept` then `records`.
    pub fn append(
        &mut self,
        records: &[Record],
        sent: (Labels, &[CallRef]),
        kept: &VecDeque<Record>,
    ) -> Result<(), LogError> {
        if self.lines + records.len() > 2 * self.max {
            return self.rewrite(records, sent, kept);
        }
        let mut out = Vec::new();
        for r in records {
            line(&mut out, &Line::Record(r.clone()));
        }
        let path = &self.path;
        self.file.write_all(&out).map_err(io(path))?;
        self.file.sync_data().map_err(io(path))?;
        self.lines += records.len();
        Ok(())
    }

    fn rewrite(
        &mut self,
        records: &[Record],
        (sent, sources): (Labels, &[CallRef]),
        kept: &VecDeque<Record>,
    ) -> Result<(), LogError> {
        let all: Vec<&Record> = kept.iter().chain(records).collect();
        let from = all.len().saturating_sub(self.max);
        let mut out = Vec::new();
        line(
            &mut out,
            &Line::Sent {
                sent,
                sources: sources.to_vec(),
            },
        );
        for r in &all[from..] {
            line(&mut out, &Line::Record((*r).clone()));
        }
        let tmp = self.path.with_extension("tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut f = OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&tmp)
            .map_err(io(&tmp))?;
        f.write_all(&out).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        std::fs::rename(&tmp, &self.path).map_err(io(&self.path))?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io(dir))?;
        }
        self.file = open_append(&self.path)?;
        self.lines = all.len() - from + 1;
        Ok(())
    }
}

fn line(out: &mut Vec<u8>, l: &Line) {
    // A record is digests and enums: writing it to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, l);
    out.push(b'\n');
}
