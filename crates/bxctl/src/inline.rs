//! Approvals inside the chat. loopd's stream only says that a call waits and the approval's
//! id; the card is fetched by that id from brokerd's admin side (the request as brokerd
//! holds it), and the answer goes back there with the card's binding, as `bxctl approve`
//! sends it, audited the same way. Offered only on a terminal and only to a user who
//! reaches the admin side (`bxctl dev`, a member of the admin group); everyone else keeps
//! the line that names the command to run.
//!
//! No keystroke typed before the card was drawn can answer it: pending input is discarded
//! once the card is on the screen, and the answer is one explicit key (`a`, `d`, `l`),
//! never Enter alone. Ctrl-C at the card answers nothing: it restores the terminal and is
//! then raised as the SIGINT it is, so it does what it does anywhere in a turn (it cancels
//! the turn, and loopd withdraws the call).

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;

use config::Config;
use inert::line;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices};
use proto::approval::Verdict;

use crate::Error;
use crate::admin::listing;
use crate::approval::{outcome_line, send};
use crate::card::card;
use crate::signals::Interrupt;

/// The chat's way to answer approvals, when it has one.
#[derive(Debug)]
pub struct Approver<'a> {
    config: &'a Config,
    bxctl: &'a str,
}

/// What the owner pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Answer(Verdict),
    Later,
    /// Ctrl-C: read as a key (the terminal is restored first), then raised as SIGINT, so it
    /// does at the card what it does anywhere else in the chat.
    Interrupt,
}

impl<'a> Approver<'a> {
    /// An approver when stdin and stdout are a terminal (a piped chat keeps the command
    /// line only).
    pub fn on_terminal(config: &'a Config, bxctl: &'a str) -> Option<Self> {
        (std::io::stdin().is_terminal() && std::io::stdout().is_terminal())
            .then_some(Self { config, bxctl })
    }

    /// Shows the card of `approval` and answers it as the owner says. A failure to reach
    /// the admin side is said in one line: the chat goes on, and the command to run stays
    /// on the screen above.
    /// A Ctrl-C that came as a signal while the card was fetched or drawn (the turn is
    /// then cancelled already, and its call withdrawn) ends the card too: `interrupt` says so.
    pub fn offer(
        &self,
        approval: &str,
        interrupt: &Interrupt,
        out: &mut dyn Write,
    ) -> Result<(), Error> {
        let cards = match listing(self.config) {
            Ok(cards) => cards,
            Err(e) => {
                let first = e.to_string();
                let first = first.lines().next().unwrap_or_default();
                writeln!(out, "  [not answerable here: {}]", line(first)).map_err(Error::Output)?;
                return Ok(());
            }
        };
        // Only the id from the stream is used: everything shown is brokerd's.
        let Some(c) = cards.iter().find(|c| c.approval == approval) else {
            writeln!(out, "  [approval {} is no longer waiting]", line(approval))
                .map_err(Error::Output)?;
            return Ok(());
        };
        write!(
            out,
            "{}  answer: [a] approve  [d] deny  [l] later (then `{}approve {}`) ",
            card(c),
            self.bxctl,
            line(&c.approval)
        )
        .map_err(Error::Output)?;
        out.flush().map_err(Error::Output)?;
        let key = read_key(&|| interrupt.is_cancelled())?;
        let verdict = match key {
            Key::Interrupt if interrupt.is_cancelled() => {
                writeln!(out, "\n  [interrupted]").map_err(Error::Output)?;
                return Ok(());
            }
            Key::Interrupt => {
                // As anywhere in a turn, the SIGINT cancels it: the call is withdrawn.
                writeln!(out, "\n  [interrupted]").map_err(Error::Output)?;
                out.flush().map_err(Error::Output)?;
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT);
                return Ok(());
            }
            Key::Later => {
                writeln!(out, "\n  [later: the call waits until {}]", c.expires)
                    .map_err(Error::Output)?;
                return Ok(());
            }
            Key::Answer(v) => v,
        };
        let word = match verdict {
            Verdict::Approve => "approve",
            Verdict::Deny => "deny",
        };
        writeln!(out, "\n  {word} {}", line(&c.approval)).map_err(Error::Output)?;
        out.flush().map_err(Error::Output)?;
        let outcome = send(self.config, &c.approval, c.binding, verdict)?;
        writeln!(out, "  [{}]", outcome_line(&outcome, verdict)).map_err(Error::Output)?;
        Ok(())
    }
}

/// The key a byte stands for, if any: Enter, a space or any other byte is none.
pub fn key(byte: u8) -> Option<Key> {
    match byte {
        b'a' | b'A' => Some(Key::Answer(Verdict::Approve)),
        b'd' | b'D' => Some(Key::Answer(Verdict::Deny)),
        b'l' | b'L' => Some(Key::Later),
        0x03 => Some(Key::Interrupt),
        _ => None,
    }
}

/// Discards what was typed before now, then reads keys one at a time, unechoed, until
/// one answers or `cancelled` says the turn was cancelled by a signal meanwhile
/// (`Key::Interrupt`). The end of input is "later".
fn read_key(cancelled: &dyn Fn() -> bool) -> Result<Key, Error> {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let tty = |e: nix::Error| Error::Output(std::io::Error::from(e));
    let saved = termios::tcgetattr(fd).map_err(tty)?;
    let mut raw = saved.clone();
    // ISIG off too: Ctrl-C is read here and raised once the terminal is restored.
    raw.local_flags &= !(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG);
    raw.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    raw.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
    // Everything typed before the card was drawn goes, so none of it can answer: the flush
    // and the change are one step (TCSAFLUSH), so a Ctrl-C is either a signal before it
    // (ISIG still on) or a byte read after it, never discarded between the two.
    let changed = termios::tcsetattr(fd, SetArg::TCSAFLUSH, &raw).map_err(tty);
    let key = changed.and_then(|()| {
        loop {
            if cancelled() {
                break Ok(Key::Interrupt);
            }
            // Woken now and then to see whether a signal cancelled the turn meanwhile.
            let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(200u16)) {
                Ok(0) | Err(nix::Error::EINTR) => continue,
                Ok(_) => {}
                Err(e) => break Err(tty(e)),
            }
            let mut byte = [0u8; 1];
            match nix::unistd::read(fd, &mut byte) {
                Ok(0) => break Ok(Key::Later),
                Ok(_) => {
                    if let Some(k) = key(byte[0]) {
                        break Ok(k);
                    }
                }
                Err(nix::Error::EINTR) => {}
                Err(e) => break Err(tty(e)),
            }
        }
    });
    // The terminal as rustyline left it, whatever happened.
    let restored = termios::tcsetattr(fd, SetArg::TCSANOW, &saved).map_err(tty);
    let key = key?;
    restored?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_three_keys_answer() {
        assert_eq!(key(b'a'), Some(Key::Answer(Verdict::Approve)));
        assert_eq!(key(b'D'), Some(Key::Answer(Verdict::Deny)));
        assert_eq!(key(b'l'), Some(Key::Later));
        assert_eq!(key(0x03), Some(Key::Interrupt));
        for b in [b'\r', b'\n', b' ', b'y', 0x04, 0xff] {
            assert_eq!(key(b), None, "{b:#x}");
        }
    }
}
