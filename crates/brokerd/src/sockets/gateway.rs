//! The link to gatewayd (gateway.sock, brokerd the client): approval cards go out to be
//! posted, answers heard on their posts come back, and what became of each is shown on the
//! post. One thread, one connection, reconnected with backoff; on every (re)connect what
//! still waits is posted again (gatewayd keeps one post per approval id).
//!
//! Whether an answer counts is decided here, never by gatewayd: it must come from an owner
//! (`[gateway] owners`), then pass the same checks as a local answer (pending, in time,
//! unused, unchanged). Every refusal is audited and shown on the post.

use std::collections::HashSet;
use std::io;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use daemon::conn::{CallError, Conn};
use daemon::log;
use daemon::service::Halt;
use proto::Message;
use proto::approval::{AnswerOutcome, ApprovalAnswer, ApprovalCard, Refusal};
use proto::gateway::{ApprovalUpdate, ApprovalWait, Update};

use crate::Fatal;
use crate::ask::outbox::Outgoing;
use crate::broker::Broker;

/// How long one `approval_wait` may be held: also how soon a new card goes out.
const WAIT_MS: u32 = 300;
/// How often a card gatewayd could not post is tried again (as a verify alert is).
const RETRY: Duration = crate::ask::verify_slot::RETRY;
/// How long gatewayd may take to answer one request.
const ANSWER_DEADLINE: Duration = Duration::from_secs(300);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Runs the link until the process ends; a failure to audit stops brokerd through `halt`.
pub fn run(broker: &Broker, outbox: &Receiver<Outgoing>, halt: &Halt) {
    let sock = broker.config.sockets.broker_gateway_sock();
    let mut backoff = Duration::from_millis(100);
    let mut carry = None;
    let mut reported = false;
    loop {
        let linked = connect(&sock).and_then(|mut conn| {
            log::info(format_args!("linked to gatewayd at {}", sock.display()));
            broker.board.linked();
            reported = false;
            backoff = Duration::from_millis(100);
            serve(broker, &mut conn, outbox, &mut carry)
        });
        match &linked {
            Err(Error::Fatal(_)) => {}
            Err(why) => broker.board.down(why.to_string()),
            Ok(()) => broker.board.down("gatewayd closed the link".to_owned()),
        }
        match linked {
            Err(Error::Fatal(fatal)) => {
                halt.stop("the gateway link", fatal);
                return;
            }
            Err(why) if !reported => {
                // Said once per outage: approvals still wait for a local answer meanwhile.
                log::warn(format_args!("gatewayd: {why}; retrying"));
                reported = true;
            }
            Err(_) | Ok(()) => {}
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Why the link ended: it broke (said once per outage, then tried again), or brokerd must
/// stop ([`Fatal`]). Each text is whole: it prints what it wraps (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
enum Error {
    /// gateway.sock cannot be reached.
    #[error("{}: {error}", sock.display())]
    Connect { sock: PathBuf, error: io::Error },
    /// A request to gatewayd failed on the wire.
    #[error("{0}")]
    Call(CallError),
    /// gatewayd answered a request with something else than its answer.
    #[error("{asked} answered by {answered}")]
    Answered {
        asked: &'static str,
        answered: &'static str,
    },
    #[error("{0}")]
    Fatal(Fatal),
}

fn answered(asked: &'static str, answer: &Message) -> Error {
    Error::Answered {
        asked,
        answered: answer.kind(),
    }
}

fn connect(sock: &Path) -> Result<Conn, Error> {
    // Only gatewayd and brokerd may enter the socket's directory. The listener's SO_PEERCRED
    // would name whoever called listen(): systemd itself under socket activation, so it
    // proves nothing here.
    let stream = UnixStream::connect(sock).map_err(|error| Error::Connect {
        sock: sock.to_path_buf(),
        error,
    })?;
    // Posting a long card is several Mattermost calls of up to 30 s each: a connection
    // that says nothing for this long is dropped, never one that is merely slow.
    Ok(Conn::new(stream, ANSWER_DEADLINE, Duration::from_secs(10)))
}

fn serve(
    broker: &Broker,
    conn: &mut Conn,
    outbox: &Receiver<Outgoing>,
    carry: &mut Option<Outgoing>,
) -> Result<(), Error> {
    let mut id = 0u64;
    // Answers received on this connection, acknowledged with the next wait. A new
    // connection acknowledges nothing (gatewayd may have restarted and numbers anew), so an
    // answer received just before a break may come again; brokerd then refuses it as used.
    let mut ack = 0u64;
    let mut call = |conn: &mut Conn, msg: Message| {
        id += 1;
        conn.call(id, msg, |_| {})
            .map(|env| env.msg)
            .map_err(Error::Call)
    };
    // Cards gatewayd has posted on this connection; the others are tried (again) now and
    // every `RETRY`.
    let mut posted = HashSet::new();
    let mut sweep = Instant::now();
    let mut first_wait = true;
    for card in broker.pending_cards() {
        post(&mut call, conn, card, &mut posted)?;
    }
    loop {
        while let Some(item) = carry.take().or_else(|| outbox.try_recv().ok()) {
            match item {
                // A card no longer pending (answered or expired meanwhile) is not posted.
                Outgoing::Post(card) if broker.is_pending(&card.approval) => {
                    post(&mut call, conn, *card, &mut posted)?;
                }
                Outgoing::Post(_) => {}
                Outgoing::Update(u) => match call(conn, Message::ApprovalUpdate(u.clone())) {
                    Ok(Message::ApprovalUpdated(_)) => broker.outbox.shown(),
                    Ok(other) => return Err(answered("approval_update", &other)),
                    Err(e) => {
                        *carry = Some(Outgoing::Update(u));
                        return Err(e);
                    }
                },
                // On the link's next connection if it breaks; not posted again if
                // Mattermost refused it (it is in brokerd's journal either way).
                Outgoing::Alert(a) => match call(conn, Message::AuditAlert(a.clone())) {
                    Ok(Message::AuditAlerted(p)) => {
                        log::info(format_args!("audit alert posted as {}", p.post));
                    }
                    Ok(Message::Error(e)) => log::warn(format_args!(
                        "gatewayd could not post the audit alert ({})",
                        e.detail
                    )),
                    Ok(other) => return Err(answered("audit_alert", &other)),
                    Err(e) => {
                        *carry = Some(Outgoing::Alert(a));
                        return Err(e);
                    }
                },
            }
        }
        verify_post(broker, &mut call, conn)?;
        if sweep.elapsed() >= RETRY {
            sweep = Instant::now();
            let pending = broker.pending_cards();
            posted.retain(|a| pending.iter().any(|c| c.approval == *a));
            for card in pending {
                if !posted.contains(&card.approval) {
                    post(&mut call, conn, card, &mut posted)?;
                }
            }
        }
        // The first wait on a link is answered at once: gatewayd states its version in it.
        let wait = Message::ApprovalWait(ApprovalWait {
            wait_ms: if first_wait { 0 } else { WAIT_MS },
            ack,
        });
        first_wait = false;
        match call(conn, wait)? {
            Message::ApprovalHeard(heard) => {
                if let Some(version) = &heard.version {
                    broker.board.gateway_version(version);
                }
                let n = u64::try_from(heard.answers.len()).unwrap_or(u64::MAX);
                for answer in heard.answers {
                    answer_heard(broker, &answer).map_err(Error::Fatal)?;
                }
                ack = heard.first.saturating_add(n);
            }
            other => return Err(answered("approval_wait", &other)),
        }
    }
}

/// Posts the failed verification's alert that waits, if it is due. It stays in the slot
/// until gatewayd says it is posted: refused (Mattermost down), it is tried again like a
/// card; a broken link leaves it for the next connection (`ask::verify_slot`).
fn verify_post(
    broker: &Broker,
    call: &mut impl FnMut(&mut Conn, Message) -> Result<Message, Error>,
    conn: &mut Conn,
) -> Result<(), Error> {
    // Not locked during the call: a new alert meanwhile is held back by the one that waits.
    let Some((seq, v)) = broker.verify_slot.lock().due(Instant::now()) else {
        return Ok(());
    };
    match call(conn, Message::VerifyPost(v))? {
        Message::VerifyPosted(p) => {
            broker.verify_slot.lock().posted(seq, Instant::now());
            log::info(format_args!("verify alert posted as {}", p.post));
            Ok(())
        }
        Message::Error(e) => {
            broker
                .verify_slot
                .lock()
                .refused(seq, Instant::now(), &e.detail);
            Ok(())
        }
        other => Err(answered("verify_post", &other)),
    }
}

/// Posts one card. gatewayd failing to post it (Mattermost refused) is logged and tried
/// again later; only a broken link ends the connection.
fn post(
    call: &mut impl FnMut(&mut Conn, Message) -> Result<Message, Error>,
    conn: &mut Conn,
    card: ApprovalCard,
    posted: &mut HashSet<String>,
) -> Result<(), Error> {
    let approval = card.approval.clone();
    match call(conn, Message::ApprovalPost(card))? {
        Message::ApprovalPosted(p) => {
            log::info(format_args!("approval {} posted as {}", p.approval, p.post));
            posted.insert(approval);
            Ok(())
        }
        Message::Error(e) => {
            log::warn(format_args!(
                "gatewayd could not post approval {approval} ({}); trying again in {RETRY:?}",
                e.detail
            ));
            Ok(())
        }
        other => Err(answered("approval_post", &other)),
    }
}

/// One answer heard on Mattermost: an owner's goes through [`Broker::answer`]; anyone
/// else's is refused. Refusals are audited and shown on the post.
fn answer_heard(broker: &Broker, answer: &ApprovalAnswer) -> Result<(), Fatal> {
    let by = answer.by.clone().unwrap_or_default();
    let owners = broker.config.gateway.as_ref().map(|g| g.owners.as_slice());
    let outcome = if owners.is_some_and(|o| o.contains(&by)) {
        broker.answer(answer, by.clone(), answer.post.clone())?
    } else {
        broker.refuse_answer(
            &answer.approval,
            by.clone(),
            answer.post.clone(),
            Refusal::NotOwner,
        )?
    };
    match outcome {
        AnswerOutcome::Accepted => log::info(format_args!(
            "approval {}: {:?} by {by} on Mattermost",
            answer.approval, answer.verdict
        )),
        AnswerOutcome::Refused { refusal } => {
            log::warn(format_args!(
                "approval {}: an answer by {by} refused ({refusal:?})",
                answer.approval
            ));
            broker.outbox.tell(Outgoing::Update(ApprovalUpdate {
                approval: answer.approval.clone(),
                update: Update::Refused { by, refusal },
            }));
        }
    }
    Ok(())
}
