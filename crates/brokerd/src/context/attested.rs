//! What brokerd knows of the context a call came from (issue 17): what inferproxy witnessed
//! (`witness`) and the label of every message brokerd can account for (`accounting`), kept
//! together so that each report is accounted before it is acknowledged, and each call is
//! decided on the labels of the prompt that produced it.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use daemon::lock;
use proto::attest::{WitnessRef, WitnessReport};
use proto::{DenyReason, Hash32, ToolResponse};

use crate::context::accounting::{Accounted, Accounting, Durable, LogError, of_response};
use crate::context::witness::{Kept, NotRecorded, StoreError, Unwitnessed, Witness};
use crate::policy::Labels;

#[derive(Debug)]
pub struct Attested {
    witness: Witness,
    accounting: Mutex<Accounting>,
    /// The owner's core memory file (`Config::core_memory_path`), read before a report is
    /// accounted when it changed: the system message built from it is the owner's (X5).
    core_file: PathBuf,
    /// The file's stamp when it was last read (`None`: not read yet, or not there).
    core_seen: Mutex<Option<CoreStamp>>,
}

/// What tells one version of the core memory file from another without reading it.
type CoreStamp = (u64, u64, i64, i64, i64, i64);

fn core_stamp(path: &std::path::Path) -> Option<CoreStamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

/// A witnessed call that may run: the labels of the prompt that produced it (and the calls
/// that made it untrusted), and the id the model gave it (`None`: the accounting no longer
/// knows its completion, so its result is not accounted either and the prompt counts as
/// unaccounted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    pub prompt: Accounted,
    pub call_id: Option<String>,
}

/// An accounting write that failed, as the witness socket reports a store that failed: it
/// stops brokerd before anything is acknowledged.
fn as_store(e: LogError) -> StoreError {
    match e {
        LogError::Io { path, error } => StoreError::Io { path, error },
        LogError::Corrupt { path, line, reason } => StoreError::Corrupt { path, line, reason },
    }
}

impl Attested {
    pub fn new(witness: Witness, accounting: Accounting, core_file: PathBuf) -> Self {
        Self {
            witness,
            accounting: Mutex::new(accounting),
            core_file,
            core_seen: Mutex::new(None),
        }
    }

    /// Whether both can be reached (for the watchdog).
    pub fn alive(&self) -> bool {
        self.witness.alive() && daemon::reachable(&self.accounting, Duration::from_secs(1))
    }

    /// A report from inferproxy: accounted (its answer at its prompt's labels, the owner's
    /// core memory as it is now first), then recorded; both on disk before it is
    /// acknowledged.
    pub fn record(&self, report: WitnessReport) -> Result<Result<(), NotRecorded>, StoreError> {
        let mut accounting = lock(&self.accounting);
        let mut seen = lock(&self.core_seen);
        let now = core_stamp(&self.core_file);
        if now.is_none() || *seen != now {
            let core = owner_words::core_memory::read(&self.core_file, "brokerd");
            accounting.core(&core).map_err(as_store)?;
            *seen = now;
        }
        drop(seen);
        accounting.witnessed(&report).map_err(as_store)?;
        drop(accounting);
        self.witness.record(report)
    }

    /// [`Witness::claim`], and the labels of the call's prompt. A request that names no
    /// witnessed call (`None`: the pre-M1 shape, which proto still parses) is denied as one
    /// naming a call nobody witnessed is.
    pub fn claim(
        &self,
        w: Option<&WitnessRef>,
        tool: &str,
        arguments: &str,
    ) -> Result<Claimed, Unwitnessed> {
        let Some(w) = w else {
            return Err((
                DenyReason::NotWitnessed,
                "the request names no call inferproxy witnessed (it has no witness)".into(),
            ));
        };
        self.witness.claim(w, tool, arguments)?;
        let accounting = lock(&self.accounting);
        let at = usize::try_from(w.index).unwrap_or(usize::MAX);
        Ok(match accounting.completion(&w.completion) {
            Some((prompt, calls)) => Claimed {
                prompt,
                call_id: calls.get(at).cloned(),
            },
            None => {
                daemon::log::warn(format_args!(
                    "accounting: completion {} is no longer kept; its call is labelled at \
                     the highest label brokerd has sent",
                    w.completion
                ));
                Claimed {
                    prompt: accounting.sent_accounted(),
                    call_id: None,
                }
            }
        })
    }

    /// brokerd answers the witnessed call `claimed` (none: a call that was not), decided at
    /// `decided` (made untrusted by `sources`), with `r`: the tool message loopd makes of it
    /// is accounted at its labels ([`of_response`]: a result's, which carry `decided`
    /// already; a failure's, those of the run, `ran`; a denial's, `decided`) before the
    /// answer leaves. A result's or a failure's record is on disk by then; a denial's is
    /// durable in its decision's audit line, written before this (it names the witnessed
    /// call, holds the denial and the label it was decided at), so its record is kept in
    /// memory only, and every start accounts it again from that line ([`Rebuilt`], X8).
    pub fn returned(
        &self,
        claimed: Option<&Claimed>,
        r: &ToolResponse,
        ran: Option<Labels>,
        decided: Labels,
        sources: &[proto::approval::CallRef],
    ) -> Result<(), LogError> {
        let durable = match r {
            ToolResponse::Denied { .. } => Durable::InAudit,
            _ => Durable::Here,
        };
        match claimed.and_then(|c| c.call_id.as_deref()) {
            Some(id) => lock(&self.accounting).returned(
                id,
                r,
                of_response(r, ran, decided),
                sources,
                durable,
            ),
            None => Ok(()),
        }
    }

    /// The label of an answer loopd returned as its final text (a job's delivery):
    /// what brokerd accounted the witnessed answer of that text at, the label of the
    /// prompt that produced it; an answer brokerd cannot account for (or none) counts as
    /// the highest label it has sent, as any unaccounted message does.
    pub fn answer(&self, text: Option<&str>) -> Accounted {
        let accounting = lock(&self.accounting);
        let digest = text
            .map(|t| proto::attest::ChatMessage::assistant(Some(t.to_owned()), None, &[]).digest());
        match digest {
            Some(d) => accounting.label_of(&[d]),
            None => accounting.sent_accounted(),
        }
    }

    /// What a result drawn from loopd's session logs (`logs`) is labelled at, besides its
    /// own labels: the highest label brokerd has ever sent loopd; nothing for any other.
    pub fn for_logs(&self, logs: bool) -> Labels {
        if logs {
            lock(&self.accounting).sent()
        } else {
            Labels::NONE
        }
    }

    /// A channel's owner message.
    pub fn owner(&self, digest: Hash32) -> Result<(), LogError> {
        lock(&self.accounting).owner(digest)
    }

    /// The reports the witness store keeps now (for a full verification, A8).
    pub fn kept(&self) -> Kept {
        self.witness.kept()
    }

    /// [`Accounting::rebuild`], while brokerd serves: the denials a full verification found
    /// written to the accounting file, synced, before a checkpoint covers their lines (A8).
    pub fn rebuild(&self, denials: &[(String, ToolResponse, Labels)]) -> Result<usize, LogError> {
        lock(&self.accounting).rebuild(denials)
    }
}
