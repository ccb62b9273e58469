//! `bxctl verify --alert`: a run with a `FAIL` hands its `FAIL` lines, as printed, to
//! brokerd's admin side (`verify_alert`), which audits them and, with the gateway on, has
//! gatewayd post them in the owner's channel (docs/verify.md, docs/decisions.md V18). The
//! NixOS timer's unit passes it when the gateway is on. A run with no `FAIL` sends nothing.
//!
//! What became of the alert is one line on standard error (the journal under the timer):
//! the run's exit code stays the checks' own (1, with a `FAIL`), whether or not the alert
//! went, so the unit fails either way and `--json` stays one line on standard output.

use config::Config;
use proto::Message;
use proto::alert::{
    AlertOutcome, INTERVAL, MAX_LINE_BYTES, MAX_LINES, MAX_WAIT, VerifyAlert, VerifyAlerted,
};

use super::access::{self, Side, Trouble};
use super::report::{self, Check, Level};

/// The `FAIL` lines of `checks`, within the bounds brokerd takes: each cut to
/// [`MAX_LINE_BYTES`] (with `…`), and past [`MAX_LINES`] the last says how many more.
pub fn lines(checks: &[Check]) -> Vec<String> {
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c.level == Level::Fail)
        .map(|c| cut(report::line(c)))
        .collect();
    if failed.len() <= MAX_LINES {
        return failed;
    }
    let more = failed.len() - (MAX_LINES - 1);
    let mut kept: Vec<String> = failed.into_iter().take(MAX_LINES - 1).collect();
    kept.push(format!(
        "… and {more} more FAIL line(s): `journalctl -u boxmaker-verify -p err` shows them"
    ));
    kept
}

fn cut(line: String) -> String {
    if line.len() <= MAX_LINE_BYTES {
        return line;
    }
    let mut end = MAX_LINE_BYTES - '…'.len_utf8();
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

/// Hands the `FAIL` lines of `checks` to brokerd, when there are any, and says on standard
/// error what became of them.
pub fn send(config: &Config, checks: &[Check]) {
    let lines = lines(checks);
    if lines.is_empty() {
        return;
    }
    let n = lines.len();
    let msg = Message::VerifyAlert(VerifyAlert { lines });
    let (level, said) = match access::call(config, Side::Admin, msg) {
        Ok(Message::VerifyAlerted(a)) => taken(n, &a),
        Ok(other) => (
            Level::Warn,
            format!("not posted: brokerd answered {}", other.kind()),
        ),
        Err(
            Trouble::Down { said, .. } | Trouble::Closed { said, .. } | Trouble::Broke { said },
        ) => (Level::Warn, format!("not posted: {said}")),
    };
    report::say(level, &format!("verify: alert: {said}"));
}

/// What brokerd did with the `n` lines, for the owner.
fn taken(n: usize, a: &VerifyAlerted) -> (Level, String) {
    let seq = a.seq;
    match a.outcome {
        AlertOutcome::Forwarded => (
            Level::Ok,
            format!(
                "{n} FAIL line(s) handed to brokerd, which posts them in the owner's channel \
                 (tried again while gatewayd cannot, for up to {} hours; audit seq {seq})",
                MAX_WAIT.as_secs() / 3600
            ),
        ),
        AlertOutcome::Queued => (
            Level::Warn,
            format!(
                "{n} FAIL line(s) handed to brokerd; its link to gatewayd is down, so they are \
                 posted once it is back, if brokerd runs until then and within {} hours (audit seq \
                 {seq})",
                MAX_WAIT.as_secs() / 3600
            ),
        ),
        AlertOutcome::Held => (
            Level::Warn,
            match (a.waiting, a.next) {
                (Some(w), _) => format!(
                    "not posted: the alert brokerd took earlier (audit seq {w}) still waits to \
                     be posted, and brokerd keeps at most one waiting; it tries that one until \
                     it is posted or {} hours old (audit seq {seq})",
                    MAX_WAIT.as_secs() / 3600
                ),
                (None, next) => format!(
                    "not posted: brokerd took or posted a failed verification less than {} \
                     minutes ago; the next may go from {} (audit seq {seq})",
                    INTERVAL.as_secs() / 60,
                    next.map_or_else(|| "later".to_owned(), |t| t.to_string())
                ),
            },
        ),
        AlertOutcome::NoGateway => (
            Level::Warn,
            format!(
                "not posted: the configuration has no [gateway] (brokerd audited the {n} FAIL \
                 line(s), seq {seq})"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::Part;

    #[test]
    fn only_fail_lines_go_each_within_the_bounds_and_the_rest_counted() {
        let ok = Check::ok(Part::State, "audit", "good");
        let warn = Check::warn(Part::Model, "cache-reuse", "not reported");
        assert!(lines(&[ok.clone(), warn.clone()]).is_empty());
        let fail = Check::fail(Part::Units, "x.service", "loosened\nok    fake");
        let got = lines(&[ok, fail.clone(), warn]);
        assert_eq!(
            got,
            vec!["FAIL  units  x.service: loosened\\u{000a}ok    fake".to_owned()]
        );
        let long = Check::fail(Part::Flows, "secret_out", "é".repeat(MAX_LINE_BYTES));
        let got = lines(&[long]);
        assert!(
            got[0].len() <= MAX_LINE_BYTES && got[0].ends_with('…'),
            "{}",
            got[0].len()
        );
        let many = vec![fail; MAX_LINES + 3];
        let got = lines(&many);
        assert_eq!(got.len(), MAX_LINES);
        assert!(
            got[MAX_LINES - 1].starts_with("… and 4 more FAIL line(s)"),
            "{got:?}"
        );
        assert_eq!(proto::alert::check(&got), Ok(()));
    }

    /// A held alert says why: one taken or posted within the interval (and when the next
    /// may go), or one that still waits to be posted (and which).
    #[test]
    fn a_held_alert_says_whether_one_went_recently_or_one_still_waits() {
        let held = |next, waiting| VerifyAlerted {
            seq: 9,
            outcome: AlertOutcome::Held,
            next,
            waiting,
        };
        let at = proto::Timestamp::parse("2026-12-02T04:10:12.345Z").expect("time");
        let (level, said) = taken(1, &held(Some(at), None));
        assert_eq!(level, Level::Warn);
        assert_eq!(
            said,
            "not posted: brokerd took or posted a failed verification less than 10 minutes \
             ago; the next may go from 2026-12-02T04:10:12.345Z (audit seq 9)"
        );
        let (level, said) = taken(1, &held(None, Some(7)));
        assert_eq!(level, Level::Warn);
        assert_eq!(
            said,
            "not posted: the alert brokerd took earlier (audit seq 7) still waits to be posted, \
             and brokerd keeps at most one waiting; it tries that one until it is posted or 24 \
             hours old (audit seq 9)"
        );
    }
}
