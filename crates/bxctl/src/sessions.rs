//! `bxctl sessions` and what the chat shows of a session it continues: the listing, one
//! session's records, and its last turns. Whatever a session holds is shown inert (the
//! model's text as a `| ` block, every other field one escaped line).

use std::io::Write;
use std::process::ExitCode;

use config::Config;
use inert::{block, line};
use proto::approval::Empty;
use proto::chat::{SessionRecords, SessionShow};
use proto::{CallOutcome, ErrorCode, LogRecord, Message, SessionId};

use crate::Error;
use crate::error::{answered, call_failed, unexpected};
use crate::loopconn::connect;

/// How many turns of a continued session the chat shows before its prompt.
pub const SHOWN_TURNS: usize = 3;

/// Asks loopd for `session`'s records; a session it has no log of is [`Error::NoSession`]
/// (`chat`: for a chat that was to continue it).
pub fn records(config: &Config, session: &SessionId, chat: bool) -> Result<SessionRecords, Error> {
    let mut conn = connect(config)?;
    let msg = Message::SessionShow(SessionShow {
        session: session.clone(),
        epoch: None,
    });
    let reply = conn
        .call(1, msg, |_| {})
        .map_err(call_failed("loopd", "chat"))?;
    match reply.msg {
        Message::SessionRecords(r) => Ok(r),
        Message::Error(e)
            if e.code == ErrorCode::BadMessage && e.detail == format!("no session {session}") =>
        {
            // The ones there are, for the help line (nothing more when they cannot be had).
            let recent = listing(config)
                .map(|l| l.into_iter().take(3).collect())
                .unwrap_or_default();
            Err(Error::NoSession {
                session: session.clone(),
                recent,
                chat,
            })
        }
        other => Err(unexpected(&answered("loopd", other)?)),
    }
}

/// The sessions, most recently active first.
fn listing(config: &Config) -> Result<Vec<SessionId>, Error> {
    let mut conn = connect(config)?;
    let reply = conn
        .call(1, Message::SessionList(Empty {}), |_| {})
        .map_err(call_failed("loopd", "chat"))?;
    match answered("loopd", reply.msg)? {
        Message::SessionListing(l) => Ok(l.sessions.into_iter().map(|s| s.session).collect()),
        other => Err(unexpected(&other)),
    }
}

/// The most recently active session, for `--continue`.
pub fn latest(config: &Config) -> Result<SessionId, Error> {
    listing(config)?
        .into_iter()
        .next()
        .ok_or(Error::NothingToContinue)
}

/// The last `n` turns of `r` (its current epoch), as the chat showed them: your words after
/// `you> `, each tool call and its outcome on a line of bxctl's own, the model's text as a
/// block.
pub fn last_turns(r: &SessionRecords, n: usize) -> String {
    let starts: Vec<usize> = r
        .records
        .iter()
        .enumerate()
        .filter(|(_, rec)| matches!(rec, LogRecord::User { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut text = String::new();
    if starts.is_empty() {
        text.push_str(&format!(
            "[session {}: no turns in its epoch {} yet; it starts from a summary of the earlier ones]\n",
            r.session, r.epoch.0
        ));
        return text;
    }
    let from = starts[starts.len().saturating_sub(n)];
    let shown = starts.len().min(n);
    text.push_str(&format!(
        "[session {}: its last {shown} turn{} of epoch {}{}]\n",
        r.session,
        if shown == 1 { "" } else { "s" },
        r.epoch.0,
        if r.truncated {
            ", older records left out"
        } else {
            ""
        }
    ));
    for rec in &r.records[from..] {
        text.push_str(&turn_line(rec));
    }
    text
}

/// One record of a turn as the chat shows it.
fn turn_line(rec: &LogRecord) -> String {
    match rec {
        LogRecord::User { content, .. } => format!("you> {}\n", line(content)),
        LogRecord::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut s = String::new();
            let content = content.as_deref().unwrap_or("");
            if !content.is_empty() {
                s.push_str(&block(content));
            }
            for c in tool_calls {
                s.push_str(&format!(
                    "  [tool {}: {}]\n",
                    line(&c.name),
                    line(&c.arguments)
                ));
            }
            s
        }
        LogRecord::ToolResult {
            content,
            class,
            outcome,
            ..
        } => match outcome {
            Some(CallOutcome::Denied { reason }) => format!("  [-> denied: {}]\n", reason.as_str()),
            Some(CallOutcome::Failed) => format!("  [-> failed: {}]\n", line(content)),
            None => format!("  [-> {} bytes, {class}]\n", content.len()),
        },
        LogRecord::Withdrawn { calls, .. } => {
            format!("  [{} tool calls withdrawn, not run]\n", calls.len())
        }
        LogRecord::SessionStart { .. }
        | LogRecord::CacheLoss { .. }
        | LogRecord::EpochEnd { .. } => String::new(),
    }
}

pub fn sessions(
    config: &Config,
    show: Option<SessionId>,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let mut conn = connect(config)?;
    let msg = match &show {
        Some(session) => Message::SessionShow(SessionShow {
            session: session.clone(),
            epoch: None,
        }),
        None => Message::SessionList(Empty {}),
    };
    let reply = conn
        .call(1, msg, |_| {})
        .map_err(call_failed("loopd", "chat"))?;
    match answered("loopd", reply.msg)? {
        Message::SessionListing(l) if json => return crate::output::print_json(&l, out),
        Message::SessionRecords(r) if json => return crate::output::print_json(&r, out),
        Message::SessionListing(l) => {
            if l.sessions.is_empty() {
                writeln!(out, "no sessions").map_err(Error::Output)?;
            }
            // loopd lists the most recently active first.
            for s in l.sessions {
                writeln!(
                    out,
                    "{}  last {}  {} turns  epoch {}  {}",
                    s.session,
                    s.last,
                    s.all_turns.unwrap_or(s.turns),
                    s.epoch.0,
                    line(s.preview.as_deref().unwrap_or(""))
                )
                .map_err(Error::Output)?;
            }
        }
        Message::SessionRecords(r) => {
            writeln!(
                out,
                "session {} epoch {}{}",
                r.session,
                r.epoch.0,
                if r.truncated {
                    " (oldest records left out)"
                } else {
                    ""
                }
            )
            .map_err(Error::Output)?;
            for rec in &r.records {
                write!(out, "{}", describe(rec)).map_err(Error::Output)?;
            }
        }
        other => return Err(unexpected(&other)),
    }
    Ok(ExitCode::SUCCESS)
}

/// Tool calls on one line, each name and arguments inert.
fn calls_line(calls: &[proto::ToolCall]) -> String {
    let calls: Vec<String> = calls
        .iter()
        .map(|c| format!("{} {}", line(&c.name), line(&c.arguments)))
        .collect();
    calls.join("; ")
}

/// One record of a session log: a line of bxctl's own, and what was said as a block.
fn describe(r: &LogRecord) -> String {
    match r {
        LogRecord::SessionStart { time, slot, .. } => {
            format!("{time} -- session start (slot {slot})\n")
        }
        LogRecord::User { time, content } => format!("{time} you:\n{}", block(content)),
        LogRecord::Assistant {
            time,
            content,
            tool_calls,
            ..
        } => {
            format!(
                "{time} boxmaker:{}\n{}",
                if tool_calls.is_empty() {
                    String::new()
                } else {
                    format!(" [calls: {}]", calls_line(tool_calls))
                },
                block(content.as_deref().unwrap_or(""))
            )
        }
        LogRecord::ToolResult {
            time,
            call,
            content,
            class,
            outcome,
            ..
        } => match outcome {
            Some(CallOutcome::Denied { reason }) => {
                format!("{time}   call {} -> denied: {}\n", call.0, reason.as_str())
            }
            Some(CallOutcome::Failed) => {
                format!("{time}   call {} -> failed: {}\n", call.0, line(content))
            }
            None => format!(
                "{time}   call {} -> {} bytes ({class})\n",
                call.0,
                content.len()
            ),
        },
        LogRecord::CacheLoss {
            time,
            expected,
            got,
            shared,
        } => {
            let meanwhile = if *shared {
                " (the slot served another session meanwhile)"
            } else {
                ""
            };
            format!("{time} -- prompt cache lost: {got} of {expected} tokens reused{meanwhile}\n")
        }
        LogRecord::EpochEnd { time, next, .. } => {
            format!("{time} -- epoch ends, next {}\n", next.0)
        }
        LogRecord::Withdrawn {
            time,
            cause,
            detail,
            calls,
        } => {
            let cause = match cause {
                proto::Withdrawal::Cut => "cut answer, not run",
                proto::Withdrawal::Unrenderable => "unrenderable, left out",
            };
            format!(
                "{time} -- tool calls withdrawn ({cause}: {}): {}\n",
                line(detail),
                calls_line(calls)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::Timestamp;

    #[test]
    fn a_cache_loss_says_when_another_session_used_the_slot() {
        let loss = |shared| LogRecord::CacheLoss {
            time: Timestamp::now(),
            expected: 1176,
            got: 1077,
            shared,
        };
        let alone = describe(&loss(false));
        assert!(
            alone.ends_with(" -- prompt cache lost: 1077 of 1176 tokens reused\n"),
            "{alone}"
        );
        let shared = describe(&loss(true));
        assert!(
            shared.ends_with(
                " -- prompt cache lost: 1077 of 1176 tokens reused (the slot served another \
                 session meanwhile)\n"
            ),
            "{shared}"
        );
    }
}
