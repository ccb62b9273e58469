//! The `replay` check: a few turns through the whole stack (bxctl → loopd → inferproxy →
//! llama-server), in a session of their own, and the prefill each request wasted.
//!
//! loopd measures it: after each answer it knows what the slot holds (the prompt and the
//! answer but its last token: `cache_n + prompt_n + predicted_n - 1` of the server's
//! `timings`), and when the next request of the session reuses less (`cache_n`), it logs a
//! `cache_loss` record with both. What the owner's template does to a replayed history (an
//! earlier answer rendered otherwise than it was cached: reasoning dropped, text
//! re-tokenized) shows there. The check reads the session's records back from loopd and
//! holds every request to 8 tokens, the bound the real-peer tier's 20-turn session is held
//! to (docs/performance.md). llama.cpp's server sends `timings` with every answer, so a
//! request with no `cache_loss` record lost nothing; that holds only when `/props` showed
//! llama.cpp's server, and the check says so otherwise.
//!
//! loopd pins a session to a slot by a hash of its id, so another session (another verify,
//! a job's run, a chat) may share the replay's slot, and its request between two of the
//! replay's evicts what the slot held: that loss says nothing of the template. loopd counts
//! the requests it sends to each slot and marks such a loss `shared`; the check does not
//! hold a shared loss to the bound, and says how many requests it could not measure so. When
//! no request after the first could be measured, it warns: verify again when the box is
//! idle.
//!
//! The messages ask for no tool. If the model calls one anyway, bxctl hangs up at once
//! (loopd withdraws a call that waits for an approval; one already decided runs, as any
//! call the grants allow), and the line says so.

use std::net::Shutdown;

use config::Config;
use proto::chat::{ChatEvent, ChatSend, SessionShow, TurnEnd};
use proto::{LogRecord, Message, SessionId};

use super::access::{self, Side};
use super::model::Props;
use super::report::{Check, Part};

const P: Part = Part::Model;

/// The bound on wasted prefill per request (issue 12's, kept by the real-peer tier).
pub const WASTE_BOUND: u64 = 8;

/// The owner's turns sent.
pub const TURNS: u32 = 3;

/// What one turn of the replay says.
pub fn message(turn: u32) -> String {
    format!(
        "boxmaker verify, turn {turn} of {TURNS}: a short exchange that measures the prompt \
         cache. Please answer with one short sentence, and call no tool."
    )
}

/// How the turns went.
#[derive(Debug, Default)]
struct Sent {
    session: Option<SessionId>,
    /// A tool the model asked for, if any (the turn was cut there).
    tool: Option<String>,
    /// A turn that did not end with an answer: why.
    unanswered: Option<String>,
    compacted: bool,
    turns: u32,
}

pub fn check(config: &Config, props: Option<&Props>) -> Check {
    let mut sent = Sent::default();
    for turn in 1..=TURNS {
        if let Err(c) = one_turn(config, turn, &mut sent) {
            return c;
        }
        if sent.tool.is_some() || sent.unanswered.is_some() || sent.compacted {
            break;
        }
    }
    let Some(session) = sent.session.clone() else {
        return Check::fail(P, "replay", "loopd started no session for the replay");
    };
    let records = match access::call(
        config,
        Side::Chat,
        Message::SessionShow(SessionShow {
            session: session.clone(),
            epoch: None,
        }),
    ) {
        Ok(Message::SessionRecords(r)) => r.records,
        Ok(other) => return Check::fail(P, "replay", format!("loopd answered {}", other.kind())),
        Err(t) => return access::judged(P, "replay", t),
    };
    judge(&sent, &records, props.is_some(), &session)
}

fn one_turn(config: &Config, turn: u32, sent: &mut Sent) -> Result<(), Check> {
    let text = message(turn);
    // Registered as the owner's words, as `bxctl chat` does; without it the turn still runs.
    let _ = access::as_chat_peer(config, || {
        owner_words::register(&config.sockets.chat_broker_sock(), &text)
    });
    let mut conn =
        access::connect(config, Side::Chat).map_err(|t| access::judged(P, "replay", t))?;
    let handle = conn.handle().ok();
    let msg = Message::ChatSend(ChatSend {
        session: sent.session.clone(),
        text,
        cancel_on_hangup: true,
    });
    let mut tool = None;
    let reply = conn.call(1, msg, |env| match &env.msg {
        Message::ChatEvent(ChatEvent::Started { session, .. }) => {
            sent.session = Some(session.clone());
        }
        Message::ChatEvent(ChatEvent::Compacted { .. }) => sent.compacted = true,
        Message::ChatEvent(ChatEvent::ToolCall { tool: name, .. }) if tool.is_none() => {
            tool = Some(name.clone());
            // Hanging up cancels the turn: loopd withdraws a call waiting for approval.
            if let Some(h) = &handle {
                let _ = h.shutdown(Shutdown::Both);
            }
        }
        _ => {}
    });
    sent.turns = turn;
    if tool.is_some() {
        sent.tool = tool;
        return Ok(());
    }
    let reply = reply.map_err(|e| {
        Check::fail(P, "replay", format!("turn {turn}: loopd: {e}"))
            .help("loopd's log says more (under systemd: `journalctl -u boxmaker-loopd`)")
    })?;
    match reply.msg {
        Message::ChatReply(r) => {
            sent.session = Some(r.session);
            match r.end {
                TurnEnd::Answered | TurnEnd::Cut { .. } => {}
                TurnEnd::ModelError { detail } => {
                    sent.unanswered = Some(format!("the model could not answer: {detail}"));
                }
                TurnEnd::ToolCap { calls } => {
                    sent.unanswered = Some(format!("the turn ended after {calls} tool calls"));
                }
                TurnEnd::Cancelled => sent.unanswered = Some("the turn was cancelled".into()),
            }
            Ok(())
        }
        Message::Error(e) => Err(Check::fail(
            P,
            "replay",
            format!(
                "turn {turn}: loopd refused: {}: {}",
                e.code.name(),
                e.detail
            ),
        )),
        other => Err(Check::fail(
            P,
            "replay",
            format!("turn {turn}: loopd answered {}", other.kind()),
        )),
    }
}

/// The verdict from the turns and the session's records.
fn judge(sent: &Sent, records: &[LogRecord], llama: bool, session: &SessionId) -> Check {
    let requests = records
        .iter()
        .filter(|r| matches!(r, LogRecord::Assistant { .. }))
        .count();
    // Each loss: its request, and what the slot held and the request reused.
    let mut losses: Vec<(usize, u64, u64)> = Vec::new();
    // Requests after another session's request on the slot: not measured.
    let mut shared = 0usize;
    let mut n = 0usize;
    for r in records {
        match r {
            LogRecord::Assistant { .. } => n += 1,
            LogRecord::CacheLoss { shared: true, .. } => shared += 1,
            LogRecord::CacheLoss { expected, got, .. } => losses.push((n + 1, *expected, *got)),
            _ => {}
        }
    }
    let over: Vec<&(usize, u64, u64)> = losses
        .iter()
        .filter(|(_, expected, got)| expected.saturating_sub(*got) > WASTE_BOUND)
        .collect();
    if let Some(&&(request, expected, got)) = over.first() {
        return Check::fail(
            P,
            "replay",
            format!(
                "request {request} of the replay (session {session}) processed again {} tokens \
                 of what the slot held (it held {expected}, the request reused {got}; the \
                 bound is {WASTE_BOUND}){}",
                expected - got,
                match over.len() {
                    1 => String::new(),
                    n => format!("; {n} requests of the replay went over it"),
                }
            ),
        )
        .help(
            "the server renders the replayed history otherwise than it cached the answer: a \
             chat template that drops earlier reasoning or rewrites earlier turns, or answers \
             it re-tokenizes otherwise; try the template the real-peer tier uses \
             (tests/realpeer/chatml-tools.jinja) or the model's own with --jinja \
             (docs/verify.md)",
        );
    }
    let worst = losses
        .iter()
        .max_by_key(|(_, expected, got)| expected.saturating_sub(*got));
    let wasted = worst.map_or(0, |(_, e, g)| e.saturating_sub(*g));
    let measured = requests.saturating_sub(1).saturating_sub(shared);
    let found = format!(
        "{} turn(s) through loopd, inferproxy and llama-server (session {session}): {measured} \
         request(s) after the first measured, the most wasted {wasted} token(s) of prefill \
         (bound {WASTE_BOUND}){}",
        sent.turns,
        match shared {
            0 => String::new(),
            n => format!(
                "; {n} not measured: another session's request used the slot before it, and \
                 its loss may not be the template's"
            ),
        }
    );
    if let Some(tool) = &sent.tool {
        return Check::warn(
            P,
            "replay",
            format!("{found}; the model called the tool {tool} in turn {}, and the replay stopped there", sent.turns),
        )
        .help("the replay asks for no tool; verify again, or see the session with `bxctl sessions`");
    }
    if let Some(why) = &sent.unanswered {
        return Check::fail(P, "replay", format!("{found}; turn {}: {why}", sent.turns))
            .help("loopd's log says more (under systemd: `journalctl -u boxmaker-loopd`)");
    }
    if sent.compacted {
        return Check::warn(
            P,
            "replay",
            format!("{found}; the context filled and loopd compacted it during the replay"),
        )
        .help("a replay this short fills the context only when it is tiny: see the `props` line");
    }
    if !llama {
        return Check::warn(
            P,
            "replay",
            format!("{found}; /props did not show llama.cpp's server, which alone is known to report what loopd measures by"),
        )
        .help("see the `props` line");
    }
    if measured == 0 && shared > 0 {
        return Check::warn(
            P,
            "replay",
            format!("{found}; the replay could not be measured: another session shared its slot"),
        )
        .help("a verify, a job's run or a chat used the slot meanwhile; verify again when the box is idle");
    }
    if measured == 0 {
        return Check::warn(P, "replay", format!("{found}: nothing to measure"));
    }
    Check::ok(P, "replay", found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::Timestamp;

    fn answer() -> LogRecord {
        LogRecord::Assistant {
            time: Timestamp::now(),
            content: Some("ok".into()),
            reasoning_content: None,
            tool_calls: Vec::new(),
            witness: None,
        }
    }

    fn loss(expected: u64, got: u64) -> LogRecord {
        LogRecord::CacheLoss {
            time: Timestamp::now(),
            expected,
            got,
            shared: false,
        }
    }

    /// A loss after another session's request on the slot.
    fn shared_loss(expected: u64, got: u64) -> LogRecord {
        LogRecord::CacheLoss {
            time: Timestamp::now(),
            expected,
            got,
            shared: true,
        }
    }

    fn sent(turns: u32) -> Sent {
        Sent {
            turns,
            ..Sent::default()
        }
    }

    #[test]
    fn a_loss_above_the_bound_fails_and_names_its_request() {
        let s = SessionId::new("s-20261201-0123456789abcdef").expect("id");
        let records = [answer(), loss(50, 45), answer(), loss(80, 60), answer()];
        let c = judge(&sent(3), &records, true, &s);
        assert_eq!(c.level, super::super::report::Level::Fail, "{}", c.said);
        assert!(c.said.starts_with("request 3 of the replay"), "{}", c.said);
        assert!(c.said.contains("processed again 20 tokens"), "{}", c.said);
        let twice = [answer(), loss(50, 30), answer(), loss(80, 60), answer()];
        let c = judge(&sent(3), &twice, true, &s);
        assert!(c.said.starts_with("request 2 of the replay"), "{}", c.said);
        assert!(
            c.said.ends_with("; 2 requests of the replay went over it"),
            "{}",
            c.said
        );
        let within = [answer(), loss(50, 42), answer(), answer()];
        let c = judge(&sent(3), &within, true, &s);
        assert_eq!(c.level, super::super::report::Level::Ok, "{}", c.said);
        assert!(c.said.contains("the most wasted 8 token(s)"), "{}", c.said);
        // Without llama.cpp's /props nothing says the server reported what loopd measures.
        let c = judge(&sent(3), &[answer(), answer(), answer()], false, &s);
        assert_eq!(c.level, super::super::report::Level::Warn, "{}", c.said);
    }

    #[test]
    fn a_loss_after_another_sessions_request_is_not_held_to_the_bound() {
        use super::super::report::Level;
        let s = SessionId::new("s-20261201-0123456789abcdef").expect("id");
        // The container tier's: request 3 lost 99 tokens after another session used the slot.
        let records = [answer(), answer(), shared_loss(1176, 1077), answer()];
        let c = judge(&sent(3), &records, true, &s);
        assert_eq!(c.level, Level::Ok, "{}", c.said);
        assert!(
            c.said.contains(": 1 request(s) after the first measured"),
            "{}",
            c.said
        );
        assert!(
            c.said.contains("; 1 not measured: another session's"),
            "{}",
            c.said
        );
        assert!(c.said.contains("the most wasted 0 token(s)"), "{}", c.said);
        // The same loss with the slot to itself is the template's.
        let alone = [answer(), answer(), loss(1176, 1077), answer()];
        let c = judge(&sent(3), &alone, true, &s);
        assert_eq!(c.level, Level::Fail, "{}", c.said);
        assert!(c.said.starts_with("request 3 of the replay"), "{}", c.said);
        // A shared loss does not hide an unshared one over the bound.
        let both = [
            answer(),
            shared_loss(500, 10),
            answer(),
            loss(80, 60),
            answer(),
        ];
        let c = judge(&sent(3), &both, true, &s);
        assert_eq!(c.level, Level::Fail, "{}", c.said);
        assert!(c.said.starts_with("request 3 of the replay"), "{}", c.said);
        // Nothing measured: every request after the first followed another session's.
        let all = [
            answer(),
            shared_loss(50, 10),
            answer(),
            shared_loss(80, 10),
            answer(),
        ];
        let c = judge(&sent(3), &all, true, &s);
        assert_eq!(c.level, Level::Warn, "{}", c.said);
        assert!(
            c.said
                .contains("the replay could not be measured: another session shared its slot"),
            "{}",
            c.said
        );
        assert!(
            c.said.contains(": 0 request(s) after the first measured"),
            "{}",
            c.said
        );
    }
}
