//! loopd's CacheLoss record against the fake's token-level cache: an answer the model
//! "sampled" with a split its tokenizer would not make (the script's `split_token`) costs
//! the cache of the replayed answer, and that is recorded too, not only a loss in the
//! previous prompt.

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
    let losses: Vec<(u64, u64)> = records(&home, &session, 0)
        .into_iter()
        .filter_map(|r| match r {
            LogRecord::CacheLoss { expected, got, .. } => Some((expected, got)),
            _ => None,
        })
        .collect();
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
