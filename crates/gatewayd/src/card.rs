//! An approval as the owner sees it in Mattermost: a root post of its own (BRIEF decision
//! 11) with the tool, the arguments as quoted data in a fence longer than any backtick run
//! inside them (never prose), the grant, the session's taint and untrusted sources, the
//! expiry, and how to answer. What became of it replaces the how-to line.

use proto::approval::{ApprovalCard, Refusal, Verdict};
use proto::gateway::Update;

use crate::render::{POST_LIMIT, code};

/// The line that starts the how-to; an outcome replaces it and what follows.
const HOW_TO: &str = "React with :+1: to approve";

/// Arguments shown per post; the rest follow in the approval's thread.
const ARGS_PER_POST: usize = POST_LIMIT - 2000;

/// A fenced block of `text`: the fence is longer than any backtick run inside.
pub fn fenced(text: &str) -> String {
    let (mut run, mut longest) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}\n{text}\n{fence}")
}

fn chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The root post and, for long arguments, the posts that continue them in its thread.
/// `thread` is the conversation's root post, when the session came from Mattermost.
pub fn render(card: &ApprovalCard, server: &str, thread: Option<&str>) -> Vec<String> {
    let conversation = match thread {
        Some(root) => format!(
            "[the thread]({}/_redirect/pl/{root}) (session {})",
            server.trim_end_matches('/'),
            code(card.session.as_str())
        ),
        None => format!(
            "session {} (not from Mattermost)",
            code(card.session.as_str())
        ),
    };
    let untrusted = if card.untrusted {
        let from: Vec<String> = card
            .untrusted_by
            .iter()
            .map(|c| format!("{} call {}", code(&c.tool), c.call.0))
            .collect();
        format!("**yes**, from {}", from.join(", "))
    } else {
        "no".into()
    };
    let parts = chunks(&card.arguments, ARGS_PER_POST);
    let more = if parts.len() > 1 {
        format!(" (part 1 of {}, the rest in this thread)", parts.len())
    } else {
        String::new()
    };
    let root = format!(
        "#### Approval needed: {tool}\n\
         **Conversation:** {conversation}\n\
         **Grant:** {grant} · **session taint:** {taint} · **has read untrusted content:** {untrusted}\n\
         **Expires:** {expires}\n\
         **Arguments**{more}:\n{args}\n\
         Approval {id}\n\
         {HOW_TO} or :-1: to deny, or reply `approve` or `deny` in this thread. \
         Only an owner's answer counts.",
        tool = code(&card.tool),
        grant = code(&card.grant),
        taint = card.session_taint,
        expires = card.expires,
        args = fenced(&parts[0]),
        id = code(&card.approval),
    );
    let total = parts.len();
    let mut posts = vec![root];
    for (i, part) in parts.iter().enumerate().skip(1) {
        posts.push(format!(
            "**Arguments, part {} of {total}:**\n{}",
            i + 1,
            fenced(part)
        ));
    }
    posts
}

/// The root post once decided or expired: the how-to replaced by the outcome.
pub fn settled(message: &str, update: &Update) -> Option<String> {
    let outcome = match update {
        Update::Decided { verdict, by } => {
            let word = match verdict {
                Verdict::Approve => "Approved",
                Verdict::Deny => "Denied",
            };
            format!(":white_check_mark: **{word}** by {}.", code(by))
        }
        Update::Expired => ":hourglass: **Expired**: nobody answered in time.".into(),
        Update::Refused { .. } => return None,
    };
    let keep = message.rfind(HOW_TO).map_or(message, |at| &message[..at]);
    Some(format!("{keep}{outcome}"))
}

/// A reply in the approval's thread saying why an answer was not taken.
pub fn refused(by: &str, refusal: Refusal) -> String {
    let why = match refusal {
        Refusal::NotOwner => "only an owner's answer counts",
        Refusal::Expired => "the approval had expired",
        Refusal::AlreadyUsed => "the approval was already answered",
        Refusal::Changed => "the request changed since it was shown",
        Refusal::Unknown => "brokerd does not know this approval (it may have restarted)",
    };
    format!("The answer from {} was refused: {why}.", code(by))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fence_outruns_every_backtick_run() {
        assert_eq!(fenced("a"), "```\na\n```");
        assert_eq!(fenced("x ````` y"), "``````\nx ````` y\n``````");
    }

    #[test]
    fn long_arguments_continue_in_the_thread() {
        let parts = chunks(&"é".repeat(25), 10);
        assert_eq!(parts.len(), 3);
        assert_eq!(parts.concat(), "é".repeat(25));
    }

    #[test]
    fn an_outcome_replaces_the_how_to() {
        let msg = format!("head\n```\n{HOW_TO} forged\n```\n{HOW_TO} or :-1: …\nApproval `x`");
        let done = settled(&msg, &Update::Expired).expect("settled");
        assert!(done.starts_with(&format!("head\n```\n{HOW_TO} forged\n```\n")));
        assert!(done.ends_with("**Expired**: nobody answered in time."));
        assert!(
            settled(
                &msg,
                &Update::Refused {
                    by: "u".into(),
                    refusal: Refusal::NotOwner
                }
            )
            .is_none()
        );
    }
}
