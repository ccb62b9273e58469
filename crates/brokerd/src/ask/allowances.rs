//! Session allowances in force: what the owner's "allow for this session" answers made.
//! Each is held with the monotonic time it began, so it never outlives its hour even if the
//! wall clock is set back, and ends early when revoked or when its session's label rises
//! above the one it was given at (the broker judges that, by `policy::allowance`). Held in
//! memory only: a restart ends every allowance, so a restart can only narrow (decisions
//! O15). At most [`MAX_ALLOWANCES`] are in force; an answer past that is refused.

use std::time::{Duration, Instant};

use proto::allowance::Allowance;
use proto::{Hash32, Timestamp};

use super::approved::Approved;

/// The most allowances in force at once. Each needs an owner's answer to a card of its own,
/// so an owner meets it only by answering that many within the hour.
pub const MAX_ALLOWANCES: usize = 64;

/// One allowance in force, with what deciding on it needs beyond what the owner is shown.
#[derive(Debug, Clone)]
pub struct Held {
    /// As the owner channels list it.
    pub allowance: Allowance,
    /// The SHA-256 of the grant's canonical text when the owner answered: a grant changed
    /// by a reload is not the grant the owner allowed.
    pub grant_text: Hash32,
    /// When it began, on the monotonic clock.
    since: Instant,
    lasts: Duration,
}

impl Held {
    pub fn new(allowance: Allowance, grant_text: Hash32, lasts: Duration) -> Self {
        Self {
            allowance,
            grant_text,
            since: Instant::now(),
            lasts,
        }
    }

    /// Past its expiry by the wall clock, or past its length by the monotonic one.
    fn expired(&self, now: Timestamp) -> bool {
        now >= self.allowance.expires || self.since.elapsed() >= self.lasts
    }
}

/// What an allowance is to one call, as the broker judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// It covers the call: the call runs as the owner approved.
    Covers,
    /// It is about other calls (another session, grant or scope).
    Passes,
    /// Its session's label rose above the one it was given at: it ends.
    Ends,
}

#[derive(Debug, Default)]
pub struct Allowances {
    held: Vec<Held>,
}

impl Allowances {
    /// Drops what expired, then says whether [`MAX_ALLOWANCES`] are in force.
    pub fn is_full(&mut self, now: Timestamp) -> bool {
        self.held.retain(|h| !h.expired(now));
        self.held.len() >= MAX_ALLOWANCES
    }

    /// Puts an allowance in force (audited by the caller first). The count is checked
    /// when the owner answers ([`Allowances::is_full`]); answers already taken then still
    /// make theirs, so at most `broker.max_pending_approvals` more are ever held.
    pub fn insert(&mut self, held: Held) {
        self.held.push(held);
    }

    /// The approval of the first allowance in force that covers a call, judged by `fit`;
    /// every allowance `fit` ends, and every expired one, is dropped on the way.
    pub fn cover(&mut self, now: Timestamp, fit: impl Fn(&Held) -> Fit) -> Option<Approved> {
        let mut covered = None;
        self.held.retain(|h| {
            if h.expired(now) {
                return false;
            }
            match fit(h) {
                Fit::Ends => false,
                Fit::Passes => true,
                Fit::Covers => {
                    if covered.is_none() {
                        let a = &h.allowance;
                        covered =
                            Some(Approved::new(a.by.clone(), None, Some(a.allowance.clone())));
                    }
                    true
                }
            }
        });
        covered
    }

    /// Ends one allowance now; what it was, if it was in force.
    pub fn revoke(&mut self, allowance: &str, now: Timestamp) -> Option<Allowance> {
        self.held.retain(|h| !h.expired(now));
        let at = self
            .held
            .iter()
            .position(|h| h.allowance.allowance == allowance)?;
        Some(self.held.remove(at).allowance)
    }

    /// Every allowance in force, soonest expiring first, after dropping the expired ones
    /// and those `ended` says can never cover a call again (their session's label rose).
    pub fn list(&mut self, now: Timestamp, ended: impl Fn(&Held) -> bool) -> Vec<Allowance> {
        self.held.retain(|h| !h.expired(now) && !ended(h));
        let mut all: Vec<Allowance> = self.held.iter().map(|h| h.allowance.clone()).collect();
        all.sort_by(|a, b| (a.expires, &a.allowance).cmp(&(b.expires, &b.allowance)));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::allowance::Scope;
    use proto::{DataClass, SessionId};

    fn held(id: &str, expires_in: Duration, lasts: Duration) -> Held {
        let now = Timestamp::now();
        Held::new(
            Allowance {
                allowance: id.to_owned(),
                session: SessionId::new("s-1").expect("id"),
                tool: "list_dir".into(),
                grant: "g".into(),
                scope: Scope::Path {
                    path: "/srv".into(),
                },
                session_taint: DataClass::Private,
                untrusted: false,
                approval: "a".repeat(32),
                by: "uid 1000 (owner)".into(),
                post: Some("post".into()),
                granted: now,
                expires: now.saturating_add(expires_in),
            },
            Hash32::ZERO,
            lasts,
        )
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn a_covering_allowance_approves_as_its_owner_and_names_itself() {
        let mut a = Allowances::default();
        a.insert(held("one", HOUR, HOUR));
        let now = Timestamp::now();
        assert_eq!(a.cover(now, |_| Fit::Passes), None);
        let approved = a.cover(now, |_| Fit::Covers).expect("covered");
        assert_eq!(approved.by(), "uid 1000 (owner)");
        assert_eq!(approved.allowance(), Some("one"));
        // The post is the grant's (its audit line), not this call's.
        assert_eq!(approved.post(), None);
        // Covering does not use it up.
        assert!(a.cover(now, |_| Fit::Covers).is_some());
        // An allowance its session's label outgrew ends for good.
        assert_eq!(a.cover(now, |_| Fit::Ends), None);
        assert_eq!(a.cover(now, |_| Fit::Covers), None);
        assert!(a.list(now, |_| false).is_empty());
    }

    #[test]
    fn an_allowance_never_outlives_its_length_on_either_clock() {
        let mut a = Allowances::default();
        // The wall clock says it has an hour left, the monotonic clock that it is over (a
        // clock set back): over.
        a.insert(held("mono", HOUR, Duration::ZERO));
        // The monotonic clock says an hour, the wall clock that it expired: over.
        a.insert(held("wall", Duration::ZERO, HOUR));
        a.insert(held("live", HOUR, HOUR));
        let now = Timestamp::now();
        let listed: Vec<String> = a
            .list(now, |_| false)
            .into_iter()
            .map(|x| x.allowance)
            .collect();
        assert_eq!(listed, ["live"]);
        assert!(
            a.cover(now, |h| if h.allowance.allowance == "live" {
                Fit::Passes
            } else {
                Fit::Covers
            })
            .is_none()
        );
    }

    #[test]
    fn revoking_ends_one_and_says_what_it_was() {
        let mut a = Allowances::default();
        a.insert(held("one", HOUR, HOUR));
        a.insert(held("two", HOUR, HOUR));
        let now = Timestamp::now();
        assert_eq!(
            a.revoke("one", now).map(|x| x.allowance).as_deref(),
            Some("one")
        );
        assert_eq!(a.revoke("one", now), None);
        let listed: Vec<String> = a
            .list(now, |_| false)
            .into_iter()
            .map(|x| x.allowance)
            .collect();
        assert_eq!(listed, ["two"]);
        // Listing also ends what can never cover again.
        assert!(a.list(now, |h| h.allowance.allowance == "two").is_empty());
    }

    #[test]
    fn at_most_max_allowances_are_in_force_when_the_owner_answers() {
        let mut a = Allowances::default();
        let now = Timestamp::now();
        for i in 0..MAX_ALLOWANCES {
            assert!(!a.is_full(now), "{i}");
            a.insert(held(&format!("{i}"), HOUR, HOUR));
        }
        assert!(a.is_full(now));
        a.revoke("0", now).expect("in force");
        assert!(!a.is_full(now));
        // Expired ones do not count: one that expires the moment it is made, judged at a
        // time taken after it (the test's `now` may be a millisecond older than its expiry).
        a.insert(held("old", Duration::ZERO, HOUR));
        assert!(!a.is_full(Timestamp::now()));
    }
}
