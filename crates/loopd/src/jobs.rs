//! The jobs side of loop.sock (`sockets.jobs_loop`, shared with the job runners only): a
//! job run's one turn, in the session brokerd minted for the run. loopd serves it like
//! any other; which grants its tool calls get is brokerd's business, decided from the
//! session brokerd bound to the job, never from anything loopd or the runner says.

use std::sync::Arc;

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::serve;
use proto::{Envelope, ErrorCode, Message};

use crate::server::streamed;
use crate::turn::Looper;

/// The socket's name in logs and refusals.
pub const NAME: &str = "jobs";

pub fn serve(looper: &Looper, mut conn: Conn, who: &str, activity: &Arc<Activity>) {
    let _ = serve::requests(&mut conn, NAME, who, activity, |conn, env| {
        Ok::<bool, std::convert::Infallible>(request(looper, conn, env, who))
    });
}

/// Answers one request; `false` closes the connection.
fn request(looper: &Looper, conn: &mut Conn, env: Envelope, who: &str) -> bool {
    let id = env.id;
    let send = match env.msg {
        Message::ChatSend(send) => send,
        other => {
            serve::forbid(conn, id, NAME, who, other.kind());
            return false;
        }
    };
    // One turn per run, in a job session that has none yet: a runner cannot continue an
    // owner's session (or another run's) through this side.
    let fresh = match &send.session {
        Some(s) if s.as_str().starts_with(proto::job::SESSION_PREFIX) => {
            matches!(looper.store().current_epoch(s), Ok(None))
        }
        _ => false,
    };
    let Some(session) = send.session.clone().filter(|_| fresh) else {
        conn.refuse(
            id,
            ErrorCode::BadMessage,
            "the jobs socket takes one turn in a new job session (job-…), the one its run registered",
        );
        return false;
    };
    let reply = streamed(conn, id, |emit| looper.job_turn(&session, &send, emit));
    conn.write(&Envelope::last(id, reply)).is_ok()
}
