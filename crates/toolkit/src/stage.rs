//! The hands' stages (docs/decisions.md H12): an input with a `stage` key is a
//! [`StageInvocation`], answered with one [`StageOutput`]; anything else is a
//! `ToolInvocation`, as before.

use proto::tools::stage::{StageFailure, StageInvocation, StageOutput};
use serde::Deserialize;

pub use crate::stage_error::StageError;

/// Only the key that tells a stage from a tool call; the strict parse follows.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    stage: Option<serde::de::IgnoredAny>,
}

/// Whether `input` is a stage invocation (an object with a `stage` key).
pub fn is_stage(input: &[u8]) -> bool {
    serde_json::from_slice::<Peek>(input).is_ok_and(|p| p.stage.is_some())
}

/// Parses and executes one stage invocation; every failure is an answer.
pub fn answer(input: &[u8]) -> StageOutput {
    let result = serde_json::from_slice::<StageInvocation>(input)
        .map_err(|e| StageError::new(StageFailure::Invocation, format!("not a stage: {e}")))
        .and_then(|stage| execute(&stage));
    result.unwrap_or_else(|e| StageOutput::Failed {
        failure: e.failure,
        message: e.message,
    })
}

pub fn execute(stage: &StageInvocation) -> Result<StageOutput, StageError> {
    match stage {
        StageInvocation::Look(l) => crate::write::look(l),
        StageInvocation::Commit(c) => crate::write::commit(c),
        StageInvocation::Run(r) => crate::run::run(r),
    }
}
