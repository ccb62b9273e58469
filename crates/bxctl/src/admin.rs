//! Requests to brokerd's admin socket.

use std::io::Write;
use std::process::ExitCode;

use config::Config;
use daemon::conn::Conn;
use inert::line;
use proto::approval::{ApprovalCard, ApprovalListing, Empty, SessionQuery};
use proto::{Message, SessionId};

use crate::Error;
use crate::card::{card, source};
use crate::error::{answered, call_failed, unexpected};
use crate::output::print_json;

pub(crate) fn call(config: &Config, msg: Message) -> Result<Message, Error> {
    let path = config.sockets.admin_broker_sock();
    let mut conn = match Conn::connect(&path) {
        Ok(conn) => conn,
        Err(source) => {
            return Err(Error::Reach {
                server: "brokerd",
                path,
                error: source,
            });
        }
    };
    let reply = conn
        .call(1, msg, |_| {})
        .map_err(call_failed("brokerd", "admin"))?;
    answered("brokerd", reply.msg)
}

pub(crate) fn listing(config: &Config) -> Result<Vec<ApprovalCard>, Error> {
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

/// `bxctl` is how to call bxctl again for this stack (`hint`), for the answer commands.
pub fn approvals(
    config: &Config,
    bxctl: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let cards = listing(config)?;
    if json {
        let listing = ApprovalListing {
            pending: cards,
            omitted: 0,
        };
        return print_json(&listing, out);
    }
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

pub fn session(
    config: &Config,
    session: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let session = SessionId::new(session).map_err(Error::SessionId)?;
    let info = call(
        config,
        Message::SessionQuery(SessionQuery {
            session: session.clone(),
        }),
    )?;
    // brokerd answers every id, with its defaults for one it never saw: whether the session
    // exists is loopd's to say (it keeps the logs). Where loopd cannot be asked (a member of
    // the admin group only), brokerd's answer is shown with a line saying so.
    let unchecked = match crate::sessions::records(config, &session, false) {
        Ok(_) => None,
        Err(e @ Error::NoSession { .. }) => return Err(e),
        Err(e) => Some(e),
    };
    match info {
        Message::SessionInfo(i) if json => print_json(&i, out),
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
            if let Some(e) = unchecked {
                writeln!(
                    out,
                    "  (whether loopd keeps this session was not asked: {}; brokerd answers an \
                     id it never saw with its defaults)",
                    line(e.to_string().lines().next().unwrap_or_default())
                )
                .map_err(Error::Output)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        other => Err(unexpected(&other)),
    }
}

pub fn grants(config: &Config, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    match call(config, Message::GrantsQuery(Empty {}))? {
        Message::GrantsInfo(g) if json => print_json(&g, out),
        Message::GrantsInfo(g) => {
            let names: Vec<String> = g.grants.iter().map(|g| line(g)).collect();
            writeln!(out, "snapshot {}: {}", g.snapshot, names.join(", "))
                .map_err(Error::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        other => Err(unexpected(&other)),
    }
}
