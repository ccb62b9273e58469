//! Requests to brokerd's admin socket.

use std::io::Write;
use std::process::ExitCode;

use daemon::config::Config;
use daemon::conn::Conn;
use inert::line;
use proto::approval::{AnswerOutcome, ApprovalAnswer, ApprovalCard, Empty, SessionQuery, Verdict};
use proto::{Message, SessionId};

use crate::Error;
use crate::error::{answered, call_failed, unexpected};

fn call(config: &Config, msg: Message) -> Result<Message, Error> {
    let path = config.sockets.admin_broker_sock();
    let mut conn = match Conn::connect(&path) {
        Ok(conn) => conn,
        Err(source) => {
            return Err(Error::Reach {
                server: "brokerd",
                path,
                source,
            });
        }
    };
    let reply = conn
        .call(1, msg, |_| {})
        .map_err(call_failed("brokerd", "admin"))?;
    answered("brokerd", reply.msg)
}

fn listing(config: &Config) -> Result<Vec<ApprovalCard>, Error> {
    match call(config, Message::ApprovalList(Empty {}))? {
        Message::ApprovalListing(l) => {
            if l.omitted > 0 {
                return Err(Error::Omitted { omitted: l.omitted });
            }
            Ok(l.pending)
        }
        other => Err(unexpected(&other)),
    }
}

/// A card as the owner reads it: the arguments as quoted data, never as prose, and every
/// field from brokerd one inert line.
pub fn card(c: &ApprovalCard) -> String {
    let mut s = format!(
        "approval {}\n  tool:      {} (call {} of session {})\n  grant:     {}\n  \
         taint:     {}\n  arguments: {}\n",
        line(&c.approval),
        line(&c.tool),
        c.call.0,
        c.session,
        line(&c.grant),
        c.session_taint,
        line(&serde_json::to_string(&c.arguments).unwrap_or_default()),
    );
    if c.untrusted {
        let by: Vec<String> = c.untrusted_by.iter().map(source).collect();
        s.push_str(&format!(
            "  UNTRUSTED: the session has read content that may steer the model, from {}\n",
            by.join(", ")
        ));
    }
    s.push_str(&format!("  expires:   {}\n", c.expires));
    s
}

/// `bxctl` is how to call bxctl again for this stack (`hint`), for the answer commands.
pub fn approvals(config: &Config, bxctl: &str, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let cards = listing(config)?;
    if cards.is_empty() {
        writeln!(out, "no approvals waiting").map_err(Error::Output)?;
    }
    for c in &cards {
        write!(out, "{}", card(c)).map_err(Error::Output)?;
        writeln!(
            out,
            "  answer:    {bxctl}approve {0}   or   {bxctl}deny {0}\n",
            line(&c.approval)
        )
        .map_err(Error::Output)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn answer(
    config: &Config,
    approval: &str,
    approve: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    // The answer binds to what is shown here: the binding of the card as listed.
    let cards = listing(config)?;
    let Some(c) = cards.iter().find(|c| c.approval == approval) else {
        writeln!(
            out,
            "no approval {} is waiting (answered, expired, or never issued)",
            line(approval)
        )
        .map_err(Error::Output)?;
        // Send it anyway so that brokerd audits the attempt and says which it was.
        return send_answer(config, approval, proto::Hash32::ZERO, approve, out);
    };
    write!(out, "{}", card(c)).map_err(Error::Output)?;
    send_answer(config, approval, c.binding, approve, out)
}

fn send_answer(
    config: &Config,
    approval: &str,
    binding: proto::Hash32,
    approve: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let msg = Message::ApprovalAnswer(ApprovalAnswer {
        approval: approval.to_owned(),
        binding,
        verdict: if approve {
            Verdict::Approve
        } else {
            Verdict::Deny
        },
        post: None,
        by: None,
    });
    match call(config, msg)? {
        Message::ApprovalAnswered(AnswerOutcome::Accepted) => {
            let word = if approve { "approved" } else { "denied" };
            writeln!(out, "{word}").map_err(Error::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        Message::ApprovalAnswered(AnswerOutcome::Refused { refusal }) => {
            writeln!(out, "refused: {refusal:?}").map_err(Error::Output)?;
            Ok(ExitCode::from(1))
        }
        other => Err(unexpected(&other)),
    }
}

pub fn session(config: &Config, session: &str, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let session = SessionId::new(session).map_err(Error::SessionId)?;
    match call(config, Message::SessionQuery(SessionQuery { session }))? {
        Message::SessionInfo(i) => {
            writeln!(
                out,
                "session {}: taint {}, untrusted {}",
                i.session, i.taint, i.untrusted
            )
            .map_err(Error::Output)?;
            for r in &i.untrusted_by {
                writeln!(out, "  untrusted by {}", source(r)).map_err(Error::Output)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        other => Err(unexpected(&other)),
    }
}

pub fn grants(config: &Config, out: &mut dyn Write) -> Result<ExitCode, Error> {
    match call(config, Message::GrantsQuery(Empty {}))? {
        Message::GrantsInfo(g) => {
            let names: Vec<String> = g.grants.iter().map(|g| line(g)).collect();
            writeln!(out, "snapshot {}: {}", g.snapshot, names.join(", "))
                .map_err(Error::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        other => Err(unexpected(&other)),
    }
}

/// An untrusted call as bxctl shows it: the tool, the call and what it read, each escaped
/// to one line.
fn source(r: &proto::approval::CallRef) -> String {
    match &r.read {
        Some(read) => format!("{} (call {}, read {})", line(&r.tool), r.call.0, line(read)),
        None => format!("{} (call {})", line(&r.tool), r.call.0),
    }
}
