//! One run: register with brokerd, the turn with loopd, end the run, deliver. Each step's
//! failure is part of what is delivered; the run never stops silently.

use std::collections::BTreeMap;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use config::{Config, Deliver, Job};
use daemon::conn::Conn;
use daemon::log;
use proto::chat::{ChatEvent, ChatSend, TurnEnd};
use proto::job::{JobFinish, JobNote, JobOutcome, JobRegister, JobResult};
use proto::{DenyReason, Envelope, Message, SessionId, Timestamp, ToolResponse};

use crate::report::{Report, Said};

/// How the run ended, for the unit's status: 0 when done, 1 when it failed (its failure
/// was delivered and logged; `main` adds nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Done,
    Failed,
}

impl std::process::Termination for Finished {
    fn report(self) -> std::process::ExitCode {
        match self {
            Self::Done => std::process::ExitCode::SUCCESS,
            Self::Failed => std::process::ExitCode::FAILURE,
        }
    }
}

/// Runs `job` once and delivers what came of it.
pub fn run(config: &Config, job: &Job) -> Result<Finished, crate::Error> {
    let started = Timestamp::now();
    let (report, noted) = match register(config, job) {
        Ok((mut run, session)) => {
            let report = turn(config, job, &session);
            // A note is written from the run's session while the run lasts, so that it
            // takes the session's label; nothing else is done in the session.
            let noted = match &job.deliver {
                Deliver::Note(_) => Some(note(&mut run, job, started, &report)),
                Deliver::Mattermost => None,
            };
            // The run's calls are over: its session is closed before anything else.
            let finish = Message::JobFinish(JobFinish {
                outcome: report.outcome(),
            });
            if let Err(e) = run.call(3, finish, |_| {}) {
                log::warn(format_args!("job {}: ending the run: {e}", job.name));
            }
            (report, noted)
        }
        Err(failure) => (
            Report {
                failure: Some(Said::own(failure)),
                ..Report::default()
            },
            None,
        ),
    };
    let outcome = report.outcome();
    let result = JobResult {
        job: job.name.clone(),
        started,
        outcome,
        text: report.text(),
    };
    let delivered = match (&job.deliver, noted) {
        (Deliver::Mattermost, _) => deliver(config, &result),
        (Deliver::Note(_), Some(noted)) => noted,
        // No session, so nothing can carry its label: the journal says why.
        (Deliver::Note(note), None) => Err(format!(
            "the run did not start, so nothing was written to note {note}"
        )),
    };
    match (&delivered, outcome) {
        (Ok(()), JobOutcome::Done) => {
            log::info(format_args!("job {}: done, result delivered", job.name));
        }
        // What failed, or else the calls that were not allowed, by name.
        (Ok(()), JobOutcome::Failed) => log::error(format_args!(
            "job {}: failed (delivered): {}",
            job.name,
            report.failure.as_ref().map(Said::full).unwrap_or_else(|| {
                let denied: Vec<String> = report.denied.iter().map(Said::full).collect();
                denied.join("; ")
            })
        )),
        // Why the run failed comes first: that it could not be delivered follows from it.
        (Err(e), _) => log::error(format_args!(
            "job {}: {}its result ({outcome:?}) could not be delivered: {e}",
            job.name,
            report
                .failure
                .as_ref()
                .map(|f| format!("{}; ", f.full()))
                .unwrap_or_default()
        )),
    }
    Ok(match (delivered, outcome) {
        (Ok(()), JobOutcome::Done) => Finished::Done,
        _ => Finished::Failed,
    })
}

/// A connection to `path` whose reads wait up to `wait`.
fn connect(path: &Path, wait: Duration) -> Result<Conn, String> {
    UnixStream::connect(path)
        .map(|s| Conn::new(s, wait, Duration::from_secs(60)))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Registers the run: the connection that keeps it open, and its session.
fn register(config: &Config, job: &Job) -> Result<(Conn, SessionId), String> {
    let sock = config.sockets.jobs_broker_sock();
    let mut conn = connect(&sock, Duration::from_secs(60))
        .map_err(|e| format!("brokerd could not be reached: {e}"))?;
    let req = Message::JobRegister(JobRegister {
        job: job.name.clone(),
    });
    match conn.call(1, req, |_| {}).map(|e| e.msg) {
        Ok(Message::JobRegistered(r)) => Ok((conn, r.session)),
        Ok(Message::Error(e)) => Err(format!("brokerd refused the run: {}", e.detail)),
        Ok(other) => Err(format!("brokerd answered {}", other.kind())),
        Err(e) => Err(format!("brokerd: {e}")),
    }
}

/// The run's one turn, within the job's time limit.
fn turn(config: &Config, job: &Job, session: &SessionId) -> Report {
    let mut report = Report::default();
    let sock = config.sockets.jobs_loop_sock();
    let stream = match UnixStream::connect(&sock).and_then(|s| Ok((s.try_clone()?, s))) {
        Ok(s) => s,
        Err(e) => {
            report.failure = Some(Said::own(format!(
                "loopd could not be reached: {}: {e}",
                sock.display()
            )));
            return report;
        }
    };
    let (stopper, stream) = stream;
    // Reads may wait past the limit: the limit is the timer's below, for the whole turn.
    let idle = job.time_limit + Duration::from_secs(30);
    let mut conn = Conn::new(stream, idle, Duration::from_secs(60));
    let send = Message::ChatSend(ChatSend {
        session: Some(session.clone()),
        text: job.prompt.clone(),
        // A run ends by its own time limit, not by hanging up.
        cancel_on_hangup: false,
    });
    let mut tools: BTreeMap<u64, String> = BTreeMap::new();
    let mut denied = Vec::new();
    // The whole turn within the time limit, however steadily it streams: past it the
    // connection is shut, which ends the read below.
    let timed_out = AtomicBool::new(false);
    let (done, finished) = mpsc::channel::<()>();
    let reply = std::thread::scope(|s| {
        let timed_out = &timed_out;
        s.spawn(move || {
            if finished.recv_timeout(job.time_limit) == Err(RecvTimeoutError::Timeout) {
                timed_out.store(true, Ordering::SeqCst);
                let _ = stopper.shutdown(Shutdown::Both);
            }
        });
        let reply = conn.call(1, send, |env: &Envelope| match &env.msg {
            // loopd's word: only a tool's own name is written as the runner's.
            Message::ChatEvent(ChatEvent::ToolCall { call, tool, .. })
                if proto::tools::TOOL_NAMES.contains(&tool.as_str()) =>
            {
                tools.insert(call.0, tool.clone());
            }
            Message::ChatEvent(ChatEvent::ToolResponse {
                call,
                response: ToolResponse::Denied { reason, detail },
            }) => {
                let tool = tools.get(&call.0).map_or("?", String::as_str);
                denied.push(denial(call.0, tool, *reason, detail.as_deref()));
            }
            _ => {}
        });
        drop(done);
        reply
    });
    report.denied = denied;
    if timed_out.load(Ordering::SeqCst) {
        report.failure = Some(Said::own(format!(
            "The time limit of {}s was reached.",
            job.time_limit.as_secs()
        )));
        return report;
    }
    match reply.map(|e| e.msg) {
        Ok(Message::ChatReply(r)) => {
            report.answer = r.text;
            report.failure = match r.end {
                TurnEnd::Answered => None,
                TurnEnd::ToolCap { calls } => Some(Said::own(format!(
                    "The run reached the cap of {calls} tool calls before the agent answered."
                ))),
                TurnEnd::ModelError { detail } => {
                    Some(Said::with("The model could not be reached", detail))
                }
                // A finish reason is a short word (`length`); anything else is loopd's text.
                TurnEnd::Cut { finish, withdrawn } => Some(
                    if !finish.is_empty()
                        && finish.len() <= 32
                        && finish.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                    {
                        Said::own(format!(
                            "The answer {}.",
                            TurnEnd::cut_words(&finish, withdrawn)
                        ))
                    } else {
                        Said::with("The answer was cut off", finish)
                    },
                ),
                // Only a client that asked for it and hung up gets this; a run does neither.
                TurnEnd::Cancelled => Some(Said::own("The run was cancelled.")),
            };
        }
        Ok(Message::Error(e)) => report.failure = Some(Said::with("loopd", e.detail)),
        Ok(other) => {
            report.failure = Some(Said::own(format!("loopd answered {}", other.kind())));
        }
        Err(e) => report.failure = Some(Said::own(format!("loopd: {e}"))),
    }
    report
}

/// One call that did not run, as the owner reads it: the runner's words from the typed
/// event, and loopd's detail beside them.
fn denial(call: u64, tool: &str, reason: DenyReason, detail: Option<&str>) -> Said {
    let what = match reason {
        DenyReason::ApprovalExpired => "not approved: nobody answered before the approval expired",
        DenyReason::ApprovalRefused => "not approved: refused",
        _ => "denied",
    };
    Said {
        own: format!("Call {call} ({tool}) {what} ({})", reason.as_str()),
        detail: detail.map(str::to_owned),
        inside: true,
    }
}

/// Posts the result through gatewayd, in the job's thread.
fn deliver(config: &Config, result: &JobResult) -> Result<(), String> {
    let sock = config.sockets.jobs_gateway_sock();
    let mut conn = connect(&sock, Duration::from_secs(120))?;
    match conn.call(1, Message::JobResult(result.clone()), |_| {}) {
        Ok(Envelope {
            msg: Message::JobDelivered(_),
            ..
        }) => Ok(()),
        Ok(Envelope {
            msg: Message::Error(e),
            ..
        }) => Err(format!("gatewayd: {}", e.detail)),
        Ok(other) => Err(format!("gatewayd answered {}", other.msg.kind())),
        Err(e) => Err(format!("gatewayd: {e}")),
    }
}

/// The note a run delivers: its job, run time and outcome, then what came of it, cut to
/// what one note write carries (the cut said in its last line).
fn note_text(job: &Job, started: Timestamp, report: &Report) -> String {
    let outcome = match report.outcome() {
        JobOutcome::Done => "done",
        JobOutcome::Failed => "FAILED",
    };
    let mut text = format!(
        "# Job {}, run of {started}: {outcome}\n\n{}\n",
        job.name,
        report.note_text()
    );
    let most = proto::tools::MAX_ARGUMENTS;
    if text.len() > most {
        let more = text.len();
        let mut end = most - 100;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(&format!(
            "\n\n(cut: the result was {more} bytes, more than one note write carries)\n"
        ));
    }
    text
}

/// Asks brokerd, on the run's own connection, to write the result to the job's note.
fn note(run: &mut Conn, job: &Job, started: Timestamp, report: &Report) -> Result<(), String> {
    let text = note_text(job, started, report);
    // The answer beside the note, so brokerd labels the note by what produced it.
    let answer = Some(report.answer.clone()).filter(|a| !a.is_empty());
    match run.call(2, Message::JobNote(JobNote { text, answer }), |_| {}) {
        Ok(Envelope {
            msg: Message::JobNoted(n),
            ..
        }) => {
            log::info(format_args!(
                "job {}: result written to note {} (labelled {}{})",
                job.name,
                n.note,
                n.class,
                if n.untrusted { ", untrusted" } else { "" }
            ));
            Ok(())
        }
        Ok(Envelope {
            msg: Message::Error(e),
            ..
        }) => Err(format!("brokerd did not write the note: {}", e.detail)),
        Ok(other) => Err(format!("brokerd answered {}", other.msg.kind())),
        Err(e) => Err(format!("brokerd: {e}")),
    }
}
