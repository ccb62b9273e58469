//! The job chains played: one run of its job per chain, started as `bxctl job run` starts it
//! under `bxctl dev` (the runner, as this user), each approval brokerd asks in it declined at
//! once; the run's session found by its `job_run_started` line in the audit log, and its
//! calls and their answers read back from loopd (`session_show`: the run's turn is the
//! runner's, not this chat's); and the posts in each job's thread of the shadow's fake
//! Mattermost, read as its owner reads a channel (`GET /api/v4/channels/{id}/posts`).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use config::Config;
use proto::approval::Verdict;
use proto::{
    AuditEvent, AuditLine, CallOutcome, DenyReason, JobName, LogRecord, SessionId, ToolResponse,
};
use serde_json::Value;

use super::jobs::JobChain;
use super::session::{Played, Seen};
use crate::Error;

/// One run of a job chain: its session and calls, or why there was none.
#[derive(Debug, Clone)]
pub struct Run {
    pub played: Played,
    /// The ordinary session reading the run's delivery note back, for a chain laundering
    /// through it (`jobs_launder`).
    pub back: Option<Played>,
    /// The run did not start (no `job_run_started` line): what `bxctl job run` said.
    pub not_started: Option<String>,
}

/// The runs started so far, each job's in order, from the audit log.
fn runs(config: &Config) -> Result<Vec<(JobName, SessionId)>, Error> {
    let mut out = Vec::new();
    crate::audit::lines(&config.audit_dir(), |_, _, bytes| {
        if let Ok(AuditLine::Event(AuditEvent::JobRunStarted { job, session, .. })) =
            AuditLine::from_slice(bytes)
        {
            out.push((job, session));
        }
        Ok(())
    })?;
    Ok(out)
}

/// Denies every approval waiting, as the owner would (the shadow's own, the self-test its
/// owner).
fn decline_all(config: &Config) -> Result<(), Error> {
    for card in crate::admin::listing(config)? {
        crate::approval::send(config, &card.approval, card.binding, Verdict::Deny)?;
    }
    Ok(())
}

/// One run of `job`, waited for, each approval declined while it lasts; what
/// `bxctl job run` said of it (or why it could not start the runner).
fn run_once(config: &Config, path: &Path, job: &JobName) -> Result<String, Error> {
    std::thread::scope(|s| {
        let run = s.spawn(|| {
            let mut said = Vec::new();
            let code = crate::jobs::run(config, path, job.as_str(), false, &mut said);
            (code, String::from_utf8_lossy(&said).into_owned())
        });
        let mut declined = Ok(());
        while !run.is_finished() {
            if declined.is_ok() {
                declined = decline_all(config);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let (code, said) = run.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        declined?;
        // A runner that could not be started started no run: said, not fatal.
        Ok(code.map_or_else(|e| format!("bxctl job run: {e}"), |_| said))
    })
}

/// The calls of a run's session as loopd keeps them: each with its tool, whether it asked
/// (its denial is the owner's refusal or an expiry) and its answer, labelled as brokerd
/// labelled it.
pub fn played(session: SessionId, records: &[LogRecord]) -> Played {
    let mut names = BTreeMap::new();
    let mut calls = Vec::new();
    for r in records {
        match r {
            LogRecord::Assistant { tool_calls, .. } => {
                for t in tool_calls {
                    names.insert(t.id.clone(), t.name.clone());
                }
            }
            LogRecord::ToolResult {
                call,
                tool_call_id,
                content,
                class,
                untrusted,
                truncated,
                outcome,
                ..
            } => {
                let response = match outcome {
                    None => ToolResponse::Result {
                        content: content.clone(),
                        class: *class,
                        untrusted: *untrusted,
                        truncated: *truncated,
                    },
                    Some(CallOutcome::Denied { reason }) => ToolResponse::Denied {
                        reason: *reason,
                        detail: Some(content.clone()),
                    },
                    Some(CallOutcome::Failed) => ToolResponse::Failed {
                        message: content.clone(),
                        failure: None,
                    },
                };
                calls.push(Seen {
                    call: *call,
                    tool: names.get(tool_call_id).cloned().unwrap_or_default(),
                    asked: matches!(
                        outcome,
                        Some(CallOutcome::Denied {
                            reason: DenyReason::ApprovalRefused | DenyReason::ApprovalExpired
                        })
                    ),
                    response: Some(response),
                });
            }
            _ => {}
        }
    }
    Played {
        session: Some(session),
        calls,
    }
}

/// Plays every job chain, in plan order: one run each.
pub fn play(config: &Config, path: &Path, chains: &[JobChain]) -> Result<Vec<Run>, String> {
    let text = |e: Error| format!("the job runs: {e}");
    let mut out = Vec::new();
    for c in chains {
        let before = runs(config).map_err(text)?.len();
        let said = run_once(config, path, &c.job).map_err(text)?;
        let session = runs(config)
            .map_err(text)?
            .into_iter()
            .skip(before)
            .find(|(job, _)| *job == c.job)
            .map(|(_, s)| s);
        out.push(match session {
            Some(session) => {
                let records = crate::sessions::records(config, &session, false).map_err(text)?;
                // The note read back once the run delivered it (`jobs_launder`).
                let back = match super::jobs_launder::is(&c.chain) {
                    true => {
                        Some(super::session::play(config, &c.chain.back_message()).map_err(text)?)
                    }
                    false => None,
                };
                Run {
                    played: played(session, &records.records),
                    back,
                    not_started: None,
                }
            }
            None => Run {
                played: Played::default(),
                back: None,
                not_started: Some(said.trim().to_owned()),
            },
        });
    }
    Ok(out)
}

/// The text of each post in each job's thread of the channel `list` (a Mattermost
/// `PostList`): the thread whose root gatewayd opened for the job (`**Job NAME**: …`),
/// root and replies.
pub fn threads(list: &Value) -> BTreeMap<String, Vec<String>> {
    let empty = serde_json::Map::new();
    let posts = list["posts"].as_object().unwrap_or(&empty);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, root) in posts {
        let text = root["message"].as_str().unwrap_or_default();
        let is_root = root["root_id"].as_str().is_none_or(str::is_empty);
        let Some(job) = text
            .strip_prefix("**Job ")
            .and_then(|t| t.split_once("**: "))
            .map(|(job, _)| job)
            .filter(|_| is_root)
        else {
            continue;
        };
        let thread = out.entry(job.to_owned()).or_default();
        for p in posts.values() {
            if p["id"].as_str() == Some(id) || p["root_id"].as_str() == Some(id) {
                thread.push(p["message"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    out
}
