//! Answering approvals, from `bxctl approve`/`deny` and from the chat's inline prompt alike:
//! the card as brokerd holds it (never as the chat stream tells it), an id found from a
//! prefix among the approvals waiting now only, the full id echoed, and the answer sent on
//! the admin side with the binding of the card shown, where brokerd audits it. `bxctl
//! approve --for-session` answers "allow for this session" with the same binding; `bxctl
//! approvals revoke` ends an allowance, found the same way among those in force.

use std::io::Write;
use std::process::ExitCode;

use config::Config;
use inert::line;
use proto::allowance::{AllowanceRevoke, RevokeOutcome};
use proto::approval::{AnswerOutcome, ApprovalAnswer, ApprovalCard, Verdict};
use proto::{Message, Timestamp};

use crate::Error;
use crate::admin::{call, full_listing, listing};
use crate::card::{allowance, card};
use crate::error::unexpected;

/// The shortest prefix of an approval id taken for the whole id.
pub const MIN_PREFIX: usize = 6;

/// The length of a whole approval id: 128 bits as hex.
const ID_LEN: usize = 32;

/// What an id or prefix names among the waiting approvals.
#[derive(Debug)]
pub enum Found<'a> {
    One(&'a ApprovalCard),
    /// No waiting approval has this id or starts with this prefix.
    None,
    /// Several waiting approvals start with this prefix: their ids.
    Several(Vec<&'a str>),
}

/// The waiting approval `given` names: its whole id, or a prefix of at least
/// [`MIN_PREFIX`] characters that exactly one waiting approval starts with.
pub fn find<'a>(cards: &'a [ApprovalCard], given: &str) -> Result<Found<'a>, Error> {
    long_enough(given)?;
    if let Some(c) = cards.iter().find(|c| c.approval == given) {
        return Ok(Found::One(c));
    }
    let matching: Vec<&ApprovalCard> = cards
        .iter()
        .filter(|c| c.approval.starts_with(given))
        .collect();
    Ok(match matching.as_slice() {
        [] => Found::None,
        [one] => Found::One(one),
        several => Found::Several(several.iter().map(|c| c.approval.as_str()).collect()),
    })
}

/// A usage error when `given` is shorter than [`MIN_PREFIX`].
pub fn long_enough(given: &str) -> Result<(), Error> {
    if given.chars().count() < MIN_PREFIX {
        return Err(Error::Usage(format!(
            "approval {} is too short: give the whole id or at least {MIN_PREFIX} of its \
             first characters (see `bxctl approvals`)",
            line(given)
        )));
    }
    Ok(())
}

/// Sends one answer on the admin side, bound to `binding`; brokerd audits it.
pub fn send(
    config: &Config,
    approval: &str,
    binding: proto::Hash32,
    verdict: Verdict,
) -> Result<AnswerOutcome, Error> {
    let msg = Message::ApprovalAnswer(ApprovalAnswer {
        approval: approval.to_owned(),
        binding,
        verdict,
        post: None,
        by: None,
    });
    match call(config, msg)? {
        Message::ApprovalAnswered(outcome) => Ok(outcome),
        other => Err(unexpected(&other)),
    }
}

/// What an answer came to, as one line: `approved`, `approved for this session`,
/// `denied`, or the refusal's wire name.
pub fn outcome_line(outcome: &AnswerOutcome, verdict: Verdict) -> String {
    match (outcome, verdict) {
        (AnswerOutcome::Accepted, Verdict::Approve) => "approved".to_owned(),
        (AnswerOutcome::Accepted, Verdict::AllowSession) => "approved for this session".to_owned(),
        (AnswerOutcome::Accepted, Verdict::Deny) => "denied".to_owned(),
        (AnswerOutcome::Refused { refusal }, _) => format!("refused: {}", refusal.as_str()),
    }
}

/// The word echoed with the whole id before an answer leaves.
pub fn word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Approve => "approve",
        Verdict::AllowSession => "approve for this session",
        Verdict::Deny => "deny",
    }
}

/// `bxctl approve` / `bxctl deny` (and `approve --for-session`): exit 0 when brokerd took
/// the answer, 1 when it or the prefix was refused (none waiting, several waiting). A
/// session answer to a card that offers none is still sent, so brokerd audits it.
pub fn answer(
    config: &Config,
    given: &str,
    verdict: Verdict,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let cards = listing(config)?;
    let (approval, binding) = match find(&cards, given)? {
        Found::One(c) => {
            write!(out, "{}", card(c, Timestamp::now())).map_err(Error::Output)?;
            (c.approval.clone(), c.binding)
        }
        Found::Several(ids) => {
            writeln!(
                out,
                "refused: {} waiting approvals start with {}: {}; give more of the id",
                ids.len(),
                line(given),
                ids.join(", ")
            )
            .map_err(Error::Output)?;
            return Ok(ExitCode::from(1));
        }
        Found::None if given.len() == ID_LEN => {
            writeln!(
                out,
                "no approval {} is waiting (answered, expired, or never issued)",
                line(given)
            )
            .map_err(Error::Output)?;
            // A whole id is sent anyway, so that brokerd audits the attempt and says which.
            (given.to_owned(), proto::Hash32::ZERO)
        }
        Found::None => {
            writeln!(
                out,
                "refused: no waiting approval starts with {} (answered, expired, or never \
                 issued)",
                line(given)
            )
            .map_err(Error::Output)?;
            return Ok(ExitCode::from(1));
        }
    };
    // The whole id, before the answer leaves: what a prefix stood for is never a guess.
    writeln!(out, "{} {}", word(verdict), line(&approval)).map_err(Error::Output)?;
    out.flush().map_err(Error::Output)?;
    let outcome = send(config, &approval, binding, verdict)?;
    writeln!(out, "{}", outcome_line(&outcome, verdict)).map_err(Error::Output)?;
    Ok(match outcome {
        AnswerOutcome::Accepted => ExitCode::SUCCESS,
        AnswerOutcome::Refused { .. } => ExitCode::from(1),
    })
}

/// `bxctl approvals revoke`: ends one allowance in force, named by its whole id or a
/// prefix of at least [`MIN_PREFIX`] characters among those in force. Exit 0 when brokerd
/// revoked it, 1 when it or the prefix was refused.
pub fn revoke(config: &Config, given: &str, out: &mut dyn Write) -> Result<ExitCode, Error> {
    long_enough(given)?;
    let listed = full_listing(config)?;
    let matching: Vec<&proto::allowance::Allowance> = listed
        .allowances
        .iter()
        .filter(|a| a.allowance == given || a.allowance.starts_with(given))
        .collect();
    let whole = match matching.as_slice() {
        [one] => {
            write!(out, "{}", allowance(one, Timestamp::now())).map_err(Error::Output)?;
            one.allowance.clone()
        }
        [] if given.len() == ID_LEN => given.to_owned(),
        [] => {
            writeln!(
                out,
                "refused: no allowance in force starts with {} (revoked, expired, or never \
                 given)",
                line(given)
            )
            .map_err(Error::Output)?;
            return Ok(ExitCode::from(1));
        }
        several => {
            let ids: Vec<&str> = several.iter().map(|a| a.allowance.as_str()).collect();
            writeln!(
                out,
                "refused: {} allowances in force start with {}: {}; give more of the id",
                ids.len(),
                line(given),
                ids.join(", ")
            )
            .map_err(Error::Output)?;
            return Ok(ExitCode::from(1));
        }
    };
    writeln!(out, "revoke {}", line(&whole)).map_err(Error::Output)?;
    out.flush().map_err(Error::Output)?;
    let msg = Message::AllowanceRevoke(AllowanceRevoke { allowance: whole });
    match call(config, msg)? {
        Message::AllowanceRevoked(RevokeOutcome::Revoked { .. }) => {
            writeln!(out, "revoked").map_err(Error::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        Message::AllowanceRevoked(RevokeOutcome::NotInForce) => {
            writeln!(out, "refused: not in force (revoked, expired, or ended)")
                .map_err(Error::Output)?;
            Ok(ExitCode::from(1))
        }
        other => Err(unexpected(&other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{CallId, DataClass, Hash32, SessionId};

    fn card(id: &str) -> ApprovalCard {
        ApprovalCard {
            approval: id.to_owned(),
            binding: Hash32::ZERO,
            session: SessionId::new("s-1").expect("id"),
            call: CallId(1),
            tool: "list_dir".into(),
            arguments: "{}".into(),
            grant: "g".into(),
            session_taint: DataClass::Public,
            untrusted: false,
            untrusted_by: Vec::new(),
            expires: Timestamp::from_millis(1_789_632_300_000).expect("time"),
            session_offer: None,
            write: None,
        }
    }

    #[test]
    fn a_prefix_names_one_waiting_approval_or_is_refused() {
        let cards = [
            card("3f2a9c01aaaaaaaaaaaaaaaaaaaaaaaa"),
            card("3f2a9cffbbbbbbbbbbbbbbbbbbbbbbbb"),
            card("77aa00cccccccccccccccccccccccccc"),
        ];
        let one = |given| match find(&cards, given).expect("long enough") {
            Found::One(c) => Some(c.approval.clone()),
            Found::None | Found::Several(_) => None,
        };
        assert_eq!(one("77aa00").as_deref(), Some(cards[2].approval.as_str()));
        assert_eq!(one("3f2a9c01").as_deref(), Some(cards[0].approval.as_str()));
        assert_eq!(
            one("3f2a9cffbbbbbbbbbbbbbbbbbbbbbbbb").as_deref(),
            Some(cards[1].approval.as_str())
        );
        assert!(matches!(
            find(&cards, "3f2a9c").expect("long enough"),
            Found::Several(ids) if ids == [cards[0].approval.as_str(), cards[1].approval.as_str()]
        ));
        assert!(matches!(
            find(&cards, "000000").expect("long enough"),
            Found::None
        ));
        // Five characters are too few, even when they name one approval.
        assert!(matches!(find(&cards, "77aa0"), Err(Error::Usage(_))));
        // A prefix is matched among the waiting approvals only: with none waiting, none.
        assert!(matches!(find(&[], "77aa00").expect("long"), Found::None));
    }
}
