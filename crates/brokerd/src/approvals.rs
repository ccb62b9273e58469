//! Approvals waiting for the owner. Each is bound to the exact request (session, call,
//! tool, canonical arguments, grant id, session taint at request time), single use,
//! expiring, and capped in number. Answers arrive only on owner channels.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::Sender;

use proto::approval::{ApprovalCard, Refusal, Verdict};
use proto::{CallId, DataClass, Hash32, SessionId, Timestamp};

/// How many answered ids are remembered, to tell "already used" from "unknown".
const REMEMBERED: usize = 4096;

/// The owner's answer, delivered to the connection that waits for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub verdict: Verdict,
    pub by: String,
    pub post: Option<String>,
}

#[derive(Debug)]
struct Entry {
    card: ApprovalCard,
    waiter: Sender<Answer>,
}

#[derive(Debug)]
pub struct Approvals {
    cap: usize,
    pending: HashMap<String, Entry>,
    /// Ids no longer pending, and why: a later answer is refused with that reason.
    ended: VecDeque<(String, Refusal)>,
}

/// Binds an approval to the exact request: length-prefixed fields, so no two different
/// requests hash alike.
pub fn binding(
    session: &SessionId,
    call: CallId,
    tool: &str,
    canonical: &str,
    grant: &str,
    taint: DataClass,
) -> Hash32 {
    let call = call.0.to_be_bytes();
    Hash32::of_parts([
        session.as_str().as_bytes(),
        &call[..],
        tool.as_bytes(),
        canonical.as_bytes(),
        grant.as_bytes(),
        taint.as_str().as_bytes(),
    ])
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
        }
    }

    /// Registers a card; `Err(())` when `cap` approvals already wait.
    #[allow(clippy::result_unit_err)]
    pub fn register(&mut self, card: ApprovalCard, waiter: Sender<Answer>) -> Result<(), ()> {
        if self.pending.len() >= self.cap {
            return Err(());
        }
        self.pending
            .insert(card.approval.clone(), Entry { card, waiter });
        Ok(())
    }

    pub fn is_pending(&self, approval: &str) -> bool {
        self.pending.contains_key(approval)
    }

    pub fn is_full(&self) -> bool {
        self.pending.len() >= self.cap
    }

    /// Every pending card, oldest expiry first.
    pub fn list(&self) -> Vec<ApprovalCard> {
        let mut cards: Vec<ApprovalCard> = self.pending.values().map(|e| e.card.clone()).collect();
        cards.sort_by(|a, b| (a.expires, &a.approval).cmp(&(b.expires, &b.approval)));
        cards
    }

    /// Takes an approval back (its waiter gave up: expiry). Returns whether it was pending.
    pub fn withdraw(&mut self, approval: &str) -> bool {
        let was = self.pending.remove(approval).is_some();
        if was {
            self.remember(approval, Refusal::Expired);
        }
        was
    }

    /// Applies an owner's answer. `current` is the binding recomputed from the session as
    /// it stands now; it must equal both the card's and the answer's.
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
        let still = current(&entry.card) == entry.card.binding;
        let Some(entry) = self.pending.remove(approval) else {
            return Err(Refused {
                refusal: Refusal::Unknown,
            });
        };
        self.remember(approval, Refusal::AlreadyUsed);
        if !still {
            // The session moved on (its taint rose): what the owner saw is no longer the
            // request. It can never be approved; end it with a denial.
            let _ = entry.waiter.send(Answer {
                verdict: Verdict::Deny,
                by: answer.by,
                post: answer.post,
            });
            return Err(Refused {
                refusal: Refusal::Changed,
            });
        }
        // The waiter may have just given up (expiry); then the answer is simply unread.
        let _ = entry.waiter.send(answer);
        Ok(())
    }

    fn remember(&mut self, approval: &str, why: Refusal) {
        if self.ended.len() >= REMEMBERED {
            self.ended.pop_front();
        }
        self.ended.push_back((approval.to_owned(), why));
    }
}
