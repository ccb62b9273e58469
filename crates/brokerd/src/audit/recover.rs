//! The recovery of torn lines at the end of the log (docs/decisions.md A4): kept, ended with
//! a newline, and named by one `recovery` line.

use std::io::Write;

use proto::{AuditEvent, AuditLine};

use super::scan::Tail;
use super::{AuditError, AuditLog, Recovered};

impl AuditLog {
    /// Keeps the torn lines at the end and accounts for them with one recovery line.
    pub(super) fn recover(&mut self, tail: Tail) -> Result<Recovered, AuditError> {
        let Tail {
            lines: torn,
            needs_newline,
        } = tail;
        let Some((first, interrupted)) = torn.split_first() else {
            return Err(AuditError::Unsafe {
                path: self.dir.clone(),
                reason: "recovery of no torn line".into(),
            });
        };
        if needs_newline {
            // The open line is always in the newest file (scan refuses it anywhere else).
            let last = torn.last().unwrap_or(first);
            let path = self.dir.join(&last.file);
            let Some(current) = self.current.as_mut().filter(|c| c.name == last.file) else {
                return Err(AuditError::Unsafe {
                    path,
                    reason: "a torn line outside the newest file".into(),
                });
            };
            // Separately from the recovery line, which may go to a newer day's file. If
            // brokerd dies in between, or inside the recovery line, the next start finds
            // these lines again, and its recovery line names them all.
            (&current.file)
                .write_all(b"\n")
                .and_then(|()| current.file.sync_data())
                .map_err(|source| AuditError::Io {
                    path,
                    op: "end the torn line in",
                    error: source,
                })?;
            current.len += 1;
        }
        let recovery = self.append(|seq, time, prev| {
            AuditLine::Event(AuditEvent::Recovery {
                seq,
                time,
                prev,
                file: first.file.clone(),
                line: first.line,
                torn_bytes: first.torn_bytes,
                torn_sha256: first.torn_sha256,
                interrupted: interrupted.to_vec(),
            })
        })?;
        self.recovered += u64::try_from(torn.len()).unwrap_or(u64::MAX);
        Ok(Recovered {
            torn,
            newline_added: needs_newline,
            recovery,
        })
    }
}
