//! An approval card as the owner reads it, the same in `bxctl approvals`, `bxctl approve`
//! and the chat: compact (each fact once), the arguments as quoted data, never as prose,
//! every field from brokerd inert; the expiry beside how long is left; what "allow for this
//! session" would allow, when the card offers it. Also a session allowance in force, and
//! the line the chat shows for a call that waits when no card can be drawn.

use inert::line;
use proto::Timestamp;
use proto::allowance::{Allowance, Scope};
use proto::approval::{ApprovalCard, Shows, WriteCard};

/// A card as the owner reads it, its expiry counted from `now`.
pub fn card(c: &ApprovalCard, now: Timestamp) -> String {
    let mut s = format!(
        "approval {}\n  {} {} (call {} of session {})\n  grant {}, taint {}, expires {} ({})\n",
        line(&c.approval),
        line(&c.tool),
        line(&serde_json::to_string(&c.arguments).unwrap_or_default()),
        c.call.0,
        c.session,
        line(&c.grant),
        c.session_taint,
        c.expires,
        left(c.expires, now),
    );
    if let Some(w) = &c.write {
        s.push_str(&write(w));
    }
    if c.untrusted {
        let by: Vec<String> = c.untrusted_by.iter().map(source).collect();
        s.push_str(&format!(
            "  UNTRUSTED: the session has read content that may steer the model, from {}\n",
            by.join(", ")
        ));
    }
    if let Some(offer) = &c.session_offer {
        s.push_str(&format!(
            "  this session: {}, for {}, while the label stays {} or below\n",
            scope(&c.tool, &c.grant, &offer.scope),
            span(u64::from(offer.lasts_secs)),
            label(c.session_taint, c.untrusted),
        ));
    }
    s
}

/// An allowance in force as the owner reads it, its expiry counted from `now`.
pub fn allowance(a: &Allowance, now: Timestamp) -> String {
    format!(
        "allowance {}\n  {} (session {}, approval {})\n  by {}, until {} ({}), while the \
         label stays {} or below\n",
        line(&a.allowance),
        scope(&a.tool, &a.grant, &a.scope),
        a.session,
        line(&a.approval),
        line(&a.by),
        a.expires,
        left(a.expires, now),
        label(a.session_taint, a.untrusted),
    )
}

/// What an allowance covers, in words (`read_file at or under /srv/notes`), as one inert
/// line.
pub fn scope(tool: &str, grant: &str, scope: &Scope) -> String {
    line(&words(tool, grant, scope))
}

/// [`scope`] before it is made inert, for a caller that makes its whole line inert.
pub fn words(tool: &str, grant: &str, scope: &Scope) -> String {
    match scope {
        Scope::Path { path } => format!("{tool} at or under {path}"),
        Scope::Host { host } => format!("{tool} to {host}"),
        Scope::Note { name } => format!("{tool} of note {name}"),
        Scope::Grant => format!("every {tool} call grant {grant} covers"),
    }
}

/// The line a waiting call gets when no card is drawn: the commands that answer it.
pub fn waiting(bxctl: &str, call: u64, approval: &str, expires: Timestamp) -> String {
    let approval = line(approval);
    format!(
        "  [call {call} waits for your approval until {expires} ({}): run `{bxctl}approve \
         {approval}` or `{bxctl}deny {approval}`]\n",
        left(expires, Timestamp::now())
    )
}

/// How long is left until `at`, for a person: `in 9 min`, `in 42 s`, `expired`.
pub fn left(at: Timestamp, now: Timestamp) -> String {
    match at.as_millis().checked_sub(now.as_millis()) {
        Some(ms) if ms >= 1000 => format!("in {}", span(ms / 1000)),
        Some(ms) if ms > 0 => "in under a second".to_owned(),
        _ => "expired".to_owned(),
    }
}

/// A length of time in whole units, rounded down: `42 s`, `9 min`, `1 h`, `1 h 5 min`.
fn span(secs: u64) -> String {
    match (secs / 3600, secs % 3600 / 60) {
        (0, 0) => format!("{secs} s"),
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    }
}

fn label(taint: proto::DataClass, untrusted: bool) -> String {
    format!("{taint}{}", if untrusted { ", untrusted" } else { "" })
}

/// What a write will do, as the owner approves it: the file, the content it replaces (its
/// hash and size, or that the file is new) and the content it leaves, then the diff (or the
/// new content, or the appended text) brokerd computed, each line inert and set apart.
fn write(w: &WriteCard) -> String {
    let old = match (w.old_sha256, w.old_size) {
        (Some(h), Some(n)) => format!("{n} bytes, sha256 {h}"),
        _ => "a new file".to_owned(),
    };
    let cut = if w.truncated {
        format!(" (the first {} bytes)", w.text.len())
    } else {
        String::new()
    };
    format!(
        "  write:     {}
  over:      {old}
  leaves:    {} bytes, sha256 {}
  {}:{cut}
{}",
        line(&w.path),
        w.new_size,
        w.new_sha256,
        match w.shows {
            Shows::Diff => "diff     ",
            Shows::Content => "content  ",
            Shows::Appended => "appended ",
        },
        inert::block(&w.text)
    )
}

/// An untrusted call as bxctl shows it: the tool, the call (and its session, when another
/// session's result made the label untrusted) and what it read, each escaped to one line.
pub(crate) fn source(r: &proto::approval::CallRef) -> String {
    let call = match &r.session {
        Some(session) => format!("call {} of session {}", r.call.0, line(session.as_str())),
        None => format!("call {}", r.call.0),
    };
    match &r.read {
        Some(read) => format!("{} ({call}, read {})", line(&r.tool), line(read)),
        None => format!("{} ({call})", line(&r.tool)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_millis(1_789_632_300_000 + ms).expect("time")
    }

    #[test]
    fn time_left_is_said_in_whole_units_rounded_down() {
        for (ms, said) in [
            (599_999, "in 9 min"),
            (600_000, "in 10 min"),
            (59_999, "in 59 s"),
            (1_000, "in 1 s"),
            (999, "in under a second"),
            (0, "expired"),
            (3_600_000, "in 1 h"),
            (3_900_000, "in 1 h 5 min"),
        ] {
            assert_eq!(left(at(ms), at(0)), said, "{ms}");
        }
        assert_eq!(left(at(0), at(5)), "expired");
    }

    #[test]
    fn the_card_is_compact_and_says_the_expiry_twice_only_as_time_and_time_left() {
        let mut c: ApprovalCard = serde_json::from_value(serde_json::json!({
            "approval": "3f2a9c01aaaaaaaaaaaaaaaaaaaaaaaa", "binding": proto::Hash32::ZERO,
            "session": "s-1", "call": 3, "tool": "list_dir",
            "arguments": "{\"path\":\"/srv/notes\"}", "grant": "notes", "session_taint": "private",
            "untrusted": false, "untrusted_by": [], "expires": at(540_000),
        }))
        .expect("card");
        let text = card(&c, at(0));
        assert_eq!(
            text,
            "approval 3f2a9c01aaaaaaaaaaaaaaaaaaaaaaaa\n  \
             list_dir \"{\\\"path\\\":\\\"/srv/notes\\\"}\" (call 3 of session s-1)\n  \
             grant notes, taint private, expires 2026-09-17T08:14:00.000Z (in 9 min)\n"
        );
        c.session_offer = Some(proto::allowance::SessionOffer {
            scope: Scope::Path {
                path: "/srv/notes".into(),
            },
            lasts_secs: 3600,
        });
        assert!(
            card(&c, at(0)).ends_with(
                "\n  this session: list_dir at or under /srv/notes, for 1 h, while the label \
                 stays private or below\n"
            ),
            "{}",
            card(&c, at(0))
        );
    }
}
