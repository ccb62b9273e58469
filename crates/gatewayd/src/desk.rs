//! The approval desk: gatewayd's side of gateway.sock. brokerd's cards become root posts;
//! reactions on them and `approve`/`deny` replies in their threads, from anyone, are queued
//! as answers for brokerd, which alone decides whether they count. They never reach loopd.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use daemon::log;
use proto::approval::{ApprovalAnswer, ApprovalCard, Verdict};
use proto::gateway::{ApprovalUpdate, MAX_HEARD, Update};

use crate::card;
use crate::mm::{Client, Post, Reaction};
use crate::state::{Asked, Store};

/// Answers queued for brokerd at most; beyond it the oldest are dropped (and logged).
const MAX_QUEUED: usize = 1024;

#[derive(Debug)]
pub struct Desk {
    pub client: Client,
    pub server: String,
    pub channel: String,
    pub store: Arc<Mutex<Store>>,
    queue: Mutex<Queue>,
    ring: Condvar,
}

/// Answers waiting for brokerd's acknowledgement, numbered.
#[derive(Debug, Default)]
struct Queue {
    /// The number the next answer gets (numbers start at 1).
    next: u64,
    items: VecDeque<Heard>,
}

#[derive(Debug)]
struct Heard {
    seq: u64,
    answer: ApprovalAnswer,
    /// The reaction (`user emoji`) to record as passed on once acknowledged.
    reaction: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The verdict an emoji stands for: thumbs and ticks approve, thumbs down and crosses deny,
/// thumbs in every skin tone; any other emoji is no answer. Exact system emoji names only
/// (a custom emoji cannot take a system emoji's name).
pub fn emoji_verdict(name: &str) -> Option<Verdict> {
    const TONES: [&str; 5] = ["light", "medium_light", "medium", "medium_dark", "dark"];
    let (base, tone) = match name.split_once('_') {
        Some((base, tone)) if matches!(base, "+1" | "thumbsup" | "-1" | "thumbsdown") => {
            (base, Some(tone))
        }
        _ => (name, None),
    };
    if let Some(tone) = tone
        && !TONES
            .iter()
            .any(|t| tone.strip_suffix("_skin_tone") == Some(t))
    {
        return None;
    }
    match base {
        "+1" | "thumbsup" | "white_check_mark" | "heavy_check_mark" => Some(Verdict::Approve),
        "-1" | "thumbsdown" | "x" | "no_entry" | "no_entry_sign" => Some(Verdict::Deny),
        _ => None,
    }
}

/// The verdict a reply stands for: exactly `approve` or `deny` (any case, trailing `.`/`!`).
pub fn reply_verdict(text: &str) -> Option<Verdict> {
    match text
        .trim()
        .trim_end_matches(['.', '!'])
        .to_lowercase()
        .as_str()
    {
        "approve" => Some(Verdict::Approve),
        "deny" => Some(Verdict::Deny),
        _ => None,
    }
}

impl Desk {
    pub fn new(client: Client, server: String, channel: String, store: Arc<Mutex<Store>>) -> Self {
        Self {
            client,
            server,
            channel,
            store,
            queue: Mutex::new(Queue {
                next: 1,
                items: VecDeque::new(),
            }),
            ring: Condvar::new(),
        }
    }

    fn save(store: &Store) {
        if let Err(e) = store.save() {
            log::error(format_args!("saving gatewayd's state: {e}"));
        }
    }

    /// Posts `card` as a root post (with its long arguments continued in its thread), or
    /// finds the post made for it before. Returns the root post's id.
    pub fn post(&self, card: &ApprovalCard, now: i64) -> Result<String, String> {
        let thread = {
            let s = lock(&self.store);
            if let Some(asked) = s.saved.approvals.get(&card.approval) {
                return Ok(asked.post.clone());
            }
            s.saved
                .threads
                .iter()
                .find(|(_, session)| *session == card.session.as_str())
                .map(|(root, _)| root.clone())
        };
        let posts = card::render(card, &self.server, thread.as_deref());
        let root = self
            .client
            .create(&self.channel, "", &posts[0])
            .map_err(|e| e.to_string())?;
        // Known at once: an answer on it from now on is an answer, never chat.
        let mut s = lock(&self.store);
        s.remember_approval(
            &card.approval,
            Asked {
                post: root.clone(),
                binding: card.binding,
                posted: now,
                expires: i64::try_from(card.expires.as_millis()).unwrap_or(i64::MAX),
                done: false,
                heard: VecDeque::new(),
                told: VecDeque::new(),
            },
        );
        Self::save(&s);
        drop(s);
        for more in &posts[1..] {
            if let Err(e) = self.client.create(&self.channel, &root, more) {
                // The owner must see the whole request: say it is incomplete.
                let _ = self.client.create(
                    &self.channel,
                    &root,
                    "**Part of the arguments could not be posted: do not approve.**",
                );
                return Err(e.to_string());
            }
        }
        Ok(root)
    }

    /// Shows what became of an answer (a reply in the thread) or of the approval (the root
    /// post edited). An approval this gatewayd never posted has nothing to show.
    pub fn update(&self, u: &ApprovalUpdate) -> Result<(), String> {
        let asked = {
            let mut s = lock(&self.store);
            let Some(asked) = s.saved.approvals.get(&u.approval).cloned() else {
                return Ok(());
            };
            if let Update::Refused { by, .. } = &u.update
                && !s.tell(&u.approval, by)
            {
                // Said once per user and post: a flood of refusals is not echoed.
                return Ok(());
            }
            Self::save(&s);
            asked
        };
        if let Update::Refused { by, refusal } = &u.update {
            return self
                .client
                .create(&self.channel, &asked.post, &card::refused(by, *refusal))
                .map(drop)
                .map_err(|e| e.to_string());
        }
        if asked.done {
            return Ok(());
        }
        let message = self
            .client
            .message(&asked.post)
            .map_err(|e| e.to_string())?;
        if let Some(text) = card::settled(&message, &u.update) {
            self.client
                .edit(&asked.post, &text)
                .map_err(|e| e.to_string())?;
        }
        let mut s = lock(&self.store);
        if let Some(a) = s.saved.approvals.get_mut(&u.approval) {
            a.done = true;
        }
        Self::save(&s);
        Ok(())
    }

    /// The answers not yet acknowledged, numbered from the first returned, waiting up to
    /// `wait` for one. Those numbered below `ack` were received: they are forgotten, and
    /// their reactions recorded as passed on.
    pub fn wait(&self, ack: u64, wait: Duration) -> (u64, Vec<ApprovalAnswer>) {
        let mut q = lock(&self.queue);
        let mut received = Vec::new();
        while q.items.front().is_some_and(|h| h.seq < ack) {
            if let Some(h) = q.items.pop_front()
                && let Some(key) = h.reaction
            {
                received.push((h.answer.approval, key));
            }
        }
        if !received.is_empty() {
            drop(q);
            let mut s = lock(&self.store);
            for (approval, key) in received {
                s.hear(&approval, key);
            }
            Self::save(&s);
            drop(s);
            q = lock(&self.queue);
        }
        let (q, _) = self
            .ring
            .wait_timeout_while(q, wait, |q| q.items.is_empty())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let first = q.items.front().map_or(q.next, |h| h.seq);
        let answers = q
            .items
            .iter()
            .take(MAX_HEARD)
            .map(|h| h.answer.clone())
            .collect();
        (first, answers)
    }

    fn queue(&self, answer: ApprovalAnswer, reaction: Option<String>) {
        let mut q = lock(&self.queue);
        if let Some(key) = &reaction
            && q.items
                .iter()
                .any(|h| h.answer.approval == answer.approval && h.reaction.as_ref() == Some(key))
        {
            return;
        }
        if q.items.len() >= MAX_QUEUED
            && let Some(old) = q.items.pop_front()
        {
            log::warn(format_args!(
                "dropped an unheard answer to approval {} by {:?}: {MAX_QUEUED} wait",
                old.answer.approval, old.answer.by
            ));
        }
        let seq = q.next;
        q.next += 1;
        q.items.push_back(Heard {
            seq,
            answer,
            reaction,
        });
        self.ring.notify_all();
    }

    /// A reaction: an answer when it is on an approval post and means a verdict.
    pub fn reaction(&self, r: &Reaction) {
        let Some(verdict) = emoji_verdict(&r.emoji_name) else {
            return;
        };
        let key = format!("{} {}", r.user_id, r.emoji_name);
        let s = lock(&self.store);
        let Some((approval, asked)) = s.approval_of(&r.post_id) else {
            return;
        };
        let (approval, binding) = (approval.clone(), asked.binding);
        if s.heard(&approval, &key) {
            return;
        }
        drop(s);
        let answer = ApprovalAnswer {
            approval,
            binding,
            verdict,
            post: Some(r.post_id.clone()),
            by: Some(r.user_id.clone()),
        };
        self.queue(answer, Some(key));
    }

    /// A post in an approval post's thread: an answer when it says `approve` or `deny`.
    /// Returns whether the post belongs to an approval (then it is never chat).
    pub fn reply(&self, post: &Post) -> bool {
        let found = lock(&self.store)
            .approval_of(&post.root_id)
            .map(|(id, a)| (id.clone(), a.binding));
        let Some((approval, binding)) = found else {
            return false;
        };
        if let Some(verdict) = reply_verdict(&post.message) {
            let answer = ApprovalAnswer {
                approval,
                binding,
                verdict,
                // The approval's post, as for a reaction (the reply is in its thread).
                post: Some(post.root_id.clone()),
                by: Some(post.user_id.clone()),
            };
            self.queue(answer, None);
        }
        true
    }

    /// After a reconnect: the reactions made meanwhile on approval posts still open. One
    /// post that cannot be read is skipped (and said), never the others.
    pub fn catch_up(&self, now: i64) {
        let open: Vec<String> = {
            let mut s = lock(&self.store);
            for a in s.saved.approvals.values_mut() {
                // Expired (or lost with a brokerd restart): answers now would be refused.
                a.done |= a.expires <= now;
            }
            s.saved
                .approvals
                .values()
                .filter(|a| !a.done)
                .map(|a| a.post.clone())
                .collect()
        };
        for post in open {
            match self.client.reactions(&post) {
                Ok(reactions) => reactions.iter().for_each(|r| self.reaction(r)),
                Err(e) => log::warn(format_args!("the reactions on {post}: {e}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumbs_and_words_are_verdicts() {
        for (emoji, verdict) in [
            ("+1", Some(Verdict::Approve)),
            ("thumbsup", Some(Verdict::Approve)),
            ("+1_medium_dark_skin_tone", Some(Verdict::Approve)),
            ("+1_medium_light_skin_tone", Some(Verdict::Approve)),
            ("thumbsdown_light_skin_tone", Some(Verdict::Deny)),
            ("thumbsup_skin_tone_3", None),
            ("thumbsup_light", None),
            ("x_dark", None),
            ("-1", Some(Verdict::Deny)),
            ("x", Some(Verdict::Deny)),
            ("smile", None),
            ("+10", None),
        ] {
            assert_eq!(emoji_verdict(emoji), verdict, "{emoji}");
        }
        assert_eq!(reply_verdict(" Approve! "), Some(Verdict::Approve));
        assert_eq!(reply_verdict("deny."), Some(Verdict::Deny));
        assert_eq!(reply_verdict("approve, but later"), None);
        assert_eq!(reply_verdict("approved"), None);
    }
}
