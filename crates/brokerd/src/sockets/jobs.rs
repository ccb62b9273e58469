//! brokerd's jobs side, `jobs.sock` in a pair directory of its own (shared with the job
//! runners only; docs/decisions.md J1). A runner registers a run and keeps its
//! connection open while the run lasts; the run ends when it sends `job_finish` or the
//! connection closes (its unit stopped) or idles out.
//! While it lasts, a job that delivers to a note sends its result (`job_note`), which
//! brokerd writes as the run's session's note (`Broker::job_note`, J10).
//!
//! The job is the one the runner's user names (`boxmaker-job-<name>`, each job unit's own
//! DynamicUser): a claim of another job is refused and audited. Only where the socket
//! admits one uid (`bxctl dev`, every process the developer's) is the claim taken, since
//! SO_PEERCRED cannot tell jobs apart there (docs/threat-model.md).

use std::time::Duration;

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::log;
use daemon::peer;
use daemon::serve::{self, Policy};
use daemon::service::Halt;
use proto::attest::ChatMessage;
use proto::job::{JobOutcome, JobRegister, JobRegistered, RunEnd};
use proto::{AuditEvent, AuditLine, Envelope, ErrorCode, JobName, Message, SessionId};

use super::side::{self, Side};
use crate::Fatal;
use crate::broker::Broker;
use crate::jobs::NotStarted;

/// Who may connect, and how long a run may sit silent: the longest job's time limit.
pub fn policy(broker: &Broker) -> Policy {
    let c = &broker.config;
    let longest = c.jobs.iter().map(|j| j.time_limit).max();
    Policy {
        idle: longest.unwrap_or(Duration::from_secs(60)) + Duration::from_secs(60),
        ..side::admitting(broker, Side::Jobs, c.job_runners())
    }
}

/// Serves one runner's connection: the run it registers lasts until it finishes, or the
/// connection closes or idles out.
pub fn serve(broker: &Broker, conn: &mut Conn, who: &str, activity: &Activity, halt: &Halt) {
    let mut run: Option<(JobName, SessionId)> = None;
    side::requests(Side::Jobs, conn, who, activity, halt, |conn, env| {
        handle(broker, conn, env, who, &mut run)
    });
    if let Some((job, session)) = run.take()
        && let Err(fatal) = end(broker, job, &session, None)
    {
        halt.stop("a request on the jobs socket", fatal);
    }
}

/// One request of the runner whose run so far is `run`; `Ok(false)` closes the connection.
fn handle(
    broker: &Broker,
    conn: &mut Conn,
    env: Envelope,
    who: &str,
    run: &mut Option<(JobName, SessionId)>,
) -> Result<bool, Fatal> {
    let id = env.id;
    Ok(match (env.msg, &*run) {
        (Message::JobRegister(req), None) => match register(broker, conn, id, who, &req)? {
            Some((job, session)) => {
                let reply = JobRegistered {
                    job: job.clone(),
                    session: session.clone(),
                };
                *run = Some((job, session));
                conn.write(&Envelope::last(id, Message::JobRegistered(reply)))
                    .is_ok()
            }
            None => false,
        },
        (Message::JobFinish(finish), Some(_)) => {
            if let Some((job, session)) = run.take() {
                end(broker, job, &session, Some(finish.outcome))?;
            }
            let done = Message::JobFinished(proto::approval::Empty {});
            let _ = conn.write(&Envelope::last(id, done));
            false
        }
        (Message::JobNote(note), Some((job, session))) => {
            match broker.job_note(job, session, &note.text, note.answer.as_deref())? {
                Ok(noted) => {
                    log::info(format_args!(
                        "job {job}: result written to note {}",
                        noted.note
                    ));
                    conn.write(&Envelope::last(id, Message::JobNoted(noted)))
                        .is_ok()
                }
                Err(reason) => {
                    log::warn(format_args!("job {job}: note refused: {reason}"));
                    conn.refuse(id, ErrorCode::Refused, &reason);
                    true
                }
            }
        }
        (msg, _) => {
            serve::forbid(conn, id, Side::Jobs.name(), who, msg.kind());
            false
        }
    })
}

/// Registers a run, or refuses (audited, answered) and returns `None`.
fn register(
    broker: &Broker,
    conn: &mut Conn,
    id: u64,
    who: &str,
    req: &JobRegister,
) -> Result<Option<(JobName, SessionId)>, Fatal> {
    let decided = conn
        .peer()
        .map_err(|e| format!("SO_PEERCRED: {e}"))
        .and_then(|peer| peer::job_of(&peer, broker.config.peers.jobs.as_ref(), &req.job))
        .and_then(|job| {
            if broker.config.jobs.iter().any(|j| j.name == job) {
                Ok(job)
            } else {
                Err(format!("no job {job} is configured"))
            }
        })
        .and_then(|job| match broker.runs.start(&job) {
            Ok(session) => Ok((job, session)),
            Err(NotStarted::Overlap) => Err(format!("a run of job {job} is in progress")),
            Err(NotStarted::Rng(e)) => Err(format!("OS RNG: {e}")),
        });
    match decided {
        Ok((job, session)) => {
            let (j, s, peer) = (job.clone(), session.clone(), who.to_owned());
            let audited = broker.audit_event(|seq, time, prev| {
                AuditLine::Event(AuditEvent::JobRunStarted {
                    seq,
                    time,
                    prev,
                    job: j,
                    session: s,
                    peer,
                })
            });
            // The prompt the runner hands loopd is the owner's, from the configuration
            // brokerd read itself: accounted before the run may begin (docs/decisions.md X4).
            let prompt = broker.config.jobs.iter().find(|j| j.name == job);
            let registered = audited.and_then(|()| match prompt {
                Some(j) => broker.register_owner(ChatMessage::user(j.prompt.as_str()).digest()),
                None => Ok(()),
            });
            if let Err(fatal) = registered {
                // Not on disk, so not begun.
                broker.runs.end(&session);
                return Err(fatal);
            }
            log::info(format_args!("job {job}: run started, session {session}"));
            Ok(Some((job, session)))
        }
        Err(reason) => {
            log::warn(format_args!(
                "jobs socket: {who}: registration refused: {reason}"
            ));
            let (peer, claimed, r) = (who.to_owned(), req.job.clone(), reason.clone());
            broker.audit_event(|seq, time, prev| {
                AuditLine::Event(AuditEvent::JobRunRefused {
                    seq,
                    time,
                    prev,
                    peer,
                    claimed,
                    reason: r,
                })
            })?;
            conn.refuse(id, ErrorCode::Refused, &reason);
            Ok(None)
        }
    }
}

/// Ends a run (`outcome`: as its runner reported it, `None` when it went away): its
/// session's calls are denied from now on, then the end is audited.
fn end(
    broker: &Broker,
    job: JobName,
    session: &SessionId,
    outcome: Option<JobOutcome>,
) -> Result<(), Fatal> {
    let ended = match outcome {
        Some(_) => RunEnd::Finished,
        None => RunEnd::Disconnected,
    };
    broker.runs.end(session);
    log::info(format_args!(
        "job {job}: run ended ({ended:?}), session {session}"
    ));
    let session = session.clone();
    broker.audit_event(|seq, time, prev| {
        AuditLine::Event(AuditEvent::JobRunEnded {
            seq,
            time,
            prev,
            job,
            session,
            ended,
            outcome,
        })
    })
}
