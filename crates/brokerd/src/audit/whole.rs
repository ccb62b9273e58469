//! The checkpoint's two writers' side: a checkpoint written at a link, and the whole log
//! verified while brokerd serves (the daily timer's request), which checks the checkpoint
//! on the way.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use proto::AuditLine;
use proto::attest::WitnessRef;
use proto::chain::ChainHead;
use proto::checkpoint::Checkpoint;

use super::scan::{self, Position, Range};
use super::{AuditError, checkpoint};

/// Writes the checkpoint of the log in `dir` at `at` (a link on disk), holding `used`: the
/// uses of witnessed calls that the lines up to it hold, of the reports the witness store
/// keeps. The caller makes sure that everything else those lines leave for brokerd is
/// durable elsewhere first (the accounting records of their denials, X8).
pub fn write_checkpoint(
    dir: &Path,
    at: &Position,
    used: Vec<WitnessRef>,
) -> Result<Checkpoint, AuditError> {
    let cp = Checkpoint {
        v: proto::checkpoint::VERSION,
        file: at.at.file.clone(),
        end: at.at.end,
        line: at.at.line,
        seq: at.seq,
        hash: at.hash,
        recovered: at.recovered,
        used,
    };
    checkpoint::write(dir, &cp)?;
    Ok(cp)
}

/// What [`verify_whole`] found: the links up to the position it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Whole {
    pub lines: u64,
    pub recovered: u64,
    pub head: ChainHead,
    /// The checkpoint it found, which agrees with the bytes.
    pub checkpoint: Option<u64>,
}

/// Verifies the log in `dir` from its first line to the link `to`, while the writer goes on
/// after it, showing `linked` every link; the checkpoint, if there is one, must agree with
/// the bytes (the link of its seq ends where it says). `stop` ends it early.
pub fn verify_whole(
    dir: &Path,
    to: &Position,
    stop: &AtomicBool,
    linked: &mut dyn FnMut(&AuditLine),
) -> Result<Whole, AuditError> {
    let cp = checkpoint::read(dir)?;
    let range = Range {
        to: Some(to),
        agree: cp.as_ref(),
        stop: Some(stop),
        ..Range::default()
    };
    let scan = scan::scan(dir, range, linked)?;
    if scan.head.next_seq != to.seq + 1 || scan.head.prev != to.hash {
        return Err(AuditError::Unsafe {
            path: dir.join(&to.at.file),
            reason: format!(
                "the verification ended at seq {}, not at the writer's seq {} (a day file \
                 changed while it ran)",
                scan.head.next_seq.saturating_sub(1),
                to.seq
            ),
        });
    }
    Ok(Whole {
        lines: scan.lines,
        recovered: scan.recovered,
        head: scan.head,
        checkpoint: cp.map(|c| c.seq),
    })
}
