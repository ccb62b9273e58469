//! loopd's CacheLoss record against the fake's token-level cache: an answer the model
//! "sampled" with a split its tokenizer would not make (the script's `split_token`) costs
//! the cache of the replayed answer, and that is recorded too, not only a loss in the
//! previous prompt. A loss after another session's request on the same slot (the fake has
//! one, so every session shares it) is recorded `shared`: the other prompt evicted the cache.

use proto::LogRecord;
use proto::chat::TurnEnd;
use stack::Home;

use crate::agent::records;

const SCRIPT: &str = r#"
[server]
n_ctx = 16384

[[rule]]
match = { user_contains = "odd" }
answer = { text = "An answer sampled oddly: {\"a\": {\"b\": 1}} and done.", split_token = 4 }

[default]
text = "A plain answer."
"#;

#[test]
fn an_answer_that_replays_into_other_tokens_is_a_cache_loss() {
    let home = Home::new("cache-loss", "");
    let agent = home.start_agent(SCRIPT, "");
    let first = agent.chat(None, "hello");
    let session = first.reply.session.clone();
    for text in ["an odd one", "and on"] {
        let t = agent.chat(Some(&session), text);
        assert_eq!(t.reply.end, TurnEnd::Answered);
    }
    let requests = agent.requests();
    let list = requests.as_array().expect("request log");
    assert_eq!(list.len(), 3);
    let losses = losses(&home, &session);
    // The session had the slot to itself.
    assert!(losses.iter().all(|l| !l.2), "{losses:?}");
    // The exact replay of the plain answer lost nothing; the odd answer's replay did, from
    // its split token on.
    let got = list[2]["cache_n"].as_u64().expect("cache_n");
    assert_eq!(losses.len(), 1, "{losses:?}");
    assert_eq!(losses[0].1, got);
    assert!(
        losses[0].0 > got && got >= list[1]["prompt_tokens"].as_u64().expect("prompt"),
        "the loss lies in the replayed answer: {losses:?}, {requests}"
    );
}

/// A session's CacheLoss records: what the slot held, what the request reused, and whether
/// another session used the slot in between.
fn losses(home: &Home, session: &proto::SessionId) -> Vec<(u64, u64, bool)> {
    records(home, session, 0)
        .into_iter()
        .filter_map(|r| match r {
            LogRecord::CacheLoss {
                expected,
                got,
                shared,
                ..
            } => Some((expected, got, shared)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_loss_after_another_sessions_request_on_the_slot_is_shared() {
    let home = Home::new("cache-shared", "");
    // One slot (the fake's `total_slots`, spelled out): every session is pinned to it.
    let script = SCRIPT.replace("[server]\n", "[server]\ntotal_slots = 1\n");
    let agent = home.start_agent(&script, "");
    let a = agent.chat(None, "hello").reply.session;
    let t = agent.chat(Some(&a), "and on");
    assert_eq!(t.reply.end, TurnEnd::Answered);
    let b = agent.chat(None, "another session").reply.session;
    assert_ne!(a, b);
    let t = agent.chat(Some(&a), "and on again");
    assert_eq!(t.reply.end, TurnEnd::Answered);
    let requests = agent.requests();
    let list = requests.as_array().expect("request log");
    assert_eq!(list.len(), 4);
    assert!(
        list.iter().all(|r| r["slot"] == 0),
        "one slot serves them all: {requests}"
    );
    // The fake evicted A's cache for B's prompt: A's last request reused only what the two
    // prompts share, less than its slot held after A's answer.
    let a_losses = losses(&home, &a);
    assert_eq!(a_losses.len(), 1, "{a_losses:?}");
    let (expected, got, shared) = a_losses[0];
    assert_eq!(got, list[3]["cache_n"].as_u64().expect("cache_n"));
    assert!(got < expected, "{a_losses:?}");
    assert!(shared, "B's request came between A's: {a_losses:?}");
    // B's only request followed nothing of its own: no loss to record.
    assert!(losses(&home, &b).is_empty());
}
