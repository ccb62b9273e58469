//! A failed `bxctl verify` told to the owner (issue 27 point 1, docs/verify.md): bxctl hands
//! brokerd its `FAIL` lines on the admin side (`verify_alert`, answered `verify_alerted`);
//! brokerd audits them and, with the gateway on, hands them to gatewayd over the link
//! (`verify_post`, answered `verify_posted`), which posts them in the owner's channel, inert,
//! as a post with nothing to answer (docs/decisions.md V18).
//!
//! The lines are an admin peer's words, bounded here: at most [`MAX_LINES`] lines, each at
//! most [`MAX_LINE_BYTES`] bytes and one line. Both ends check ([`check`]).

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// The most lines one alert carries.
pub const MAX_LINES: usize = 20;

/// The longest line, in bytes.
pub const MAX_LINE_BYTES: usize = 500;

/// The least time between two alerts brokerd forwards (from the last one taken or posted,
/// whichever is later); one within it is held back.
pub const INTERVAL: std::time::Duration = std::time::Duration::from_secs(600);

/// How long brokerd keeps trying to post an alert it took (the link down, or gatewayd
/// unable to post): one older is dropped with a warning in brokerd's journal. At most one
/// waits at a time; another meanwhile is held back.
pub const MAX_WAIT: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// bxctl's `FAIL` lines, as it printed them (admin side).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyAlert {
    pub lines: Vec<String>,
}

/// What brokerd did with an alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyAlerted {
    /// The audit line's sequence number.
    pub seq: u64,
    pub outcome: AlertOutcome,
    /// When the next alert may be forwarded (`held` because one was taken or posted less
    /// than [`INTERVAL`] ago).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<Timestamp>,
    /// The audit sequence number of the alert that still waits to be posted (`held`
    /// because of it: at most one waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<u64>,
}

/// Whether the alert goes to the owner's channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertOutcome {
    /// Handed to the link to gatewayd, which is up: posted now, or tried again while
    /// gatewayd cannot post it, for up to [`MAX_WAIT`].
    Forwarded,
    /// Handed to the link, which is down: posted once gatewayd is back, while brokerd runs
    /// and for up to [`MAX_WAIT`].
    Queued,
    /// Not posted: brokerd took or posted one less than [`INTERVAL`] ago, or one it took
    /// still waits to be posted.
    Held,
    /// Not posted: the configuration has no `[gateway]`.
    NoGateway,
}

/// An alert for gatewayd to post: the lines, who handed them to brokerd (the peer as the
/// kernel names it) and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyPost {
    pub time: Timestamp,
    pub by: String,
    pub lines: Vec<String>,
}

/// The alert's post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyPosted {
    pub post: String,
}

/// Why an alert's lines were refused. Each text is whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlertError {
    #[error("an alert has at least one line")]
    NoLine,
    #[error("{lines} lines: an alert has at most {MAX_LINES}")]
    TooMany { lines: usize },
    #[error("line {line} has {bytes} bytes: a line has at most {MAX_LINE_BYTES}")]
    TooLong { line: usize, bytes: usize },
    #[error("line {line} breaks the line: each is one line")]
    Breaks { line: usize },
}

/// Whether `lines` are within the bounds (`line` counts from 1).
pub fn check(lines: &[String]) -> Result<(), AlertError> {
    if lines.is_empty() {
        return Err(AlertError::NoLine);
    }
    if lines.len() > MAX_LINES {
        return Err(AlertError::TooMany { lines: lines.len() });
    }
    for (i, l) in lines.iter().enumerate() {
        if l.len() > MAX_LINE_BYTES {
            return Err(AlertError::TooLong {
                line: i + 1,
                bytes: l.len(),
            });
        }
        if l.chars().any(|c| {
            matches!(
                c,
                '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
            )
        }) {
            return Err(AlertError::Breaks { line: i + 1 });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alert_is_one_to_max_lines_each_one_line_of_at_most_max_bytes() {
        let line = |s: &str| s.to_owned();
        assert_eq!(check(&[]), Err(AlertError::NoLine));
        assert_eq!(check(&vec![line("x"); MAX_LINES]), Ok(()));
        assert_eq!(
            check(&vec![line("x"); MAX_LINES + 1]),
            Err(AlertError::TooMany {
                lines: MAX_LINES + 1
            })
        );
        assert_eq!(check(&["é".repeat(MAX_LINE_BYTES / 2)]), Ok(()));
        assert_eq!(
            check(&[line("ok"), "x".repeat(MAX_LINE_BYTES + 1)]),
            Err(AlertError::TooLong {
                line: 2,
                bytes: MAX_LINE_BYTES + 1
            })
        );
        for brk in ["\n", "\r", "\u{2028}", "\u{85}"] {
            assert_eq!(
                check(&[format!("FAIL a{brk}ok    fake line")]),
                Err(AlertError::Breaks { line: 1 }),
                "{brk:?}"
            );
        }
    }
}
