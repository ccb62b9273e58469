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
    heard: Mutex<VecDeque<ApprovalAnswer>>,
    ring: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The verdict an emoji stands for: thumbs and ticks approve, thumbs down and crosses deny,
/// in every skin tone; any other emoji is no answer.
pub fn emoji_verdict(name: &str) -> Option<Verdict> {
    let base = name.split("_skin_tone").next().unwrap_or(name);
    let base = [
        "_light",
        "_medium_light",
        "_medium",
        "_medium_dark",
        "_dark",
    ]
    .iter()
    .find_map(|tone| base.strip_suffix(tone))
    .unwrap_or(base);
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
        "approve" | "approved" => Some(Verdict::Approve),
        "deny" | "denied" => Some(Verdict::Deny),
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
            heard: Mutex::new(VecDeque::new()),
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
        for more in &posts[1..] {
            self.client
                .create(&self.channel, &root, more)
                .map_err(|e| e.to_string())?;
        }
        let mut s = lock(&self.store);
        s.remember_approval(
            &card.approval,
            Asked {
                post: root.clone(),
                binding: card.binding,
                posted: now,
                done: false,
                heard: VecDeque::new(),
            },
        );
        Self::save(&s);
        Ok(root)
    }

    /// Shows what became of an answer (a reply in the thread) or of the approval (the root
    /// post edited). An approval this gatewayd never posted has nothing to show.
    pub fn update(&self, u: &ApprovalUpdate) -> Result<(), String> {
        let Some(asked) = lock(&self.store).saved.approvals.get(&u.approval).cloned() else {
            return Ok(());
        };
        if let Update::Refused { by, refusal } = &u.update {
            return self
                .client
                .create(&self.channel, &asked.post, &card::refused(by, *refusal))
                .map(drop)
                .map_err(|e| e.to_string());
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

    /// The answers heard so far, waiting up to `wait` for the first.
    pub fn wait(&self, wait: Duration) -> Vec<ApprovalAnswer> {
        let heard = lock(&self.heard);
        let (mut heard, _) = self
            .ring
            .wait_timeout_while(heard, wait, |h| h.is_empty())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = heard.len().min(MAX_HEARD);
        heard.drain(..n).collect()
    }

    fn queue(&self, answer: ApprovalAnswer) {
        let mut heard = lock(&self.heard);
        if heard.len() >= MAX_QUEUED
            && let Some(old) = heard.pop_front()
        {
            log::warn(format_args!(
                "dropped an unheard answer to approval {} by {:?}: {MAX_QUEUED} wait",
                old.approval, old.by
            ));
        }
        heard.push_back(answer);
        self.ring.notify_all();
    }

    /// A reaction: an answer when it is on an approval post and means a verdict.
    pub fn reaction(&self, r: &Reaction) {
        let Some(verdict) = emoji_verdict(&r.emoji_name) else {
            return;
        };
        let mut s = lock(&self.store);
        let Some((approval, asked)) = s.approval_of(&r.post_id) else {
            return;
        };
        let (approval, binding) = (approval.clone(), asked.binding);
        if !s.hear(&approval, format!("{} {}", r.user_id, r.emoji_name)) {
            return;
        }
        Self::save(&s);
        drop(s);
        self.queue(ApprovalAnswer {
            approval,
            binding,
            verdict,
            post: Some(r.post_id.clone()),
            by: Some(r.user_id.clone()),
        });
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
            self.queue(ApprovalAnswer {
                approval,
                binding,
                verdict,
                // The approval's post, as for a reaction (the reply is in its thread).
                post: Some(post.root_id.clone()),
                by: Some(post.user_id.clone()),
            });
        }
        true
    }

    /// After a reconnect: the reactions made on open approval posts meanwhile.
    pub fn catch_up(&self) -> Result<(), String> {
        let open: Vec<String> = lock(&self.store)
            .saved
            .approvals
            .values()
            .filter(|a| !a.done)
            .map(|a| a.post.clone())
            .collect();
        for post in open {
            for r in self.client.reactions(&post).map_err(|e| e.to_string())? {
                self.reaction(&r);
            }
        }
        Ok(())
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
            ("thumbsup_skin_tone_3", Some(Verdict::Approve)),
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
    }
}
