//! `bxctl chat` and `bxctl sessions`: the owner's side of loop.sock. Replies stream as they
//! arrive; tool calls and their outcomes are shown; a pending approval shows the command
//! that answers it.

use std::io::Write;
use std::process::ExitCode;

use daemon::config::Config;
use daemon::conn::Conn;
use inert::{Block, block, line};
use proto::approval::Empty;
use proto::chat::{ChatEvent, ChatSend, SessionShow, TurnEnd};
use proto::{CallId, CallOutcome, LogRecord, Message, SessionId, ToolResponse};

use crate::Error;
use crate::error::{answered, call_failed, unexpected};
use crate::inline::Approver;
use crate::signals::Interrupt;
use crate::spinner::Spinner;

/// Lines in a row that may be refused as not UTF-8 before the prompt gives up (an input
/// that is nothing but bad bytes would otherwise be read for ever).
const MAX_BAD_INPUT: u32 = 100;

fn connect(config: &Config) -> Result<Conn, Error> {
    let path = config.sockets.chat_loop_sock();
    Conn::connect(&path).map_err(|source| Error::Reach {
        server: "loopd",
        path,
        source,
    })
}

/// How a turn reads in a terminal: bxctl's own lines (tool calls, outcomes, approvals), and
/// the model's text as a block whose every line starts with `| ` (`inert`), so the
/// model can never draw a line that looks like one of bxctl's. Every field from a peer (a
/// tool name, arguments, a denial's detail, a tool's failure) is one inert line.
#[derive(Debug)]
pub struct Screen<'a> {
    /// How to call bxctl for this stack (with its `--config` when that is not the default).
    bxctl: &'a str,
    text: Block,
}

impl<'a> Screen<'a> {
    pub fn new(bxctl: &'a str) -> Self {
        Self {
            bxctl,
            text: Block::default(),
        }
    }

    /// What `event` adds to the screen.
    pub fn event(&mut self, event: &ChatEvent) -> String {
        let own = match event {
            ChatEvent::Started { .. } | ChatEvent::Compacted { .. } => return String::new(),
            ChatEvent::Reasoning { .. } => return String::new(),
            ChatEvent::Text { delta } => return self.text.push(delta),
            ChatEvent::ToolCall {
                call,
                tool,
                arguments,
            } => format!(
                "  [tool {} (call {}): {}]\n",
                line(tool),
                call.0,
                line(arguments)
            ),
            ChatEvent::ToolResponse { call, response } => self.response(*call, response),
        };
        self.end() + &own
    }

    fn response(&self, call: CallId, response: &ToolResponse) -> String {
        let bxctl = self.bxctl;
        match response {
            ToolResponse::PendingApproval { approval, expires } => {
                let approval = line(approval);
                format!(
                    "  [call {} waits for your approval until {expires}: run `{bxctl}approve {approval}` \
                     or `{bxctl}deny {approval}`]\n",
                    call.0
                )
            }
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
                    .map(|d| format!(": {}", line(d)))
                    .unwrap_or_default()
            ),
            ToolResponse::Failed { message, .. } => format!("  [-> failed: {}]\n", line(message)),
        }
    }

    /// Ends the model's text, if any: what follows starts a line of bxctl's own.
    pub fn end(&mut self) -> String {
        self.text.end()
    }
}

/// How a turn went, as far as bxctl is concerned.
#[derive(Debug)]
pub enum Sent {
    /// The turn ended: its session, and whether the model answered.
    Ended(SessionId, bool),
    /// The owner cancelled it (Ctrl-C): the connection is gone, the session (when the turn
    /// got as far as starting it) goes on.
    Cancelled(Option<SessionId>),
}

/// Who a turn is shown to: how to call bxctl again for this stack (for the commands it
/// prints), the inline approver (on a terminal, with the admin side), and the Ctrl-C that
/// can cancel the turn.
#[derive(Debug)]
pub struct Owner<'a> {
    pub bxctl: &'a str,
    /// brokerd's chat side, where the owner's words are registered before loopd gets them.
    pub broker: std::path::PathBuf,
    pub approver: Option<&'a Approver<'a>>,
    pub interrupt: &'a Interrupt,
}

/// Sends one message and streams the turn to `out`, with a spinner while the model is
/// awaited; the owner's Ctrl-C can cancel it meanwhile.
pub fn send(
    conn: &mut Conn,
    owner: &Owner<'_>,
    session: Option<SessionId>,
    text: &str,
    id: u64,
    out: &mut dyn Write,
) -> Result<Sent, Error> {
    let Owner {
        bxctl,
        ref broker,
        approver,
        interrupt,
    } = *owner;
    crate::owner::register(broker, text, out)?;
    let msg = Message::ChatSend(ChatSend {
        session,
        text: text.to_owned(),
        // Ctrl-C hangs up: the owner means the turn to stop.
        cancel_on_hangup: true,
    });
    let mut write_err = None;
    let mut screen = Screen::new(bxctl);
    let mut spinner = Spinner::new();
    spinner.start();
    let mut started = None;
    interrupt.during(conn.handle().ok());
    let last = conn.call(id, msg, |env| {
        if let Message::ChatEvent(ev) = &env.msg {
            if let ChatEvent::Started { session, .. } = ev {
                started = Some(session.clone());
            }
            let text = screen.event(ev);
            if text.is_empty() {
                return;
            }
            spinner.stop();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                write_err = Some(Error::Output(e));
            }
            // The stream gives the id only; the card and the answer are brokerd's.
            if let (Some(a), ChatEvent::ToolResponse { response, .. }) = (approver, ev)
                && let ToolResponse::PendingApproval { approval, .. } = response
                && write_err.is_none()
                && let Err(e) = a.offer(approval, interrupt, out)
            {
                write_err = Some(e);
            }
            // A tool's answer goes back to the model: it is awaited again.
            if matches!(ev, ChatEvent::ToolResponse { response, .. }
                if !matches!(response, ToolResponse::PendingApproval { .. }))
            {
                spinner.start();
            }
        }
    });
    spinner.stop();
    interrupt.during(None);
    // Whatever comes next (bxctl's own line, or an error) starts a line of its own.
    write!(out, "{}", screen.end()).map_err(Error::Output)?;
    if interrupt.take_cancelled() {
        writeln!(
            out,
            "[turn cancelled: the model's answer is cut and a call waiting for approval \
             withdrawn; a tool already running finishes and is logged]"
        )
        .map_err(Error::Output)?;
        return Ok(Sent::Cancelled(started));
    }
    let last = last.map_err(call_failed("loopd", "chat"))?;
    if let Some(e) = write_err {
        return Err(e);
    }
    match answered("loopd", last.msg)? {
        Message::ChatReply(reply) => {
            let ok = match &reply.end {
                TurnEnd::Answered => true,
                TurnEnd::ToolCap { calls } => {
                    writeln!(out, "[the turn ended after {calls} tool calls]")
                        .map_err(Error::Output)?;
                    false
                }
                TurnEnd::Cancelled => {
                    writeln!(out, "[the turn was cancelled]").map_err(Error::Output)?;
                    false
                }
                TurnEnd::ModelError { detail } => {
                    writeln!(
                        out,
                        "[the model could not answer: {}; your message is kept]",
                        line(detail)
                    )
                    .map_err(Error::Output)?;
                    false
                }
                TurnEnd::Cut { finish, withdrawn } => {
                    writeln!(
                        out,
                        "[the answer {}]",
                        TurnEnd::cut_words(&line(finish), *withdrawn)
                    )
                    .map_err(Error::Output)?;
                    false
                }
            };
            Ok(Sent::Ended(reply.session, ok))
        }
        other => Err(unexpected(&other)),
    }
}

/// `bxctl chat -m TEXT`: one message.
pub fn once(
    config: &Config,
    bxctl: &str,
    session: Option<SessionId>,
    text: &str,
    interrupt: &Interrupt,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let mut conn = connect(config)?;
    let owner = Owner {
        bxctl,
        broker: config.sockets.chat_broker_sock(),
        approver: None,
        interrupt,
    };
    let Sent::Ended(session, ok) = send(&mut conn, &owner, session, text, 1, out)? else {
        return Ok(ExitCode::from(130));
    };
    writeln!(out, "[session {session}]").map_err(Error::Output)?;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `bxctl chat`: a prompt with line editing and history, until end of input or `/quit`;
/// then the command that continues the session, `{resume}ID`.
pub fn interactive(
    config: &Config,
    bxctl: &str,
    resume: &str,
    mut session: Option<SessionId>,
    interrupt: &Interrupt,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let mut conn = connect(config)?;
    let mut last = std::time::Instant::now();
    let mut editor = rustyline::DefaultEditor::new().map_err(Error::Prompt)?;
    let approver = Approver::on_terminal(config, bxctl);
    let owner = Owner {
        bxctl,
        broker: config.sockets.chat_broker_sock(),
        approver: approver.as_ref(),
        interrupt,
    };
    writeln!(
        out,
        "boxmaker chat: type a message; /quit or Ctrl-C leaves, Ctrl-C during a turn cancels it"
    )
    .map_err(Error::Output)?;
    let mut id = 0u64;
    let mut bad_input = 0u32;
    loop {
        let line = match editor.readline("you> ") {
            Ok(l) => l,
            Err(
                rustyline::error::ReadlineError::Eof | rustyline::error::ReadlineError::Interrupted,
            ) => break,
            Err(rustyline::error::ReadlineError::Io(e))
                if e.kind() == std::io::ErrorKind::InvalidData && bad_input < MAX_BAD_INPUT =>
            {
                // A byte that is not UTF-8 (a terminal in another encoding, a stray 0xFF):
                // the line is refused, the prompt stays.
                bad_input += 1;
                writeln!(
                    out,
                    "[that input was not UTF-8 text and was dropped; type the line again]"
                )
                .map_err(Error::Output)?;
                continue;
            }
            Err(e) => return Err(Error::Prompt(e)),
        };
        bad_input = 0;
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
        match send(&mut conn, &owner, session.clone(), text, id, out)? {
            Sent::Ended(s, _) => session = Some(s),
            Sent::Cancelled(s) => {
                session = s.or(session);
                // The cancelled turn's connection is gone.
                conn = connect(config)?;
            }
        }
    }
    if let Some(s) = session {
        writeln!(out, "[session {s}; continue it with `{resume}{s}`]").map_err(Error::Output)?;
    }
    Ok(ExitCode::SUCCESS)
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
        Message::SessionListing(l) if json => return crate::admin::print_json(&l, out),
        Message::SessionRecords(r) if json => return crate::admin::print_json(&r, out),
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
        } => {
            format!("{time} -- prompt cache lost: {got} of {expected} tokens reused\n")
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
