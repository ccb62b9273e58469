//! loop.sock: the chat channel. A connection sends `chat_send` (answered by `chat_event`
//! frames and a final `chat_reply`), `session_list`, `session_show` or `status_query`;
//! anything else is refused with `forbidden_kind`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::serve;
use daemon::{hangup, log};
use proto::chat::{ChatEvent, ChatReply, SessionRecords, SessionShow};
use proto::{Envelope, ErrorCode, Message};

use crate::cancel::Cancel;
use crate::error::TurnError;
use crate::listing::Listing;
use crate::store::StoreError;
use crate::turn::Looper;

/// Records sent for `session_show` at most; the newest are kept.
const MAX_SHOWN: usize = 500;

pub fn serve(
    looper: &Looper,
    listing: &Listing,
    mut conn: Conn,
    who: &str,
    activity: &Arc<Activity>,
) {
    let _ = serve::requests(&mut conn, "chat", who, activity, |conn, env| {
        Ok::<bool, std::convert::Infallible>(request(looper, listing, conn, env, who))
    });
}

/// Answers one request; `false` closes the connection.
fn request(looper: &Looper, listing: &Listing, conn: &mut Conn, env: Envelope, who: &str) -> bool {
    let id = env.id;
    let reply = match env.msg {
        Message::ChatSend(send) => {
            let cancel = Arc::new(Cancel::default());
            let done = Arc::new(AtomicBool::new(false));
            if send.cancel_on_hangup {
                watch_hangup(conn, &cancel, &done);
            }
            let reply = streamed(conn, id, |emit| looper.turn(&send, &cancel, emit));
            done.store(true, Ordering::Release);
            reply
        }
        Message::SessionList(_) => match listing.list(looper.store()) {
            Ok(l) => Message::SessionListing(l),
            Err(e) => {
                log::error(format_args!("session list: {e}"));
                Message::error(ErrorCode::Internal, "see loopd's log")
            }
        },
        Message::SessionShow(show) => match records(looper, &show) {
            Ok(Some(r)) => Message::SessionRecords(r),
            Ok(None) => Message::error(
                ErrorCode::BadMessage,
                format!("no session {}", show.session),
            ),
            Err(e) => Message::error(ErrorCode::BadMessage, e.to_string()),
        },
        // loopd, and what only loopd reaches: inferproxy and the model's health.
        Message::StatusQuery(_) => Message::LoopStatus(crate::status::status(&looper.infer_sock())),
        other => {
            serve::forbid(conn, id, "chat", who, other.kind());
            return false;
        }
    };
    conn.write(&Envelope::last(id, reply)).is_ok()
}

/// Cancels the turn when the owner's client hangs up before its reply (`cancel`), until
/// `done`. Without the watch (no thread to be had) the turn simply runs to its end.
fn watch_hangup(conn: &Conn, cancel: &Arc<Cancel>, done: &Arc<AtomicBool>) {
    let Ok(stream) = conn.handle() else {
        return;
    };
    let (cancel, done) = (cancel.clone(), done.clone());
    let _ = std::thread::Builder::new()
        .name("hangup".into())
        .spawn(move || {
            if hangup::wait(&stream, &done) {
                log::info(format_args!(
                    "chat: the client hung up; the turn is cancelled"
                ));
                cancel.cancel();
            }
        });
}

/// Runs a turn, streaming its events to the peer as partial frames, and returns the final
/// message: the reply, or an internal error (its detail only in loopd's log).
pub(crate) fn streamed(
    conn: &mut Conn,
    id: u64,
    turn: impl FnOnce(&mut dyn FnMut(ChatEvent)) -> Result<ChatReply, TurnError>,
) -> Message {
    let mut alive = true;
    let result = turn(&mut |event| {
        if alive
            && conn
                .write(&Envelope::partial(id, Message::ChatEvent(event)))
                .is_err()
        {
            // The client went away; the turn goes on and is logged.
            alive = false;
        }
    });
    match result {
        Ok(reply) => Message::ChatReply(reply),
        // A session that is not there is the client's mistake, said in its words (the id
        // is the client's own).
        Err(e @ TurnError::NoSession(_)) => {
            log::info(format_args!("chat: {e}"));
            Message::error(ErrorCode::BadMessage, e.to_string())
        }
        Err(e) => {
            log::error(format_args!("chat: {e}"));
            Message::error(
                ErrorCode::Internal,
                "the turn could not run; see loopd's log",
            )
        }
    }
}

/// The records `show` asks for; `None` when the session does not exist.
fn records(looper: &Looper, show: &SessionShow) -> Result<Option<SessionRecords>, StoreError> {
    let Some(current) = looper.store().current_epoch(&show.session)? else {
        return Ok(None);
    };
    let epoch = show.epoch.unwrap_or(current);
    let mut records = looper.store().read_epoch(&show.session, epoch)?;
    let truncated = records.len() > MAX_SHOWN;
    if truncated {
        records.drain(..records.len() - MAX_SHOWN);
    }
    Ok(Some(SessionRecords {
        session: show.session.clone(),
        epoch,
        records,
        truncated,
    }))
}
