//! The jobs side of gateway.sock (`sockets.jobs_gateway`, shared with the job runners
//! only): a run's result becomes a post in the job's own thread, rendered inert like every
//! reply (BRIEF decision 12). The first result of a job opens its thread with a root post;
//! later ones reply in it. The job is the one the runner's user names (as brokerd takes
//! it), so one job cannot post in another's thread.

use std::sync::Arc;

use config::Peer;
use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::{log, peer, serve};
use proto::job::{JobDelivered, JobOutcome, JobResult};
use proto::{Envelope, ErrorCode, JobName, Message};

use crate::context::Context;
use crate::mm;
use crate::render::{POST_LIMIT, inert, split};

/// The socket's name in logs and refusals.
pub const NAME: &str = "jobs";

pub fn serve(
    ctx: &Context,
    admitted: Option<&Peer>,
    mut conn: Conn,
    who: &str,
    activity: &Arc<Activity>,
) {
    let _ = serve::requests(&mut conn, NAME, who, activity, |conn, env| {
        Ok::<bool, std::convert::Infallible>(request(ctx, admitted, conn, env, who))
    });
}

fn request(
    ctx: &Context,
    admitted: Option<&Peer>,
    conn: &mut Conn,
    env: Envelope,
    who: &str,
) -> bool {
    let id = env.id;
    let result = match env.msg {
        Message::JobResult(r) => r,
        other => {
            serve::forbid(conn, id, NAME, who, other.kind());
            return false;
        }
    };
    let job = match conn.peer() {
        Ok(p) => peer::job_of(&p, admitted, &result.job),
        Err(e) => Err(format!("SO_PEERCRED: {e}")),
    };
    let job = match job {
        Ok(job) => job,
        Err(reason) => {
            log::warn(format_args!("jobs socket: {who}: result refused: {reason}"));
            conn.refuse(id, ErrorCode::Refused, &reason);
            return false;
        }
    };
    let reply = match deliver(ctx, &job, &result) {
        Ok(delivered) => Message::JobDelivered(delivered),
        Err(e) => {
            log::warn(format_args!("job {job}: posting its result: {e}"));
            Message::error(ErrorCode::Internal, "Mattermost did not take the post")
        }
    };
    conn.write(&Envelope::last(id, reply)).is_ok()
}

/// The result as the owner reads it: the job, its run time and outcome, then the text.
pub fn render(job: &JobName, result: &JobResult) -> String {
    let outcome = match result.outcome {
        JobOutcome::Done => "done",
        JobOutcome::Failed => "FAILED",
    };
    format!(
        "**Job {job}**, run of {}: {outcome}\n\n{}",
        result.started,
        inert(&result.text)
    )
}

/// Posts the result in the job's thread (opening it on the first run).
fn deliver(ctx: &Context, job: &JobName, result: &JobResult) -> Result<JobDelivered, mm::Error> {
    let thread = ctx.store().job_thread(job.as_str()).cloned();
    let root = match thread {
        Some(root) => root,
        None => {
            let root = ctx.post(
                "",
                &format!("**Job {job}**: each run's result is posted in this thread."),
            )?;
            let mut store = ctx.store();
            store.set_job_thread(job.as_str(), &root);
            store.save_or_log();
            root
        }
    };
    let mut post = String::new();
    for part in split(&render(job, result), POST_LIMIT) {
        let id = ctx.post(&root, &part)?;
        if post.is_empty() {
            post = id;
        }
    }
    Ok(JobDelivered { root, post })
}
