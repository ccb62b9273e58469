//! Approvals waiting for the owner. Each is bound to the card as shown (session, call,
//! tool, canonical arguments, grant id, session taint and untrusted sources at request
//! time, expiry: [`ApprovalCard::bound`]), single use, expiring, and capped in number.
//! Answers arrive only on owner channels. Stopping ends every one at once.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::Sender;

use proto::approval::{ApprovalCard, Refusal, Verdict};
use proto::{Hash32, Timestamp};

pub use super::approved::Approved;

/// How many answered ids are remembered, to tell "already used" from "unknown".
const REMEMBERED: usize = 4096;

/// The owner's answer, as a channel hands it to the desk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub verdict: Verdict,
    pub by: String,
    pub post: Option<String>,
}

/// What the waiting request is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// The owner approved the card as it was shown.
    Approved(Approved),
    /// The owner approved it and allowed for the session what the card offered: the
    /// waiting request records the allowance, then runs the call.
    ForSession(Approved),
    /// The owner refused it (`by`, `post`: who, and where).
    Refused { by: String, post: Option<String> },
    /// The owner answered, but the card no longer held: the session's labels rose after it
    /// was shown. The call is denied by brokerd (`approval_changed`), not by the owner.
    Changed,
    /// brokerd is stopping: the call is denied now, not left to the drain.
    Stopping,
    /// loopd hung up its request while it waited (the owner cancelled the turn): the call
    /// is denied, and the approval can no longer be answered.
    Withdrawn,
}

#[derive(Debug)]
struct Entry {
    card: ApprovalCard,
    waiter: Sender<Wake>,
}

#[derive(Debug)]
pub struct Approvals {
    cap: usize,
    pending: HashMap<String, Entry>,
    /// Ids no longer pending, and why: a later answer is refused with that reason.
    ended: VecDeque<(String, Refusal)>,
    /// Set once by [`Approvals::stop`]: nothing more is registered.
    stopping: bool,
}

/// Why a card was not registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRegistered {
    /// `cap` approvals already wait.
    Full,
    Stopping,
}

/// A fresh approval id: 128 bits from the OS RNG, as 32 lower-case hex characters.
pub fn new_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(proto::hex(&bytes))
}

/// Why an answer was not taken. (A changed request also ends: its waiter is told to deny.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub refusal: Refusal,
}

impl Approvals {
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            pending: HashMap::new(),
            ended: VecDeque::new(),
            stopping: false,
        }
    }

    /// Registers a card, unless `cap` approvals already wait or brokerd is stopping.
    pub fn register(
        &mut self,
        card: ApprovalCard,
        waiter: Sender<Wake>,
    ) -> Result<(), NotRegistered> {
        if self.stopping {
            return Err(NotRegistered::Stopping);
        }
        if self.pending.len() >= self.cap {
            return Err(NotRegistered::Full);
        }
        self.pending
            .insert(card.approval.clone(), Entry { card, waiter });
        Ok(())
    }

    pub fn is_pending(&self, approval: &str) -> bool {
        self.pending.contains_key(approval)
    }

    /// Whether a new card would be refused (see [`Approvals::register`]).
    pub fn refuses(&self) -> Option<NotRegistered> {
        if self.stopping {
            Some(NotRegistered::Stopping)
        } else if self.pending.len() >= self.cap {
            Some(NotRegistered::Full)
        } else {
            None
        }
    }

    /// brokerd is stopping: every waiting request is woken to deny its call, and no card
    /// is registered from now on. Returns how many were waiting.
    pub fn stop(&mut self) -> usize {
        self.stopping = true;
        let ended: Vec<(String, Entry)> = self.pending.drain().collect();
        let n = ended.len();
        for (_, entry) in ended {
            // A waiter that just gave up (expiry) decides on its own. A later answer is
            // refused as unknown, like one after a restart.
            let _ = entry.waiter.send(Wake::Stopping);
        }
        n
    }

    /// Every pending card, oldest expiry first.
    pub fn list(&self) -> Vec<ApprovalCard> {
        let mut cards: Vec<ApprovalCard> = self.pending.values().map(|e| e.card.clone()).collect();
        cards.sort_by(|a, b| (a.expires, &a.approval).cmp(&(b.expires, &b.approval)));
        cards
    }

    /// Takes an approval back (its waiter gave up: expiry, or its requester hung up); a
    /// later answer is refused with `why`. Returns whether it was pending.
    pub fn withdraw(&mut self, approval: &str, why: Refusal) -> bool {
        let was = self.pending.remove(approval).is_some();
        if was {
            self.remember(approval, why);
        }
        was
    }

    /// Applies an owner's answer. The answer must carry the binding of the card that was
    /// shown; `current` is that card's binding recomputed from the labels as they stand now
    /// (the session's, which the decision raised to the label the call was decided at), and
    /// must still equal it: otherwise the card no longer holds, the answer is refused
    /// `changed`, and the call is denied as changed, never in the owner's name.
    pub fn answer(
        &mut self,
        approval: &str,
        claimed: Hash32,
        current: impl FnOnce(&ApprovalCard) -> Hash32,
        answer: Answer,
        now: Timestamp,
    ) -> Result<(), Refused> {
        let Some(entry) = self.pending.get(approval) else {
            let refusal = self
                .ended
                .iter()
                .find(|(a, _)| a == approval)
                .map_or(Refusal::Unknown, |(_, why)| *why);
            return Err(Refused { refusal });
        };
        if now >= entry.card.expires {
            return Err(Refused {
                refusal: Refusal::Expired,
            });
        }
        if claimed != entry.card.binding {
            // The answer is for something else than what waits: refuse the answer, keep
            // the request for a correct one.
            return Err(Refused {
                refusal: Refusal::Changed,
            });
        }
        if answer.verdict == Verdict::AllowSession && entry.card.session_offer.is_none() {
            // The card offered no session answer (its grant always asks, say): refuse this
            // one, keep the request for an approve or a deny.
            return Err(Refused {
                refusal: Refusal::NotOffered,
            });
        }
        let still = current(&entry.card) == entry.card.binding;
        let Some(entry) = self.pending.remove(approval) else {
            return Err(Refused {
                refusal: Refusal::Unknown,
            });
        };
        self.remember(approval, Refusal::AlreadyUsed);
        if !still {
            // The session moved on (its labels rose): what the owner saw is no longer the
            // request. It can never be approved; end it with brokerd's denial.
            let _ = entry.waiter.send(Wake::Changed);
            return Err(Refused {
                refusal: Refusal::Changed,
            });
        }
        let wake = match answer.verdict {
            Verdict::Approve => Wake::Approved(Approved::new(answer.by, answer.post, None)),
            Verdict::AllowSession => Wake::ForSession(Approved::new(answer.by, answer.post, None)),
            Verdict::Deny => Wake::Refused {
                by: answer.by,
                post: answer.post,
            },
        };
        // The waiter may have just given up (expiry); then the answer is simply unread.
        let _ = entry.waiter.send(wake);
        Ok(())
    }

    fn remember(&mut self, approval: &str, why: Refusal) {
        if self.ended.len() >= REMEMBERED {
            self.ended.pop_front();
        }
        self.ended.push_back((approval.to_owned(), why));
    }
}
