//! A call's result as the script says it.

use serde_json::json;

use crate::script::{Block, Reply};
use crate::serve::reply;

/// `text_if_arguments` answers its text only to a call whose arguments hold its needle.
#[test]
fn a_text_if_arguments_block_answers_only_the_calls_that_ask_for_it() {
    let r = Reply {
        content: vec![
            Block::Text("always\n".into()),
            Block::TextIfArguments("bxmcp-source".into(), "only then\n".into()),
        ],
        is_error: false,
        error: None,
    };
    let texts = |args| {
        let v = reply(&r, &args).expect("a result");
        v["content"]
            .as_array()
            .expect("content")
            .iter()
            .map(|b| b["text"].as_str().expect("text").to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        texts(json!({"data": "bxmcp-source"})),
        ["always\n", "only then\n"]
    );
    assert_eq!(texts(json!({"data": "Keep this for me"})), ["always\n"]);
    // Parsed from a script as the hostile self-test writes it.
    let block: Block =
        serde_json::from_value(json!({"text_if_arguments": ["a", "b"]})).expect("a block");
    assert!(matches!(block, Block::TextIfArguments(n, t) if n == "a" && t == "b"));
}
