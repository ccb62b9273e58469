//! The approval desk: gatewayd's side of gateway.sock. brokerd's cards become root posts;
//! reactions on them and `approve`/`deny` replies in their threads, from anyone, are queued
//! as answers for brokerd, which alone decides whether they count. They never reach loopd.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use daemon::{lock, log};
use proto::alert::VerifyPost;
use proto::approval::{ApprovalAnswer, ApprovalCard};
use proto::gateway::{ApprovalUpdate, AuditAlert, MAX_HEARD, Update};

use crate::context::Context;
use crate::mm::{self, Post, Reaction};
use crate::state::Asked;
use crate::verdict::{emoji_verdict, reply_verdict};
use crate::{alert, card};

/// Answers queued for brokerd at most; beyond it the oldest are dropped (and logged).
const MAX_QUEUED: usize = 1024;

/// Why a card or an update was not shown: brokerd asks again, or the outcome stands unshown.
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    /// brokerd asked again while the first try still runs.
    #[error("being posted")]
    BeingPosted,
    #[error("{0}")]
    Mattermost(mm::Error),
}

impl From<mm::Error> for DeskError {
    fn from(e: mm::Error) -> Self {
        Self::Mattermost(e)
    }
}

#[derive(Debug)]
pub struct Desk {
    /// The channel the cards are posted in, and the state that remembers them.
    ctx: Arc<Context>,
    queue: Mutex<Queue>,
    ring: Condvar,
    /// Approvals being posted now.
    posting: Mutex<HashSet<String>>,
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

impl Desk {
    pub fn new(ctx: Arc<Context>) -> Self {
        Self {
            ctx,
            queue: Mutex::new(Queue {
                next: 1,
                items: VecDeque::new(),
            }),
            ring: Condvar::new(),
            posting: Mutex::new(HashSet::new()),
        }
    }

    /// Posts `card` as a root post with its long arguments continued in its thread, or
    /// finds the post made for it before (and posts the parts a failure left out). Returns
    /// the root post's id.
    pub fn post(&self, card: &ApprovalCard, now: i64) -> Result<String, DeskError> {
        if !lock(&self.posting).insert(card.approval.clone()) {
            // A slow Mattermost: brokerd asked again while the first try still runs.
            return Err(DeskError::BeingPosted);
        }
        let result = self.post_parts(card, now);
        lock(&self.posting).remove(&card.approval);
        result
    }

    fn post_parts(&self, card: &ApprovalCard, now: i64) -> Result<String, DeskError> {
        let (known, thread) = {
            let s = self.ctx.store();
            let known = s.approval(&card.approval).cloned();
            let thread = s.thread_of(card.session.as_str()).cloned();
            (known, thread)
        };
        let posts = card::render(card, self.ctx.server(), thread.as_deref());
        let (root, done) = match known {
            Some(asked) => (asked.post, asked.parts),
            None => {
                let root = self.ctx.post("", &posts[0])?;
                // Known at once: an answer on it from now on is an answer, never chat.
                let asked = Asked {
                    post: root.clone(),
                    binding: card.binding,
                    posted: now,
                    expires: i64::try_from(card.expires.as_millis()).unwrap_or(i64::MAX),
                    parts: 1,
                    lapsed: false,
                    done: false,
                    heard: VecDeque::new(),
                    told: VecDeque::new(),
                };
                let mut s = self.ctx.store();
                s.remember_approval(&card.approval, asked);
                s.save_or_log();
                (root, 1)
            }
        };
        // The parts split the same way on every try (card::render), so a retry goes on
        // where a failure stopped.
        for (i, more) in posts.iter().enumerate().skip(done.max(1)) {
            self.ctx.post(&root, more)?;
            let mut s = self.ctx.store();
            s.posted_parts(&card.approval, i + 1);
            s.save_or_log();
        }
        Ok(root)
    }

    /// Posts brokerd's audit alert as a root post of the channel; its id.
    pub fn alert(&self, a: &AuditAlert) -> Result<String, DeskError> {
        Ok(self.ctx.post("", &alert::audit(a))?)
    }

    /// Posts a failed `bxctl verify` brokerd forwarded as a root post of the channel (no
    /// approval: nothing on it is heard as an answer); its id.
    pub fn verify_alert(&self, v: &VerifyPost) -> Result<String, DeskError> {
        Ok(self.ctx.post("", &alert::verify(v))?)
    }

    /// Shows what became of an answer (a reply in the thread, once per user) or of the
    /// approval (the root post edited, once brokerd's outcome is in).
    pub fn update(&self, u: &ApprovalUpdate) -> Result<(), DeskError> {
        let Some(asked) = self.ctx.store().approval(&u.approval).cloned() else {
            return Ok(());
        };
        if let Update::Refused { by, refusal } = &u.update {
            if self.ctx.store().told(&u.approval, by) {
                // Said once per user and post: a flood of refusals is not echoed.
                return Ok(());
            }
            self.ctx.post(&asked.post, &card::refused(by, *refusal))?;
            let mut s = self.ctx.store();
            s.tell(&u.approval, by);
            s.save_or_log();
            return Ok(());
        }
        if asked.done {
            return Ok(());
        }
        self.settle(&u.approval, &asked.post, &u.update)?;
        let mut s = self.ctx.store();
        s.decided(&u.approval);
        s.save_or_log();
        Ok(())
    }

    /// Edits the root post to show `update`.
    fn settle(&self, approval: &str, post: &str, update: &Update) -> Result<(), DeskError> {
        let client = self.ctx.client();
        let message = client.message(post)?;
        match card::settled(&message, approval, update) {
            Some(text) if text != message => Ok(client.edit(post, &text)?),
            _ => Ok(()),
        }
    }

    /// The answers not yet acknowledged, numbered from the first returned, waiting up to
    /// `wait` for one. Those numbered below `ack` were received: they are forgotten, and
    /// their reactions recorded as passed on (under the queue's lock, so a catch-up cannot
    /// queue one again in between).
    pub fn wait(&self, ack: u64, wait: Duration) -> (u64, Vec<ApprovalAnswer>) {
        let mut q = lock(&self.queue);
        if q.items.front().is_some_and(|h| h.seq < ack) {
            let mut s = self.ctx.store();
            while let Some(h) = q.items.pop_front_if(|h| h.seq < ack) {
                if let Some(key) = h.reaction {
                    s.hear(&h.answer.approval, key);
                }
            }
            s.save_or_log();
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
        let s = self.ctx.store();
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
        let found = self
            .ctx
            .store()
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

    /// After a reconnect: the reactions made meanwhile on approval posts still open. A
    /// post past its expiry without brokerd's word is shown as expired (brokerd's outcome,
    /// when it comes, replaces that). One post that cannot be read is skipped, and said.
    pub fn catch_up(&self, now: i64) {
        let open: Vec<(String, Asked)> = self.ctx.store().open_approvals();
        for (approval, asked) in open {
            if asked.expires <= now {
                match self.settle(&approval, &asked.post, &Update::Expired) {
                    Ok(()) => {
                        let mut s = self.ctx.store();
                        s.lapsed(&approval);
                        s.save_or_log();
                    }
                    Err(e) => log::warn(format_args!("showing {approval} expired: {e}")),
                }
                continue;
            }
            match self.ctx.client().reactions(&asked.post) {
                Ok(reactions) => reactions.iter().for_each(|r| self.reaction(r)),
                Err(e) => log::warn(format_args!("the reactions on {}: {e}", asked.post)),
            }
        }
    }
}
