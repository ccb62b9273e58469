//! The checkpoint (`audit/checkpoint.json`, `proto::checkpoint`, docs/decisions.md A8): a
//! link of the chain that brokerd verified, and the uses of witnessed calls the lines up to
//! it hold, so that a start verifies and reads only the lines after it.
//!
//! Written as durable state is (`daemon::durable::replace_file`: temp file, fsync, rename,
//! directory fsync, 0600, never through a link) and only where everything the lines up to
//! it leave for brokerd is durable elsewhere: the uses in the checkpoint itself, the
//! accounting records of their denials in the accounting file (X8). Read back at start and
//! checked against the bytes: the line ending at its offset must hash to its head and
//! carry its seq. A checkpoint that cannot be read, or that disagrees with the log, refuses
//! the start (`AuditError::Checkpoint`), which says how the owner recovers.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use daemon::durable::{self, ReadError};
use proto::AuditLine;
use proto::chain::line_hash;
use proto::checkpoint::{self, Checkpoint};

use super::AuditError;
use super::files::{self, Entry};

/// What is wrong with a checkpoint, for [`AuditError::Checkpoint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The file is not what brokerd writes: torn, garbled, another version, refused.
    Unreadable(String),
    /// It reads, and it does not match the log's bytes.
    Mismatch(String),
}

pub(super) fn path(dir: &Path) -> PathBuf {
    dir.join(checkpoint::FILE)
}

/// The checkpoint in `dir`, if there is one.
pub(super) fn read(dir: &Path) -> Result<Option<Checkpoint>, AuditError> {
    let path = path(dir);
    let unreadable = |why: String| AuditError::Checkpoint {
        path: path.clone(),
        problem: Problem::Unreadable(why),
    };
    let bytes = match durable::read_file(&path, 0o077, checkpoint::MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::Missing) => return Ok(None),
        Err(ReadError::Refused(why)) => return Err(unreadable(why.to_string())),
    };
    let cp = Checkpoint::decode(&bytes).map_err(|e| unreadable(e.to_string()))?;
    if !matches!(files::classify(cp.file.as_ref()), Entry::Day(_)) {
        return Err(unreadable(format!(
            "it names {:?}, which is not a day file's name",
            cp.file
        )));
    }
    Ok(Some(cp))
}

/// Checks `cp` against the log's bytes: its file holds a line ending at its offset, and
/// that line hashes to its head and carries its seq. Reads that one line, nothing before it.
pub(super) fn check(dir: &Path, cp: &Checkpoint) -> Result<(), AuditError> {
    let mismatch = |why: String| AuditError::Checkpoint {
        path: path(dir),
        problem: Problem::Mismatch(why),
    };
    let day = dir.join(&cp.file);
    if !day.exists() {
        return Err(mismatch(format!(
            "it names {}, which is not there",
            cp.file
        )));
    }
    let file = files::open_read(&day)?;
    let len = file
        .metadata()
        .map_err(|source| AuditError::Io {
            path: day.clone(),
            op: "stat",
            error: source,
        })?
        .len();
    if cp.end > len {
        return Err(mismatch(format!(
            "it names byte {} of {}, which holds {len} bytes",
            cp.end, cp.file
        )));
    }
    let text = line_before(&file, &day, cp.end)?
        .ok_or_else(|| mismatch(format!("byte {} of {} ends no line", cp.end, cp.file)))?;
    if line_hash(&text) != cp.hash {
        return Err(mismatch(format!(
            "the line ending at byte {} of {} hashes to {}, the checkpoint says {}",
            cp.end,
            cp.file,
            line_hash(&text),
            cp.hash
        )));
    }
    let seq = AuditLine::from_slice(&text).map(|l| l.seq());
    if seq.as_ref().ok() != Some(&cp.seq) {
        return Err(mismatch(format!(
            "the line ending at byte {} of {} is not seq {}",
            cp.end, cp.file, cp.seq
        )));
    }
    Ok(())
}

/// The line (without its newline) that ends with the newline at byte `end - 1`, read
/// backwards a block at a time; `None` when that byte is not a newline.
fn line_before(file: &File, path: &Path, end: u64) -> Result<Option<Vec<u8>>, AuditError> {
    const BLOCK: u64 = 64 << 10;
    let read_at = |buf: &mut [u8], at: u64| {
        file.read_exact_at(buf, at)
            .map_err(|source| AuditError::Io {
                path: path.to_owned(),
                op: "read",
                error: source,
            })
    };
    let mut last = [0u8; 1];
    read_at(&mut last, end - 1)?;
    if last[0] != b'\n' {
        return Ok(None);
    }
    // `line` holds the bytes from `from` to the newline, growing backwards.
    let (mut line, mut from) = (Vec::new(), end - 1);
    while from > 0 {
        let start = from.saturating_sub(BLOCK);
        let mut block = vec![0u8; usize::try_from(from - start).unwrap_or(0)];
        read_at(&mut block, start)?;
        if let Some(i) = block.iter().rposition(|&b| b == b'\n') {
            block.drain(..=i);
            block.extend_from_slice(&line);
            return Ok(Some(block));
        }
        block.extend_from_slice(&line);
        line = block;
        from = start;
    }
    Ok(Some(line))
}

/// Writes `cp` as the checkpoint of `dir`, durably.
pub(super) fn write(dir: &Path, cp: &Checkpoint) -> Result<(), AuditError> {
    let bytes = cp.encode();
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > checkpoint::MAX_BYTES {
        return Err(AuditError::Unsafe {
            path: path(dir),
            reason: format!(
                "a checkpoint of {} bytes is larger than {} (too many kept uses): not written",
                bytes.len(),
                checkpoint::MAX_BYTES
            ),
        });
    }
    durable::replace_file(&path(dir), &dir.join(checkpoint::TMP), &bytes, 0o600).map_err(|e| {
        AuditError::Io {
            path: e.path,
            op: "write the checkpoint",
            error: e.source,
        }
    })
}
