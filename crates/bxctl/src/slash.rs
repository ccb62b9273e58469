//! The chat's own commands, typed at its prompt and never sent to the agent: `/help`,
//! `/status`, `/session`, `/quit`. A line whose first word is `/` and letters only is a
//! command (an unknown one is refused, not sent); anything else, `/etc/passwd` included,
//! is a message.

use config::Config;
use inert::line;
use proto::approval::SessionQuery;
use proto::{Message, SessionId};

use crate::admin::call;
use crate::status;

/// A command typed at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Help,
    Status,
    Session,
    Quit,
    /// `/word` that is no command.
    Unknown(String),
}

/// The command `text` is, or `None` for a message.
pub fn parse(text: &str) -> Option<Slash> {
    let word = text.split_whitespace().next()?;
    let name = word.strip_prefix('/')?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    Some(match name {
        "help" => Slash::Help,
        "status" => Slash::Status,
        "session" => Slash::Session,
        "quit" | "exit" => Slash::Quit,
        _ => Slash::Unknown(word.to_owned()),
    })
}

/// What `/help` prints.
pub const HELP: &str = "\
  /help      this list
  /status    this session and its label, the model, the approvals waiting
  /session   this session's id and the command that continues it later
  /quit      leave (so do Ctrl-D and Ctrl-C at the prompt); the stack of `bxctl dev` stops
  Ctrl-C during a turn cancels it; Up and Ctrl-R find what you typed before.
  Anything else is sent to the agent.
";

/// What `/session` prints: the session, and `{resume}ID`, the command that continues it.
pub fn session(session: Option<&SessionId>, resume: &str) -> String {
    match session {
        Some(s) => format!("  session {s}; continue it later with `{resume}{s}`\n"),
        None => "  no session yet: your first message starts one\n".to_owned(),
    }
}

/// What `/status` prints: the session and its label (brokerd's, where bxctl may ask it), the
/// model (loopd's view), the approvals waiting. What cannot be asked says why, on its line.
pub fn status(config: &Config, session: Option<&SessionId>) -> String {
    let mut text = match session {
        Some(s) => format!("  session    {s}\n"),
        None => "  session    none yet: your first message starts one\n".to_owned(),
    };
    if let Some(s) = session {
        let label = match call(
            config,
            Message::SessionQuery(SessionQuery { session: s.clone() }),
        ) {
            Ok(Message::SessionInfo(i)) => format!(
                "{}{}",
                i.taint,
                if i.untrusted {
                    ", untrusted"
                } else {
                    ", trusted"
                }
            ),
            Ok(other) => format!("unexpected answer {}", other.kind()),
            Err(e) => format!("not known here ({})", first_line(&e.to_string())),
        };
        text.push_str(&format!("  label      {label}\n"));
    }
    text.push_str(&match status::loop_status(config) {
        Ok(l) => format!("  model      {}\n", status::model_text(&l)),
        Err(e) => format!("  model      not known: {}\n", first_line(&e.to_string())),
    });
    text.push_str(&match status::broker_status(config) {
        Ok(b) => format!("  approvals  {} waiting\n", b.pending_approvals),
        Err(e) => format!(
            "  approvals  not known here ({})\n",
            first_line(&e.to_string())
        ),
    });
    text
}

/// An error's first line (its `help:` belongs to a command, not to a status line), inert.
fn first_line(text: &str) -> String {
    line(text.lines().next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_a_slash_and_letters_and_paths_are_messages() {
        assert_eq!(parse("/help"), Some(Slash::Help));
        assert_eq!(parse("/status now"), Some(Slash::Status));
        assert_eq!(parse("/quit"), Some(Slash::Quit));
        assert_eq!(parse("/exit"), Some(Slash::Quit));
        assert_eq!(parse("/hepl"), Some(Slash::Unknown("/hepl".into())));
        assert_eq!(parse("/etc/passwd, please"), None);
        assert_eq!(parse("/"), None);
        assert_eq!(parse("hello /help"), None);
    }
}
