//! An approval as the owner sees it in Mattermost: a root post of its own (BRIEF decision
//! 11) with the tool, the arguments as quoted data in a fence longer than any backtick run
//! inside them (never prose), the grant, the session's taint and untrusted sources, the
//! expiry, what "allow for this session" would allow when the card offers it, and how to
//! answer. What became of it replaces the how-to line.

use proto::allowance::{Scope, SessionOffer};
use proto::approval::{ApprovalCard, CallRef, Refusal, Shows, Verdict, WriteCard};
use proto::gateway::Update;

use crate::render::{POST_LIMIT, code, longest_run, permalink};

/// The line that starts the how-to; an outcome replaces it and what follows.
pub const HOW_TO: &str = "React with :+1: to approve";

/// The reaction that answers "approve for this session" (Mattermost's system emoji
/// `repeat`, U+1F501), on a card that offers it.
pub const SESSION_EMOJI: &str = "repeat";

/// Characters kept free in every post for the words around the arguments.
const ROOM: usize = 100;
/// The most the words before and after the arguments on the root post take (names are
/// shortened to fit). Fixed, so that the arguments split the same way on every try.
const HEAD: usize = 4000;
/// The longest name (tool, grant, session) shown on a card.
const NAME: usize = 100;
/// Untrusted sources named on a card at most, and the characters they take at most; the
/// rest are counted.
const MAX_SOURCES: usize = 20;
const SOURCES: usize = 2400;

/// A fenced block of `text`: the fence is longer than any backtick run inside.
pub fn fenced(text: &str) -> String {
    let fence = "`".repeat(fence_len(longest_run(text)));
    format!("{fence}\n{text}\n{fence}")
}

fn fence_len(longest_run: usize) -> usize {
    (longest_run + 1).max(3)
}

/// Splits `text` into parts that fit, fenced, in `first` characters (the first part) and
/// `rest` characters (each later one). Nothing is cut away.
fn fenced_parts(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut part, mut n, mut run, mut longest, mut budget) = (String::new(), 0, 0, 0, first);
    for c in text.chars() {
        let next_run = if c == '`' { run + 1 } else { 0 };
        let size = n + 1 + 2 * fence_len(longest.max(next_run)) + 2;
        if n > 0 && size > budget {
            parts.push(std::mem::take(&mut part));
            (n, longest, budget) = (0, 0, rest);
            run = usize::from(c == '`');
        } else {
            run = next_run;
        }
        longest = longest.max(run);
        part.push(c);
        n += 1;
    }
    parts.push(part);
    parts
}

/// The root post and, for long arguments, the posts that continue them in its thread, each
/// within Mattermost's post limit. `thread` is the conversation's root post, when the
/// session came from Mattermost.
pub fn render(card: &ApprovalCard, server: &str, thread: Option<&str>) -> Vec<String> {
    let conversation = match thread {
        Some(root) => format!(
            "[the thread]({}) (session {})",
            permalink(server, root),
            code(card.session.as_str())
        ),
        None => format!(
            "session {} (not from Mattermost)",
            code(card.session.as_str())
        ),
    };
    let untrusted = if card.untrusted {
        format!("**yes**, from {}", sources(&card.untrusted_by))
    } else {
        "no".into()
    };
    let head = format!(
        "#### Approval needed: {tool}\n\
         **Conversation:** {conversation}\n\
         **Grant:** {grant} · **taint:** {taint} · **has read untrusted content:** {untrusted}\n\
         {write}**Expires:** {expires}\n{session}",
        tool = code(&short(&card.tool)),
        grant = code(&short(&card.grant)),
        taint = card.session_taint,
        write = card.write.as_ref().map(write_line).unwrap_or_default(),
        expires = card.expires,
        session = card
            .session_offer
            .as_ref()
            .map_or_else(String::new, |o| offer(card, o)),
    );
    let how = if card.session_offer.is_some() {
        format!(
            "{HOW_TO}, :{SESSION_EMOJI}: to approve for this session, or :-1: to deny; or \
             reply `approve`, `session` or `deny` in this thread."
        )
    } else {
        format!("{HOW_TO} or :-1: to deny, or reply `approve` or `deny` in this thread.")
    };
    let foot = format!(
        "\nApproval {id}\n{how} Only an owner's answer counts.",
        id = code(&card.approval),
    );
    let parts = fenced_parts(
        &inert::line(&card.arguments),
        POST_LIMIT - HEAD,
        POST_LIMIT - ROOM,
    );
    let total = parts.len();
    let more = if total > 1 {
        format!(" (part 1 of {total}, the rest in this thread)")
    } else {
        String::new()
    };
    let mut posts = vec![format!(
        "{head}**Arguments**{more}:\n{}{foot}",
        fenced(&parts[0])
    )];
    for (i, part) in parts.iter().enumerate().skip(1) {
        posts.push(format!(
            "**Arguments, part {} of {total}:**\n{}",
            i + 1,
            fenced(part)
        ));
    }
    // What a write leaves, as brokerd computed it, in the thread before anyone answers.
    if let Some(w) = &card.write {
        let what = match w.shows {
            Shows::Diff => "The change (unified diff)",
            Shows::Content => "The new file",
            Shows::Appended => "The text appended",
        };
        let shown = fenced_parts(&inert::block(&w.text), POST_LIMIT - ROOM, POST_LIMIT - ROOM);
        let n = shown.len();
        let cut = if w.truncated {
            format!(", its first {} bytes", w.text.len())
        } else {
            String::new()
        };
        for (i, part) in shown.iter().enumerate() {
            posts.push(format!(
                "**{what}{cut}, part {} of {n}:**\n{}",
                i + 1,
                fenced(part)
            ));
        }
    }
    posts
}

/// What "approve for this session" would allow, as the card offers it: the scope's value
/// as inline code (escaped, never a link).
fn offer(card: &ApprovalCard, o: &SessionOffer) -> String {
    let tool = code(&short(&card.tool));
    let what = match &o.scope {
        Scope::Path { path } => format!("{tool} at or under {}", code(path)),
        Scope::Host { host } => format!("{tool} to {}", code(host)),
        Scope::Note { name } => format!("{tool} of note {}", code(name)),
        Scope::Grant => format!("every {tool} call of grant {}", code(&short(&card.grant))),
    };
    let secs = o.lasts_secs;
    let lasts = match (secs / 3600, secs % 3600 / 60) {
        (0, 0) => format!("{secs} s"),
        (0, m) => format!("{m} min"),
        (h, 0) => format!("{h} h"),
        (h, m) => format!("{h} h {m} min"),
    };
    let label = format!(
        "{}{}",
        card.session_taint,
        if card.untrusted { ", untrusted" } else { "" }
    );
    format!("**For this session:** {what}, for {lasts}, while the label stays {label} or below\n")
}

/// A write's line on the root post: the file, what it replaces and what it leaves; the
/// change itself follows in the thread.
fn write_line(w: &WriteCard) -> String {
    let old = match (w.old_sha256, w.old_size) {
        (Some(h), Some(n)) => format!("{n} bytes, sha256 {}", code(&h.to_hex())),
        _ => "a new file".to_owned(),
    };
    format!(
        "**Writes:** {} · **over:** {old} · **leaves:** {} bytes, sha256 {} · the change is \
         in this thread\n",
        code(&w.path),
        w.new_size,
        code(&w.new_sha256.to_hex())
    )
}

/// The calls that made the session untrusted, each with what it read (a path or a URL,
/// as inline code: escaped, never a link, never previewed), within [`SOURCES`] characters.
fn sources(calls: &[CallRef]) -> String {
    let mut shown: Vec<String> = Vec::new();
    let mut used = 0;
    for c in calls.iter().take(MAX_SOURCES) {
        let mut one = format!("{} call {}", code(&short(&c.tool)), c.call.0);
        if let Some(session) = &c.session {
            one.push_str(&format!(" of session {}", code(session.as_str())));
        }
        if let Some(read) = &c.read {
            one.push_str(&format!(" (read {})", code(read)));
        }
        if used + one.chars().count() > SOURCES {
            break;
        }
        used += one.chars().count() + 2;
        shown.push(one);
    }
    if calls.len() > shown.len() {
        shown.push(format!("{} more", calls.len() - shown.len()));
    }
    shown.join(", ")
}

/// `name`, at most [`NAME`] characters.
fn short(name: &str) -> String {
    if name.chars().count() <= NAME {
        name.to_owned()
    } else {
        name.chars().take(NAME).collect::<String>() + "…"
    }
}

/// The root post once decided or expired: everything after the approval's id line (the
/// how-to, or an earlier outcome) replaced by the outcome. `None` for a refused answer,
/// or a message that is not this approval's card.
pub fn settled(message: &str, approval: &str, update: &Update) -> Option<String> {
    let outcome = match update {
        Update::Decided { verdict, by } => {
            let word = match verdict {
                Verdict::Approve => "Approved",
                Verdict::AllowSession => "Approved for this session",
                Verdict::Deny => "Denied",
            };
            let mark = match verdict {
                Verdict::Approve => ":white_check_mark:",
                Verdict::AllowSession => ":repeat:",
                Verdict::Deny => ":no_entry:",
            };
            format!("{mark} **{word}** by {}.", code(by))
        }
        Update::Expired => ":hourglass: **Expired**: nobody answered in time.".into(),
        Update::Stopped => ":no_entry: **Denied**: brokerd stopped before anyone answered.".into(),
        Update::Refused { .. } => return None,
    };
    // The id is 128 random bits, unknown to the model before the card existed: its last
    // occurrence is the card's own line, after the arguments.
    let line = format!("\nApproval {}\n", code(approval));
    let at = message.rfind(&line)? + line.len();
    Some(format!("{}{outcome}", &message[..at]))
}

/// A reply in the approval's thread saying why an answer was not taken.
pub fn refused(by: &str, refusal: Refusal) -> String {
    let why = match refusal {
        Refusal::NotOwner => "only an owner's answer counts",
        Refusal::Expired => "the approval had expired",
        Refusal::AlreadyUsed => "the approval was already answered",
        Refusal::Changed => "the request changed since it was shown",
        Refusal::Unknown => "brokerd does not know this approval (it may have restarted)",
        Refusal::NotOffered => {
            "this approval cannot be approved for the session (its grant asks every time): \
             approve or deny it"
        }
        Refusal::AllowancesFull => {
            "brokerd holds as many session allowances as it keeps: approve once, or revoke one \
             with `bxctl approvals revoke`"
        }
    };
    format!("The answer from {} was refused: {why}.", code(by))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_arguments_continue_in_the_thread_each_part_fitting_fenced() {
        for text in [
            "é".repeat(25),
            "`".repeat(30),
            format!("a{}b``c", "`".repeat(9)),
        ] {
            let parts = fenced_parts(&text, 12, 16);
            assert_eq!(parts.concat(), text);
            assert!(fenced(&parts[0]).chars().count() <= 12, "{parts:?}");
            for p in &parts[1..] {
                assert!(fenced(p).chars().count() <= 16, "{parts:?}");
            }
        }
    }
}
