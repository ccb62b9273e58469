//! The one failed verification's alert that waits to be posted (docs/verify.md,
//! docs/decisions.md V18), and when the last one went, by the monotonic clock.
//!
//! brokerd takes an alert ([`Slot::admit`]) only when none waits and none was taken or
//! posted less than [`INTERVAL`] ago, so at most one alert waits and at most one is posted
//! per interval, however long gatewayd is away. The link thread tries the one that waits
//! ([`Slot::due`]): gatewayd unable to post it (Mattermost down) means another try after
//! [`RETRY`], like a card; one that has waited [`MAX_WAIT`] is dropped with a warning (its
//! lines are in the audit log). The slot is memory: a restart of brokerd loses it.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use daemon::{lock, log};
use proto::alert::{INTERVAL, MAX_WAIT, VerifyPost};

/// How soon an alert gatewayd could not post is tried again (as a card is).
pub const RETRY: Duration = Duration::from_secs(10);

/// The slot, shared by the admin side (which fills it) and the link (which empties it).
#[derive(Debug, Default)]
pub struct VerifySlot(Mutex<Slot>);

impl VerifySlot {
    /// The slot, locked: whoever decides whether to take an alert holds it until the alert
    /// is audited and put, so two at once cannot both be taken.
    pub fn lock(&self) -> MutexGuard<'_, Slot> {
        lock(&self.0)
    }
}

#[derive(Debug, Default)]
pub struct Slot {
    /// When the last alert was taken or posted, whichever is later.
    last: Option<Instant>,
    waiting: Option<Waiting>,
}

#[derive(Debug)]
struct Waiting {
    post: VerifyPost,
    /// The audit line that took it.
    seq: u64,
    since: Instant,
    /// Not tried before this.
    try_at: Instant,
    /// Whether gatewayd refused it once already (said once in the journal).
    refused: bool,
}

/// Whether a new alert may be taken now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Free,
    /// The one taken at this audit sequence number still waits.
    Waiting {
        seq: u64,
    },
    /// One was taken or posted less than [`INTERVAL`] ago: the next may go after this.
    Recent {
        left: Duration,
    },
}

impl Slot {
    /// Whether an alert may be taken at `now` (an alert that has waited too long is
    /// dropped first).
    pub fn admit(&mut self, now: Instant) -> Admit {
        self.expire(now);
        if let Some(w) = &self.waiting {
            return Admit::Waiting { seq: w.seq };
        }
        match self.last {
            Some(at) if now.saturating_duration_since(at) < INTERVAL => Admit::Recent {
                left: INTERVAL - now.saturating_duration_since(at),
            },
            _ => Admit::Free,
        }
    }

    /// Takes `post` (audited at `seq`) to be posted; only after [`Slot::admit`] said
    /// [`Admit::Free`].
    pub fn put(&mut self, post: VerifyPost, seq: u64, now: Instant) {
        self.last = Some(now);
        self.waiting = Some(Waiting {
            post,
            seq,
            since: now,
            try_at: now,
            refused: false,
        });
    }

    /// The alert to post now and its audit seq, if one waits and is due; it stays until
    /// [`Slot::posted`].
    pub fn due(&mut self, now: Instant) -> Option<(u64, VerifyPost)> {
        self.expire(now);
        self.waiting
            .as_ref()
            .filter(|w| w.try_at <= now)
            .map(|w| (w.seq, w.post.clone()))
    }

    /// gatewayd posted the alert of `seq`. The slot is not locked while it posts, so the
    /// one that waits now may be another (that one aged out and a new one was taken).
    pub fn posted(&mut self, seq: u64, now: Instant) {
        if self.waiting.as_ref().is_some_and(|w| w.seq == seq) {
            self.waiting = None;
        }
        self.last = Some(now);
    }

    /// gatewayd could not post the alert of `seq` (`why`): tried again after [`RETRY`].
    pub fn refused(&mut self, seq: u64, now: Instant, why: &str) {
        if let Some(w) = self.waiting.as_mut().filter(|w| w.seq == seq) {
            w.try_at = now + RETRY;
            if !w.refused {
                // Once, not every RETRY: the drop is said too.
                log::warn(format_args!(
                    "gatewayd could not post the verify alert of audit seq {} ({why}); trying \
                     again every {RETRY:?} for up to {} h",
                    w.seq,
                    MAX_WAIT.as_secs() / 3600
                ));
                w.refused = true;
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        if let Some(w) = &self.waiting
            && now.saturating_duration_since(w.since) >= MAX_WAIT
        {
            log::warn(format_args!(
                "the verify alert of audit seq {} was not posted within {} h; dropped (its \
                 lines are in the audit log)",
                w.seq,
                MAX_WAIT.as_secs() / 3600
            ));
            self.waiting = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(line: &str) -> VerifyPost {
        VerifyPost {
            time: proto::Timestamp::parse("2026-12-01T04:00:12.345Z").expect("time"),
            by: "uid 0 (root)".into(),
            lines: vec![line.into()],
        }
    }

    /// gatewayd refusing the alert keeps it, tried again after RETRY and not before,
    /// until it is posted; meanwhile no second one is taken, whatever the interval says.
    #[test]
    fn a_refused_alert_waits_and_is_tried_again_until_posted() {
        let t0 = Instant::now();
        let mut slot = Slot::default();
        assert_eq!(slot.admit(t0), Admit::Free);
        slot.put(post("FAIL a"), 7, t0);
        assert_eq!(slot.due(t0), Some((7, post("FAIL a"))));
        slot.refused(7, t0, "Mattermost is down");
        assert_eq!(slot.due(t0 + RETRY / 2), None, "not before RETRY");
        let later = t0 + RETRY;
        assert_eq!(slot.due(later), Some((7, post("FAIL a"))), "tried again");
        // An hour on, past the interval, the one that waits still holds the next back.
        let hour = t0 + Duration::from_secs(3600);
        slot.refused(7, later, "still down");
        assert_eq!(slot.admit(hour), Admit::Waiting { seq: 7 });
        assert_eq!(slot.due(hour), Some((7, post("FAIL a"))));
        slot.posted(7, hour);
        assert_eq!(slot.due(hour), None, "posted once");
        // The interval counts from the post: posts are never closer than INTERVAL.
        assert_eq!(
            slot.admit(hour + Duration::from_secs(60)),
            Admit::Recent {
                left: INTERVAL - Duration::from_secs(60)
            }
        );
        assert_eq!(slot.admit(hour + INTERVAL), Admit::Free);
    }

    /// At most one waits, and not forever: at MAX_WAIT it is dropped, and the slot is free.
    #[test]
    fn at_most_one_alert_waits_and_not_past_max_wait() {
        let t0 = Instant::now();
        let mut slot = Slot::default();
        slot.put(post("FAIL a"), 7, t0);
        // The link is down (nothing tried): every alert meanwhile is held, none queued.
        for minutes in [1, 11, 60, 23 * 60] {
            let at = t0 + Duration::from_secs(minutes * 60);
            assert_eq!(slot.admit(at), Admit::Waiting { seq: 7 }, "{minutes} min");
        }
        let day = t0 + MAX_WAIT;
        let before = day - Duration::from_secs(1);
        assert_eq!(slot.due(before), Some((7, post("FAIL a"))));
        assert_eq!(slot.due(day), None, "dropped at MAX_WAIT");
        assert_eq!(slot.admit(day), Admit::Free);
        let mut slot = Slot::default();
        slot.put(post("FAIL b"), 8, t0);
        assert_eq!(slot.admit(day), Admit::Free, "admit drops it too");
        assert_eq!(slot.due(day), None);
        // A post of the one that aged out, answered after another was taken, leaves that
        // other one waiting.
        slot.put(post("FAIL c"), 9, day);
        slot.posted(8, day);
        slot.refused(8, day, "late");
        assert_eq!(slot.due(day), Some((9, post("FAIL c"))));
    }
}
