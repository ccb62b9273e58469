//! The hands' calls through the broker (docs/decisions.md H2, H8, H10, H11): a write's look
//! and plan before the owner is asked (brokerd computes the new content, its hash and the
//! card's diff from bytes it holds), its commit over exactly what was looked at, and a
//! `run`'s program. Every answer is labelled by the decision (which holds the labels of the
//! place written or bound, `policy::hands`) joined with the label the call was decided at.

use proto::approval::{Shows, WriteCard};
use proto::tools::WriteMode;
use proto::tools::stage::{Found, OldFile, StageFailure, StageOutput, WriteCall};
use proto::tools::{ToolArgs, WriteFileArgs};
use proto::{Hash32, ToolFailure, ToolRequest, ToolResponse, WriteRecord};
use textedit::EditError;

use super::Broker;
use crate::Fatal;
use crate::policy::{Decision, Labels};
use crate::run::hands::{self, write_call};
use crate::run::runner::RunOutcome;
use crate::sessions::SessionState;

/// A write as brokerd will make it: what its card shows and binds, what its audit line
/// proves, and what its commit must find and leave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    pub card: WriteCard,
    pub record: WriteRecord,
    pub old: Found,
    pub new: Hash32,
    pub size: u64,
}

/// Why a write cannot be made, found before anything is asked or written: the typed
/// failure and brokerd's own words (never a unit's).
pub(super) type NotMade = (StageFailure, String);

impl Broker {
    /// Looks at a write's target (unless it creates a file: the commit finds the name free
    /// or fails) and computes what the write leaves. Only for a decision that may look.
    pub(super) fn plan(&self, req: &ToolRequest, decision: &Decision) -> Result<Plan, NotMade> {
        let Some((call, path)) = decision.args().and_then(write_call) else {
            return Err((StageFailure::Invocation, "internal: not a write".into()));
        };
        let creates = matches!(&call, WriteCall::WriteFile(a) if a.mode == WriteMode::Create);
        let old = if creates {
            None
        } else {
            self.look(req, decision, path)?
        };
        // The unit's hash is not taken: brokerd hashes the bytes it holds.
        let old_text = old.as_ref().map(|f| f.text.as_str());
        let old_hash = old_text.map(|t| Hash32::digest(t.as_bytes()));
        let new = textedit::apply(old_text, &call).map_err(|e| {
            let failure = match e {
                EditError::Exists => StageFailure::Exists,
                EditError::Missing => StageFailure::NotFound,
                EditError::TooLarge { .. } => StageFailure::TooLarge,
                EditError::NotFound | EditError::Several(_) => StageFailure::Edit,
            };
            (failure, format!("{path}: {e}"))
        })?;
        let new_hash = Hash32::digest(new.as_bytes());
        let size = new.len() as u64;
        let (shows, shown) = match (&call, old_text) {
            (WriteCall::WriteFile(WriteFileArgs { mode, content, .. }), Some(_))
                if *mode == WriteMode::Append =>
            {
                (Shows::Appended, textedit::shown(content))
            }
            (_, Some(old)) => (Shows::Diff, textedit::diff(path, old, &new)),
            (_, None) => (Shows::Content, textedit::shown(&new)),
        };
        Ok(Plan {
            card: WriteCard {
                path: path.to_owned(),
                old_sha256: old_hash,
                old_size: old_text.map(|t| t.len() as u64),
                new_sha256: new_hash,
                new_size: size,
                shows,
                text: shown.text,
                truncated: shown.truncated,
            },
            record: WriteRecord {
                path: path.to_owned(),
                old_sha256: old_hash,
                new_sha256: Some(new_hash),
                new_size: Some(size),
            },
            old: old_hash.map_or(Found::Absent, Found::Sha256),
            new: new_hash,
            size,
        })
    }

    /// The look unit's answer: the target's text, or `None` when it is absent.
    fn look(
        &self,
        req: &ToolRequest,
        decision: &Decision,
        path: &str,
    ) -> Result<Option<OldFile>, NotMade> {
        let spec = hands::look(&self.config, req, decision)
            .map_err(|e| (StageFailure::Invocation, format!("{path}: {e}")))?;
        match self.runner.look(decision, &spec) {
            RunOutcome::Staged(StageOutput::Looked { file }) => Ok(file),
            RunOutcome::Staged(StageOutput::Failed { failure, .. }) => {
                Err((failure, format!("{path}: {}", refused(failure))))
            }
            RunOutcome::Failed { failure, .. } => Err((
                StageFailure::Io,
                format!(
                    "{path}: the look at the file failed{}",
                    failure.map(|f| format!(" ({f})")).unwrap_or_default()
                ),
            )),
            RunOutcome::Staged(_) | RunOutcome::Ok { .. } => Err((
                StageFailure::Io,
                format!("{path}: the look unit answered something else than a look"),
            )),
        }
    }

    /// A write's commit: over exactly what the plan found, leaving exactly what it
    /// computed. A commit that fails is audited (`tool_failed`, H10).
    pub(super) fn commit(
        &self,
        req: &ToolRequest,
        decision: Decision,
        plan: &Plan,
        decided: &SessionState,
    ) -> Result<(ToolResponse, Labels), Fatal> {
        let (labels, read) = answered(&decision, decided);
        let path = plan.record.path.clone();
        let outcome = match hands::commit(&self.config, req, &decision, plan.old, plan.new) {
            Ok(spec) => match self.runner.run(decision, &spec) {
                RunOutcome::Staged(StageOutput::Committed { old, new, size })
                    if old == plan.old && new == plan.new && size == plan.size =>
                {
                    RunOutcome::Ok {
                        content: format!("wrote {path}: {size} bytes, sha256 {new}"),
                        truncated: false,
                    }
                }
                RunOutcome::Staged(StageOutput::Failed { failure, message }) => {
                    RunOutcome::Failed {
                        message: format!("{path} was not written: {message}"),
                        failure: Some(ToolFailure::Write { failure }),
                    }
                }
                RunOutcome::Staged(_) => RunOutcome::Failed {
                    message: format!(
                        "{path}: the commit unit reported another write than brokerd asked for"
                    ),
                    failure: Some(ToolFailure::Write {
                        failure: StageFailure::Disagree,
                    }),
                },
                other => other,
            },
            Err(e) => RunOutcome::failed(e.to_string()),
        };
        self.settle(req, labels, read, outcome)
    }

    /// A `run`: the program's report as the model reads it; an end other than exit status
    /// 0 is a failed result carrying the output, typed (H11).
    pub(super) fn run_program(
        &self,
        req: &ToolRequest,
        decision: Decision,
        decided: &SessionState,
    ) -> Result<(ToolResponse, Labels), Fatal> {
        let (labels, read) = answered(&decision, decided);
        let outcome = match hands::run(&self.config, &self.programs, req, &decision) {
            Ok(spec) => match self.runner.run(decision, &spec) {
                RunOutcome::Staged(StageOutput::Ran { report }) => {
                    let truncated = report.stdout.truncated || report.stderr.truncated;
                    match report.render() {
                        (content, None) => RunOutcome::Ok { content, truncated },
                        (message, failure) => RunOutcome::Failed { message, failure },
                    }
                }
                RunOutcome::Staged(StageOutput::Failed { message, .. }) => {
                    RunOutcome::failed(message)
                }
                RunOutcome::Staged(_) => {
                    RunOutcome::failed("the run unit answered something else than a run")
                }
                other => other,
            },
            Err(e) => RunOutcome::failed(e.to_string()),
        };
        self.settle(req, labels, read, outcome)
    }
}

/// brokerd's words for what a look refused (the unit's own words stay out of the audit).
fn refused(failure: StageFailure) -> String {
    match failure {
        StageFailure::Link => "a link, a step out of the granted directory or a mount lies on \
             the way; links below the granted directory are never followed"
            .into(),
        StageFailure::NotFound => "a directory on the way does not exist".into(),
        StageFailure::NotRegular => {
            "not a regular file, or a part of its path is not a directory".into()
        }
        StageFailure::NotText => "not text (UTF-8 without NUL): only text files are written".into(),
        StageFailure::TooLarge => format!(
            "larger than {} bytes, the most a write reads or leaves",
            proto::tools::hands::MAX_FILE
        ),
        StageFailure::Owner => {
            "it or its directory belongs to another user than the one writes run as".into()
        }
        StageFailure::Linked => {
            "it has other hard links, which a write by rename would leave behind".into()
        }
        StageFailure::SetId => "it has a set-uid or set-gid bit, which a write cannot keep".into(),
        other => format!("the look failed ({})", other.as_str()),
    }
}

/// What a hands call's answer is labelled by, and what it read for the card's sources: the
/// decision's labels (its grants and what they bind, H9) joined with the label the call was
/// decided at (X9), taken before the decision is consumed by its run.
fn answered(decision: &Decision, decided: &SessionState) -> (Labels, Option<String>) {
    let labels = decision
        .labels()
        .unwrap_or(Labels::NONE)
        .join(decided.labels());
    (labels, decision.args().and_then(ToolArgs::reads))
}
