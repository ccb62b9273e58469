//! gateway.sock: brokerd's requests (approval_post, approval_wait, approval_update,
//! audit_alert, verify_post); any
//! other kind is refused with `forbidden_kind`. Only brokerd (`[peers] broker`) may connect.

use std::sync::Arc;
use std::time::Duration;

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::log;
use daemon::serve;
use proto::alert::VerifyPosted;
use proto::approval::Empty;
use proto::gateway::{ApprovalHeard, ApprovalPosted, AuditAlerted, MAX_WAIT_MS};
use proto::{Envelope, ErrorCode, Message};

use crate::desk::Desk;
use crate::mm;

/// Serves one brokerd connection until it closes.
pub fn serve(desk: &Desk, mut conn: Conn, who: &str, activity: &Arc<Activity>) {
    let _ = serve::requests(&mut conn, "gateway", who, activity, |conn, env| {
        Ok::<bool, std::convert::Infallible>(request(desk, conn, env, who))
    });
}

/// Answers one request; `false` closes the connection.
fn request(desk: &Desk, conn: &mut Conn, env: Envelope, who: &str) -> bool {
    let id = env.id;
    let reply = match env.msg {
        Message::ApprovalPost(card) => match desk.post(&card, mm::now_ms()) {
            Ok(post) => Message::ApprovalPosted(ApprovalPosted {
                approval: card.approval,
                post,
            }),
            Err(e) => {
                // brokerd tries again later; the connection stays.
                log::warn(format_args!("posting approval {}: {e}", card.approval));
                Message::error(ErrorCode::Internal, "Mattermost did not take the post")
            }
        },
        Message::ApprovalWait(wait) => {
            let ms = u64::from(wait.wait_ms.min(MAX_WAIT_MS));
            let (first, answers) = desk.wait(wait.ack, Duration::from_millis(ms));
            Message::ApprovalHeard(ApprovalHeard {
                first,
                answers,
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            })
        }
        Message::AuditAlert(alert) => match desk.alert(&alert) {
            Ok(post) => {
                log::warn(format_args!("brokerd's audit alert posted as {post}"));
                Message::AuditAlerted(AuditAlerted { post })
            }
            Err(e) => {
                log::warn(format_args!("posting brokerd's audit alert: {e}"));
                Message::error(ErrorCode::Internal, "Mattermost did not take the post")
            }
        },
        Message::VerifyPost(v) => match desk.verify_alert(&v) {
            Ok(post) => {
                log::warn(format_args!("a failed bxctl verify posted as {post}"));
                Message::VerifyPosted(VerifyPosted { post })
            }
            Err(e) => {
                log::warn(format_args!("posting a failed bxctl verify: {e}"));
                Message::error(ErrorCode::Internal, "Mattermost did not take the post")
            }
        },
        Message::ApprovalUpdate(update) => {
            if let Err(e) = desk.update(&update) {
                // Shown or not, the outcome stands (it is brokerd's, on its audit log).
                log::warn(format_args!("showing approval {}: {e}", update.approval));
            }
            Message::ApprovalUpdated(Empty {})
        }
        other => {
            serve::forbid(conn, id, "gateway", who, other.kind());
            return false;
        }
    };
    conn.write(&Envelope::last(id, reply)).is_ok()
}
