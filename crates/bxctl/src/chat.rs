//! `bxctl chat`: the owner's side of loop.sock. Replies stream as they arrive; tool calls and
//! their outcomes are shown; a pending approval shows the command that answers it (or its
//! card, `inline`). A continued session (`--session ID`, `--continue`) shows its last turns
//! first; the prompt keeps its history across runs (`history`) and has commands of its own
//! (`slash`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use config::Config;
use daemon::conn::Conn;
use inert::{Block, line};
use proto::chat::{ChatEvent, ChatSend, SessionRecords, TurnEnd};
use proto::{CallId, Message, SessionId, ToolResponse};
use rustyline::DefaultEditor;

use crate::error::{answered, call_failed, unexpected};
use crate::inline::Approver;
use crate::loopconn::connect;
use crate::signals::Interrupt;
use crate::slash::{self, Slash};
use crate::spinner::Spinner;
use crate::{Error, history, sessions};

/// Lines in a row that may be refused as not UTF-8 before the prompt gives up (an input
/// that is nothing but bad bytes would otherwise be read for ever).
const MAX_BAD_INPUT: u32 = 100;

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
    pub broker: PathBuf,
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

/// Which session a chat continues.
#[derive(Debug, Clone)]
pub enum Start {
    New,
    /// `--session ID`.
    Session(SessionId),
    /// `--continue`: the most recently active.
    Latest,
}

/// The session a chat continues, asked of loopd before anything is sent, so that a session
/// that is not there is said at once (`None`: a new one).
pub fn begin(config: &Config, start: Start) -> Result<Option<SessionRecords>, Error> {
    let id = match start {
        Start::New => return Ok(None),
        Start::Session(id) => id,
        Start::Latest => sessions::latest(config)?,
    };
    sessions::records(config, &id, true).map(Some)
}

/// `bxctl chat -m TEXT`: one message.
pub fn once(
    config: &Config,
    bxctl: &str,
    start: Start,
    text: &str,
    interrupt: &Interrupt,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let session = begin(config, start)?.map(|r| r.session);
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

/// The line editor, with the history of earlier runs when there is a file for it (and a
/// line saying why not, when there is none).
fn editor(out: &mut dyn Write) -> Result<(DefaultEditor, Option<PathBuf>), Error> {
    let config = rustyline::Config::builder()
        .max_history_size(history::MAX_LINES)
        .map_err(Error::Prompt)?
        .auto_add_history(false)
        .build();
    let mut editor = DefaultEditor::with_config(config).map_err(Error::Prompt)?;
    let Some(path) = history::path() else {
        writeln!(
            out,
            "[no input history: neither XDG_STATE_HOME nor HOME names a directory]"
        )
        .map_err(Error::Output)?;
        return Ok((editor, None));
    };
    let loaded = history::prepare(&path)
        .map_err(|e| e.to_string())
        .and_then(|()| editor.load_history(&path).map_err(|e| e.to_string()));
    match loaded {
        Ok(()) => Ok((editor, Some(path))),
        Err(e) => {
            writeln!(out, "[no input history: {}: {}]", path.display(), line(&e))
                .map_err(Error::Output)?;
            Ok((editor, None))
        }
    }
}

/// `bxctl chat`: a prompt with line editing and history, until end of input or `/quit`;
/// then the command that continues the session, `{resume}ID`. A continued session
/// (`begun`) shows its last turns first.
pub fn interactive(
    config: &Config,
    bxctl: &str,
    resume: &str,
    start: Start,
    interrupt: &Interrupt,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let begun = begin(config, start)?;
    let mut conn = connect(config)?;
    let mut last = std::time::Instant::now();
    let (mut editor, history) = editor(out)?;
    let approver = Approver::on_terminal(config, bxctl);
    let owner = Owner {
        bxctl,
        broker: config.sockets.chat_broker_sock(),
        approver: approver.as_ref(),
        interrupt,
    };
    writeln!(
        out,
        "boxmaker chat: type a message; /help lists the commands; /quit, Ctrl-D or Ctrl-C \
         leaves, Ctrl-C during a turn cancels it"
    )
    .map_err(Error::Output)?;
    let mut session = None;
    if let Some(r) = begun {
        write!(out, "{}", sessions::last_turns(&r, sessions::SHOWN_TURNS))
            .map_err(Error::Output)?;
        session = Some(r.session);
    }
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
        let _ = editor.add_history_entry(text);
        if let Some(path) = &history {
            // Kept as it is typed; a history that cannot be written is no reason to stop.
            let _ = editor.append_history(path);
        }
        let shown = match slash::parse(text) {
            None => None,
            Some(Slash::Quit) => break,
            Some(Slash::Help) => Some(slash::HELP.to_owned()),
            Some(Slash::Session) => Some(slash::session(session.as_ref(), resume)),
            Some(Slash::Status) => Some(slash::status(config, session.as_ref())),
            Some(Slash::Unknown(word)) => Some(format!(
                "  no command {}: /help lists them (nothing was sent)\n",
                inert::line(&word)
            )),
        };
        if let Some(shown) = shown {
            write!(out, "{shown}").map_err(Error::Output)?;
            continue;
        }
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
