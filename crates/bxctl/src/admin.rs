//! Requests to brokerd's admin socket.

use std::io::Write;
use std::process::ExitCode;

use daemon::config::Config;
use daemon::conn::Conn;
use inert::line;
use proto::approval::{AnswerOutcome, ApprovalAnswer, ApprovalCard, Empty, SessionQuery, Verdict};
use proto::{Message, SessionId};

use crate::{Error, err};

fn call(config: &Config, msg: Message) -> Result<Message, Error> {
    let path = config.sockets.admin_broker_sock();
    let mut conn = Conn::connect(&path)
        .map_err(|e| Error(format!("cannot reach brokerd at {}: {e}", path.display())))?;
    let reply = conn
        .call(1, msg, |_| {})
        .map_err(crate::call_failed("brokerd", "admin"))?;
    match reply.msg {
        Message::Error(e) => Err(Error(format!(
            "brokerd refused: {:?}: {}",
            e.code,
            line(&e.detail)
        ))),
        other => Ok(other),
    }
}

fn listing(config: &Config) -> Result<Vec<ApprovalCard>, Error> {
    match call(config, Message::ApprovalList(Empty {}))? {
        Message::ApprovalListing(l) => {
            if l.omitted > 0 {
                return Err(Error(format!(
                    "{} more approvals wait than fit in one answer; answer some and list again",
                    l.omitted
                )));
            }
            Ok(l.pending)
        }
        other => Err(Error(format!("unexpected answer {}", other.kind()))),
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

pub fn approvals(config: &Config, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let cards = listing(config)?;
    if cards.is_empty() {
        writeln!(out, "no approvals waiting").map_err(err)?;
    }
    for c in &cards {
        write!(out, "{}", card(c)).map_err(err)?;
        writeln!(
            out,
            "  answer:    bxctl approve {0}   or   bxctl deny {0}\n",
            line(&c.approval)
        )
        .map_err(err)?;
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
        .map_err(err)?;
        // Send it anyway so that brokerd audits the attempt and says which it was.
        return send_answer(config, approval, proto::Hash32::ZERO, approve, out);
    };
    write!(out, "{}", card(c)).map_err(err)?;
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
            writeln!(out, "{word}").map_err(err)?;
            Ok(ExitCode::SUCCESS)
        }
        Message::ApprovalAnswered(AnswerOutcome::Refused { refusal }) => {
            writeln!(out, "refused: {refusal:?}").map_err(err)?;
            Ok(ExitCode::from(1))
        }
        other => Err(Error(format!("unexpected answer {}", other.kind()))),
    }
}

pub fn session(config: &Config, session: &str, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let session = SessionId::new(session).map_err(err)?;
    match call(config, Message::SessionQuery(SessionQuery { session }))? {
        Message::SessionInfo(i) => {
            writeln!(
                out,
                "session {}: taint {}, untrusted {}",
                i.session, i.taint, i.untrusted
            )
            .map_err(err)?;
            for r in &i.untrusted_by {
                writeln!(out, "  untrusted by {}", source(r)).map_err(err)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        other => Err(Error(format!("unexpected answer {}", other.kind()))),
    }
}

pub fn grants(config: &Config, out: &mut dyn Write) -> Result<ExitCode, Error> {
    match call(config, Message::GrantsQuery(Empty {}))? {
        Message::GrantsInfo(g) => {
            let names: Vec<String> = g.grants.iter().map(|g| line(g)).collect();
            writeln!(out, "snapshot {}: {}", g.snapshot, names.join(", ")).map_err(err)?;
            Ok(ExitCode::SUCCESS)
        }
        other => Err(Error(format!("unexpected answer {}", other.kind()))),
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
