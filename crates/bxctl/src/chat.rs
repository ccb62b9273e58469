//! `bxctl chat` and `bxctl sessions`: the owner's side of loop.sock. Replies stream as they
//! arrive; tool calls and their outcomes are shown; a pending approval shows the command
//! that answers it.

use std::io::Write;
use std::process::ExitCode;

use daemon::config::Config;
use daemon::conn::Conn;
use proto::approval::Empty;
use proto::chat::{ChatEvent, ChatSend, SessionShow, TurnEnd};
use proto::{LogRecord, Message, SessionId, ToolResponse};

use crate::{Error, err};

fn connect(config: &Config) -> Result<Conn, Error> {
    let path = config.sockets.chat_loop_sock();
    Conn::connect(&path)
        .map_err(|e| Error(format!("cannot reach loopd at {}: {e}", path.display())))
}

/// Text from the model or a tool, made safe for a terminal: control characters other than
/// newline and tab are shown escaped, so injected text cannot move the cursor, rewrite a
/// line already shown (a tool call, say) or talk to the terminal.
fn safe(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// How one event reads in a terminal. `bxctl` is how to call bxctl for this stack (with its
/// `--config` when that is not the default).
pub fn render(event: &ChatEvent, bxctl: &str) -> String {
    match event {
        ChatEvent::Started { .. } | ChatEvent::Compacted { .. } => String::new(),
        ChatEvent::Text { delta } => safe(delta),
        ChatEvent::Reasoning { .. } => String::new(),
        ChatEvent::ToolCall {
            call,
            tool,
            arguments,
        } => {
            format!(
                "\n  [tool {} (call {}): {}]\n",
                safe(tool),
                call.0,
                safe(arguments)
            )
        }
        ChatEvent::ToolResponse { call, response } => match response {
            ToolResponse::PendingApproval { approval, expires } => format!(
                "  [call {} waits for your approval until {expires}: run `{bxctl}approve {approval}` \
                 or `{bxctl}deny {approval}`]\n",
                call.0
            ),
            ToolResponse::Result {
                content,
                class,
                untrusted,
                truncated,
            } => format!(
                "  [-> {} bytes, {class}{}{}]\n",
                content.len(),
                if *untrusted { ", untrusted" } else { "" },
                if *truncated { ", truncated" } else { "" }
            ),
            ToolResponse::Denied { reason, detail } => format!(
                "  [-> denied: {}{}]\n",
                reason.as_str(),
                detail
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            ),
            ToolResponse::Failed { message } => format!("  [-> failed: {message}]\n"),
        },
    }
}

/// Sends one message and streams the turn to `out`. Returns the session and whether the
/// model answered.
pub fn send(
    conn: &mut Conn,
    bxctl: &str,
    session: Option<SessionId>,
    text: &str,
    id: u64,
    out: &mut dyn Write,
) -> Result<(SessionId, bool), Error> {
    let msg = Message::ChatSend(ChatSend {
        session,
        text: text.to_owned(),
    });
    let mut write_err = None;
    let last = conn
        .call(id, msg, |env| {
            if let Message::ChatEvent(ev) = &env.msg {
                let text = render(ev, bxctl);
                if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                    write_err = Some(e);
                }
            }
        })
        .map_err(crate::call_failed("loopd", "chat"))?;
    if let Some(e) = write_err {
        return Err(err(e));
    }
    match last.msg {
        Message::ChatReply(reply) => {
            let ok = match &reply.end {
                TurnEnd::Answered => true,
                TurnEnd::ToolCap { calls } => {
                    writeln!(out, "\n[the turn ended after {calls} tool calls]").map_err(err)?;
                    false
                }
                TurnEnd::ModelError { detail } => {
                    writeln!(
                        out,
                        "\n[the model could not answer: {detail}; your message is kept]"
                    )
                    .map_err(err)?;
                    false
                }
            };
            writeln!(out).map_err(err)?;
            Ok((reply.session, ok))
        }
        Message::Error(e) => Err(Error(format!("loopd refused: {:?}: {}", e.code, e.detail))),
        other => Err(Error(format!("unexpected answer {}", other.kind()))),
    }
}

/// `bxctl chat -m TEXT`: one message.
pub fn once(
    config: &Config,
    bxctl: &str,
    session: Option<SessionId>,
    text: &str,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let mut conn = connect(config)?;
    let (session, ok) = send(&mut conn, bxctl, session, text, 1, out)?;
    writeln!(out, "[session {session}]").map_err(err)?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `bxctl chat`: a prompt with line editing and history, until end of input or `/quit`.
pub fn interactive(
    config: &Config,
    bxctl: &str,
    mut session: Option<SessionId>,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let mut conn = connect(config)?;
    let mut last = std::time::Instant::now();
    let mut editor = rustyline::DefaultEditor::new().map_err(err)?;
    writeln!(out, "boxmaker chat: type a message, /quit to leave").map_err(err)?;
    let mut id = 0u64;
    loop {
        let line = match editor.readline("you> ") {
            Ok(l) => l,
            Err(
                rustyline::error::ReadlineError::Eof | rustyline::error::ReadlineError::Interrupted,
            ) => break,
            Err(e) => return Err(err(e)),
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if text == "/quit" {
            break;
        }
        let _ = editor.add_history_entry(text);
        id += 1;
        // loopd drops a connection idle for an hour; open a fresh one well before that.
        if last.elapsed() > std::time::Duration::from_secs(45 * 60) {
            conn = connect(config)?;
        }
        last = std::time::Instant::now();
        write!(out, "boxmaker> ").map_err(err)?;
        let (s, _) = send(&mut conn, bxctl, session.clone(), text, id, out)?;
        session = Some(s);
    }
    if let Some(s) = session {
        writeln!(out, "[session {s}]").map_err(err)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn sessions(
    config: &Config,
    show: Option<SessionId>,
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
    match conn
        .call(1, msg, |_| {})
        .map_err(crate::call_failed("loopd", "chat"))?
        .msg
    {
        Message::SessionListing(l) => {
            if l.sessions.is_empty() {
                writeln!(out, "no sessions").map_err(err)?;
            }
            for s in l.sessions {
                writeln!(
                    out,
                    "{}  epoch {}  {} turns  started {}  last {}",
                    s.session, s.epoch.0, s.turns, s.started, s.last
                )
                .map_err(err)?;
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
            .map_err(err)?;
            for rec in &r.records {
                writeln!(out, "{}", describe(rec)).map_err(err)?;
            }
        }
        Message::Error(e) => return Err(Error(format!("loopd: {:?}: {}", e.code, e.detail))),
        other => return Err(Error(format!("unexpected answer {}", other.kind()))),
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(r: &LogRecord) -> String {
    match r {
        LogRecord::SessionStart { time, slot, .. } => {
            format!("{time} -- session start (slot {slot})")
        }
        LogRecord::User { time, content } => format!("{time} you: {}", safe(content)),
        LogRecord::Assistant {
            time,
            content,
            tool_calls,
            ..
        } => {
            let calls: Vec<String> = tool_calls
                .iter()
                .map(|c| format!("{} {}", c.name, c.arguments))
                .collect();
            format!(
                "{time} boxmaker: {}{}",
                safe(content.as_deref().unwrap_or("")),
                if calls.is_empty() {
                    String::new()
                } else {
                    format!(" [calls: {}]", calls.join("; "))
                }
            )
        }
        LogRecord::ToolResult {
            time,
            call,
            content,
            class,
            ..
        } => {
            format!(
                "{time}   call {} -> {} bytes ({class})",
                call.0,
                content.len()
            )
        }
        LogRecord::CacheLoss {
            time,
            expected,
            got,
        } => {
            format!("{time} -- prompt cache lost: {got} of {expected} tokens reused")
        }
        LogRecord::EpochEnd { time, next, .. } => format!("{time} -- epoch ends, next {}", next.0),
    }
}
