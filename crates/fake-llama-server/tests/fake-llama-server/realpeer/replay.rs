//! Real-peer checks of two fake behaviours (issue 12 point 4): a reply sampled with a token
//! split the tokenizer would not make loses the cache from that token when its text is
//! replayed, on both servers; and `/metrics` is the real server's, with `--metrics` and
//! without.

use serde_json::{Value, json};

use super::{fake, real, real_with, writeln_progress};
use crate::common::{Server, metric};

/// The text the model "sampled" oddly: `}}` is one token to SmolLM2's tokenizer.
const REPLY: &str = "Here it is: {\"a\": {\"b\": 1}} and done.";

/// The conversation before and after the reply; `tag` starts the system text, so that two
/// runs share no prefix worth loading from the real server's RAM prompt cache.
fn conversation(tag: &str, reply: Option<&str>) -> Vec<Value> {
    let mut m = vec![
        json!({ "role": "system", "content": format!("{tag} You are a helpful assistant.") }),
        json!({ "role": "user", "content": "Show me the JSON." }),
    ];
    if let Some(text) = reply {
        m.push(json!({ "role": "assistant", "content": text }));
        m.push(json!({ "role": "user", "content": "Thanks." }));
    }
    m
}

fn ok(response: &crate::common::Response, what: &str) -> Value {
    assert_eq!(
        response.status,
        200,
        "{what}: {}",
        String::from_utf8_lossy(&response.body)
    );
    response.json()
}

fn ids(v: &Value) -> Vec<i64> {
    v["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .map(|t| t.as_i64().or_else(|| t["id"].as_i64()).expect("token id"))
        .collect()
}

/// On the real server: the slot is filled (`/completion` with token ids) with the first
/// request's prompt and the reply as the model might have sampled it, `odd` choosing `}` `}`
/// for the `}}` the tokenizer makes; then the conversation goes on with the reply replayed
/// as text. Returns (`cache_n` of the replay, the tokens before the `}}`, the tokens filled).
fn real_replay(real: &Server, odd: bool) -> (u64, usize, usize) {
    let tag = if odd { "Odd." } else { "Even." };
    let prompt = ok(
        &real.post(
            "/apply-template",
            &json!({ "messages": conversation(tag, None) }),
        ),
        "apply-template",
    )["prompt"]
        .as_str()
        .expect("prompt")
        .to_owned();
    let tokenize = |text: &str| {
        ids(&ok(
            &real.post(
                "/tokenize",
                &json!({ "content": text, "parse_special": true }),
            ),
            "tokenize",
        ))
    };
    let mut filled = tokenize(&format!("{prompt}{REPLY}"));
    let (pair, single) = (tokenize("}}"), tokenize("}"));
    assert_eq!(
        (pair.len(), single.len()),
        (1, 1),
        "`}}}}` is one token, `}}` one"
    );
    let at = filled
        .iter()
        .rposition(|t| *t == pair[0])
        .expect("the reply's }} token");
    if odd {
        filled.splice(at..=at, [single[0], single[0]]);
    }
    let fill = json!({ "prompt": filled, "n_predict": 0, "id_slot": 0, "cache_prompt": true });
    ok(&real.post("/completion", &fill), "fill the slot");
    let replay = json!({ "messages": conversation(tag, Some(REPLY)), "max_tokens": 1,
                         "id_slot": 0, "cache_prompt": true });
    let body = ok(&real.chat(&replay), "replay");
    let cache_n = body["timings"]["cache_n"].as_u64().expect("cache_n");
    (cache_n, at, filled.len())
}

/// The same on the fake: its reply is scripted, `split_token` makes its sampling odd.
fn fake_replay(odd: bool) -> (u64, u64, u64) {
    let split = if odd { ", split_token = 3" } else { "" };
    let fake = Server::fake(&format!(
        "[[rule]]\nmatch = {{ turn = 1 }}\nanswer = {{ text = '{REPLY}'{split} }}\n"
    ));
    let first = ok(
        &fake.chat(&json!({ "messages": conversation("", None), "id_slot": 0 })),
        "fake first",
    );
    assert_eq!(first["choices"][0]["message"]["content"], REPLY);
    let n = |v: &Value| v.as_u64().expect("count");
    let replay = json!({ "messages": conversation("", Some(REPLY)), "id_slot": 0 });
    let body = ok(&fake.chat(&replay), "fake replay");
    (
        n(&body["timings"]["cache_n"]),
        n(&first["usage"]["prompt_tokens"]),
        n(&first["timings"]["predicted_n"]),
    )
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn a_reply_sampled_with_an_odd_split_loses_the_cache_from_there_on_both_servers() {
    let real = real();
    let (canonical, _, filled) = real_replay(&real, false);
    let (odd, before_split, _) = real_replay(&real, true);
    let _ = writeln_progress(&format!(
        "real: replay after a canonical reply keeps {canonical} of {filled} tokens, after \
         `}}` `}}` sampled {odd} ({before_split} tokens lie before it)"
    ));
    assert_eq!(canonical, filled as u64, "the whole filled slot is reused");
    assert_eq!(odd, before_split as u64, "the cache ends at the odd split");
    // The fake: its reply "Here it is: {"a": {"b": 1}} and done." is cut "Here", " it ",
    // "is: ", "{\"a\"", ": {\"", "b\": ", "1}} ", ...; split_token = 3 samples "{" "\"a\"".
    let (canonical, prompt, predicted) = fake_replay(false);
    assert_eq!(
        canonical,
        prompt + predicted - 1,
        "fake: prompt and reply reused"
    );
    let (odd, prompt, _) = fake_replay(true);
    assert_eq!(odd, prompt + 3, "fake: the cache ends at the odd split");
}

/// `/metrics` text without its values: the HELP and TYPE lines and the metric names.
fn metric_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| match l.split_once(' ') {
            Some((name, _)) if !l.starts_with('#') => name.to_owned(),
            _ => l.to_owned(),
        })
        .collect()
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn metrics_are_served_like_the_real_server_with_and_without_the_option() {
    // Without --metrics: the same 501 body.
    let (r, f) = (real().get("/metrics"), fake().get("/metrics"));
    assert_eq!((r.status, f.status), (501, 501));
    assert_eq!(r.json(), f.json());
    // With it: the same metrics, and both count the same request's tokens.
    let real = real_with(&["--metrics"]);
    let fake = Server::fake("[server]\nmetrics = true\n");
    let request = json!({ "messages": conversation("", None), "max_tokens": 8, "id_slot": 0 });
    for (who, server) in [("real", &real), ("fake", &fake)] {
        let body = ok(&server.chat(&request), who);
        let m = server.get("/metrics");
        assert_eq!(m.status, 200, "{who}");
        assert_eq!(
            m.header("content-type"),
            Some("text/plain; version=0.0.4"),
            "{who}"
        );
        let text = String::from_utf8_lossy(&m.body).into_owned();
        let count = |k: &str| body["timings"][k].as_f64().expect("count");
        assert_eq!(
            metric(&text, "prompt_tokens_total"),
            count("prompt_n"),
            "{who}"
        );
        assert_eq!(
            metric(&text, "tokens_predicted_total"),
            count("predicted_n"),
            "{who}"
        );
        assert_eq!(metric(&text, "requests_processing"), 0.0, "{who}");
    }
    let text = |s: &Server| String::from_utf8_lossy(&s.get("/metrics").body).into_owned();
    assert_eq!(metric_lines(&text(&fake)), metric_lines(&text(&real)));
}
