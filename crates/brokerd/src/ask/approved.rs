//! The one thing that turns an `ask` into an allow (`policy::approve`): the owner approved.
//! Its fields are private and only the desk (`ask`) makes one, in two ways: for the owner's
//! approve of the card as shown (`approvals::Approvals::answer`), and for a later call that
//! an allowance the owner gave for its session covers (`allowances::Allowances::cover`).
//! There is no third way (docs/decisions.md X12, O13).

/// The owner approved: the card as shown, or, through an allowance, the calls it covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    by: String,
    post: Option<String>,
    allowance: Option<String>,
}

impl Approved {
    /// Only the desk makes one (`pub(super)`: `ask` and its modules).
    pub(super) fn new(by: String, post: Option<String>, allowance: Option<String>) -> Self {
        Self {
            by,
            post,
            allowance,
        }
    }

    /// Who approved: a Mattermost user id, or the local admin's uid and name.
    pub fn by(&self) -> &str {
        &self.by
    }

    /// The Mattermost post the approval came from, if it came from one.
    pub fn post(&self) -> Option<&str> {
        self.post.as_deref()
    }

    /// The allowance that approved the call without asking; `None` when the owner answered
    /// the call's own card.
    pub fn allowance(&self) -> Option<&str> {
        self.allowance.as_deref()
    }
}
