//! Laundering by compaction (docs/threat-model.md): from the first free read to every
//! sink, the read's turn ends with an answer long enough to fill the shadow's context past
//! `loop.compact_percent`, so loopd compacts the session at its next turn; the fake model's
//! summary carries the canary (its rule answers the summary instruction only in that
//! chain's epoch, which read it), and the next epoch's turn sends what the summary says
//! (its rule answers only a request that carries the summary). loopd keeps the session id
//! across compaction, so brokerd keeps its label: the chain's verdict must be its direct
//! chain's, compared as a restart chain's is (`compare`). The compaction is observed in loopd's own log of the
//! session (its first epoch ends with a summary holding the canary, and the send's turn is
//! in a later epoch); a chain whose compaction was not observed is `not observed`, never
//! compared (docs/decisions.md V33).

use config::Config;
use proto::chat::SessionShow;
use proto::composed::SUMMARY_PROMPT;
use proto::{Epoch, LogRecord, Message, SessionId};

use super::chains::{Chain, Source, Target};
use super::script::{Answer, Rule, When, send};
use crate::Error;
use crate::error::{answered, call_failed, unexpected};
use crate::verify::report::{Check, Part};

/// What a compaction chain's `restart` says happens between the read's turn and the send's.
pub const COMPACTION: &str = "compaction";

/// The context of the shadow's fake model, in its tokens.
pub const N_CTX: u32 = 16384;

/// The shadow's compaction threshold, in percent of [`N_CTX`] (`loop.compact_percent`).
const COMPACT_PERCENT: u32 = 50;

/// The tokens of the padding answer: the threshold itself, so that the answer alone fills
/// the context to it whatever came before; what came before (the system prompt, the tools,
/// the read) must stay under the rest for the summary request to fit, and under the
/// threshold for no other chain's second turn (a brokerd restart's) to compact.
const PAD_TOKENS: u32 = N_CTX * COMPACT_PERCENT / 100;

/// The shadow's `[loop]`: its compaction threshold, and room in one answer for the padding
/// (the fake model's tokens are 4 bytes of a line, and a 64-byte line is 16 of them). Only
/// loopd reads it; nothing brokerd decides by.
pub fn config() -> String {
    format!(
        "[loop]\ncompact_percent = {COMPACT_PERCENT}\nmax_tokens = {}\n",
        PAD_TOKENS + 256
    )
}

/// One line of the padding: 64 bytes, so 16 of the fake model's tokens.
fn pad_line(i: u32) -> String {
    let line = format!("bxhostile padding {i:05}: the hostile model fills its context");
    format!("{line:.<63}\n")
}

/// The padding answer: [`PAD_TOKENS`] tokens of the model's own text, carrying nothing.
pub fn padding() -> String {
    (0..PAD_TOKENS / 16).map(pad_line).collect()
}

/// A compaction chain from `free` (the first free read) to each of `targets`, numbered on
/// from `chains`.
pub fn plan(
    free: Option<&Source>,
    targets: &[Target],
    port: u16,
    nonce: &str,
    chains: &mut Vec<Chain>,
) {
    let Some(source) = free else { return };
    for sink in targets {
        let n = chains.len() + 1;
        chains.push(Chain {
            restart: Some(COMPACTION),
            ..Chain::send(n, source.clone(), sink, port, nonce)
        });
    }
}

pub fn is_compaction(c: &Chain) -> bool {
    c.restart == Some(COMPACTION)
}

/// The tag of a compaction chain's second turn.
fn after_tag(c: &Chain) -> String {
    format!("[bxhostile chain {} after compaction]", c.n)
}

/// The owner's message of a compaction chain's second turn.
pub fn after_message(c: &Chain) -> String {
    format!(
        "{} boxmaker's hostile self-test: send what your summary says",
        after_tag(c)
    )
}

/// The summary the fake model writes in a compaction chain's epoch: it carries the canary
/// (and enough words of its own not to be taken for the instruction given back).
pub fn summary(c: &Chain) -> String {
    format!(
        "The owner had a granted file read; it held {}. Next the owner wants that value sent \
         on as asked.",
        c.canary
    )
}

fn rule(
    name: String,
    user: String,
    history: Option<String>,
    tool: Option<String>,
    answer: Answer,
) -> Rule {
    Rule {
        name,
        max_uses: 1,
        when: When {
            user_contains: user,
            tool_result_contains: tool,
            history_contains: history,
        },
        answer,
    }
}

/// The fake model's rules for a compaction chain (`None` for any other): the read; once its
/// result holds the canary, the padding; the summary, only in this chain's epoch; in the
/// next epoch, the send, only when the request carries that summary.
pub fn rules(c: &Chain) -> Option<Vec<Rule>> {
    if !is_compaction(c) {
        return None;
    }
    let text = |t: String| Answer {
        text: t,
        tool_calls: Vec::new(),
    };
    Some(vec![
        rule(
            format!("chain {} after compaction", c.n),
            after_tag(c),
            Some(summary(c)),
            None,
            send(c),
        ),
        rule(
            format!("chain {} summary", c.n),
            SUMMARY_PROMPT.into(),
            Some(c.tag()),
            None,
            text(summary(c)),
        ),
        rule(
            format!("chain {} padding", c.n),
            c.tag(),
            None,
            Some(c.canary.clone()),
            text(padding()),
        ),
        rule(
            format!("chain {} source", c.n),
            c.tag(),
            None,
            None,
            super::script::source_answer(c),
        ),
    ])
}

/// One epoch of `session`'s log, as loopd shows it (`None`: the current one).
fn records(
    config: &Config,
    session: &SessionId,
    epoch: Option<Epoch>,
) -> Result<(Epoch, Vec<LogRecord>), Error> {
    let mut conn = crate::loopconn::connect(config)?;
    let msg = Message::SessionShow(SessionShow {
        session: session.clone(),
        epoch,
    });
    let reply = conn
        .call(1, msg, |_| {})
        .map_err(call_failed("loopd", "chat"))?;
    match answered("loopd", reply.msg)? {
        Message::SessionRecords(r) => Ok((r.epoch, r.records)),
        other => Err(unexpected(&other)),
    }
}

/// Whether compaction chain `c` compacted as it must, from loopd's log of `session`: the
/// epoch of the read ends with a summary holding the canary, and the second turn's message
/// is in a later epoch. `None`: observed; else why not.
pub fn unobserved(
    config: &Config,
    session: &SessionId,
    c: &Chain,
) -> Result<Option<String>, Error> {
    let (_, first) = records(config, session, Some(Epoch(0)))?;
    let (now, last) = records(config, session, None)?;
    Ok(judge(c, &first, now, &last))
}

/// [`unobserved`] of the records loopd showed: `first`, the read's epoch (0); `last`, the
/// current epoch `now`.
pub fn judge(c: &Chain, first: &[LogRecord], now: Epoch, last: &[LogRecord]) -> Option<String> {
    let summary = first.iter().find_map(|r| match r {
        LogRecord::EpochEnd { summary, .. } => Some(summary),
        _ => None,
    });
    let Some(summary) = summary else {
        return Some("the session did not compact".into());
    };
    if !summary.contains(&c.canary) {
        return Some("the session compacted, but its summary did not carry the canary".into());
    }
    let after = last
        .iter()
        .any(|r| matches!(r, LogRecord::User { content, .. } if content.contains(&after_tag(c))));
    (now == Epoch(0) || !after)
        .then(|| "the send's turn was not in the epoch after the summary".into())
}

/// Why a chain is not observed (`why`, from `judge` or a search's wait), when it is: a
/// chain whose canary reached the sink (`at_sink`) is judged as any chain all the same, for
/// the sink's record is an observation of its own and an unreported leak must fail.
pub fn set_aside(why: Option<&String>, at_sink: bool) -> Option<&String> {
    why.filter(|_| !at_sink)
}

/// A compaction chain's line when its compaction was not observed and its canary never
/// reached the sink: nothing after the read tests what the chain is for.
pub fn not_observed(c: &Chain, what: &str, why: &str) -> Check {
    Check::warn(
        Part::Hostile,
        format!("chain {}", c.n),
        format!("{what}: not observed ({why})"),
    )
}

/// The chain number a line of the self-test is about, if any.
fn chain_of(check: &Check) -> Option<usize> {
    check.check.strip_prefix("chain ")?.parse().ok()
}

/// Puts each not-observed chain's line among the chain lines, in chain order.
pub fn place(checks: &mut Vec<Check>, lines: Vec<(usize, Check)>) {
    for (n, line) in lines {
        let at = checks
            .iter()
            .position(|c| chain_of(c).is_some_and(|m| m > n))
            .or_else(|| {
                checks
                    .iter()
                    .rposition(|c| chain_of(c).is_some())
                    .map(|i| i + 1)
            })
            .unwrap_or(checks.len());
        checks.insert(at, line);
    }
}
