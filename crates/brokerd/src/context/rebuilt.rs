//! What a pass over the audit log gives back to the context (docs/decisions.md W9, X8, A8):
//! the uses of the witnessed calls whose reports the store keeps, and the denials of those
//! calls, whose tool messages the accounting takes again. A start takes them from the lines
//! past the checkpoint (`start::restore`); a full verification while brokerd serves, from
//! every line (`Broker::verify_audit`).

use proto::attest::{CompletionId, WitnessRef};
use proto::{AuditLine, AuditRecord, ToolResponse};

use crate::context::witness::{Kept, Store};
use crate::policy::Labels;

/// What the start takes from its pass over the audit log, one decision line at a time
/// ([`Rebuilt::visit`]), and from the checkpoint it verified from ([`Rebuilt::checkpointed`]):
/// the uses of the kept reports' calls, marked in the store (W9) and kept for the next
/// checkpoint (A8), and the denials of those calls in the lines past the checkpoint, whose
/// tool messages [`Accounting::rebuild`] then accounts again (X8; those before it are in the
/// accounting file already). Bounded as the uses are, by the calls of the kept reports.
/// While brokerd serves, [`Rebuilt::visit_kept`] takes the same from a snapshot of the kept
/// reports, for a full verification's checkpoint.
#[derive(Debug, Default)]
pub struct Rebuilt {
    /// How many decision lines (and checkpointed uses) named a call of a kept report.
    pub uses: usize,
    /// Each denied call's model id (from its report), what loopd was answered, and the
    /// label the line says the call was decided at.
    pub denials: Vec<(String, ToolResponse, Labels)>,
    /// The uses found, for the next checkpoint.
    pub used: Vec<WitnessRef>,
}

impl Rebuilt {
    pub fn visit(&mut self, store: &mut Store, line: &AuditLine) {
        if store.mark_audited(line) {
            self.uses += 1;
            self.used.extend(witness_of(line).cloned());
        }
        self.denials
            .extend(denial_of(|c, at| store.call_id(c, at), line));
    }

    /// A use the checkpoint holds: marked, when the store still keeps its report.
    pub fn checkpointed(&mut self, store: &mut Store, w: &WitnessRef) {
        if store.mark_used(w) {
            self.uses += 1;
            self.used.push(w.clone());
        }
    }

    /// [`Rebuilt::visit`] against `kept`, a snapshot of the reports the store keeps, without
    /// marking anything: the uses the line holds are the store's already.
    pub fn visit_kept(&mut self, kept: &Kept, line: &AuditLine) {
        if let Some(w) = witness_of(line)
            && kept.keeps(&w.completion)
        {
            self.uses += 1;
            self.used.push(w.clone());
        }
        self.denials
            .extend(denial_of(|c, at| kept.call_id(c, at), line));
    }

    /// The uses found whose reports `store` still keeps, once each, for a checkpoint.
    pub fn kept_uses(&self, keeps: impl Fn(&CompletionId) -> bool) -> Vec<WitnessRef> {
        let mut used: Vec<WitnessRef> = self
            .used
            .iter()
            .filter(|w| keeps(&w.completion))
            .cloned()
            .collect();
        used.sort_by(|a, b| (&a.completion, a.index).cmp(&(&b.completion, b.index)));
        used.dedup();
        used
    }
}

/// The witnessed call a decision line names.
fn witness_of(line: &AuditLine) -> Option<&WitnessRef> {
    match line {
        AuditLine::Decision(AuditRecord {
            witness: Some(w), ..
        }) => Some(w),
        _ => None,
    }
}

/// The denial an audit line holds for a witnessed call whose model id `call_id` knows (the
/// call of a kept report): the model's id of the call, what loopd was answered
/// ([`crate::policy::denied`] of the line's record, the one way that answer is made) and the
/// label it was decided at.
fn denial_of(
    call_id: impl Fn(&CompletionId, usize) -> Option<String>,
    line: &AuditLine,
) -> Option<(String, ToolResponse, Labels)> {
    let AuditLine::Decision(AuditRecord {
        witness: Some(w),
        decision,
        session_taint,
        untrusted,
        ..
    }) = line
    else {
        return None;
    };
    let denied = crate::policy::denied(decision)?;
    let id = call_id(&w.completion, usize::try_from(w.index).ok()?)?;
    let decided = Labels {
        class: *session_taint,
        untrusted: *untrusted,
    };
    Some((id, denied, decided))
}
