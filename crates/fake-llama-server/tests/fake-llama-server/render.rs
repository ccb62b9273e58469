//! The fixed ChatML-like template and the fake tokens (`render`).

use fake_llama_server::render::{
    Call, Msg, TOKEN_BYTES, common_prefix_tokens, render_body, render_prompt, split_chars,
    token_count, truncate_to_tokens,
};
use serde_json::json;

/// A message with only a role and a content (shared by the crate's tests).
pub fn msg(role: &str, content: &str) -> Msg {
    Msg {
        role: role.into(),
        content: content.into(),
        ..Msg::default()
    }
}

#[test]
fn renders_chatml_with_tools_calls_results_and_reasoning() {
    let assistant = Msg {
        role: "assistant".into(),
        content: "Let me look.".into(),
        reasoning: "Need weather.".into(),
        tool_calls: vec![Call {
            name: "get".into(),
            arguments: "{\"city\": \"P\"}".into(),
        }],
    };
    let messages = vec![
        msg("system", "Be brief."),
        msg("user", "Hi"),
        assistant,
        msg("tool", "18C"),
    ];
    let tools = vec![json!({"type": "function", "function": {"name": "get"}})];
    assert_eq!(
        render_prompt(&messages, &tools),
        "<|im_start|>system\nBe brief.\n\n# Tools\n<tools>\n\
         {\"function\":{\"name\":\"get\"},\"type\":\"function\"}\n</tools><|im_end|>\n\
         <|im_start|>user\nHi<|im_end|>\n\
         <|im_start|>assistant\n<think>\nNeed weather.\n</think>\nLet me look.\n\
         <tool_call>\n{\"name\": \"get\", \"arguments\": {\"city\": \"P\"}}\n</tool_call><|im_end|>\n\
         <|im_start|>tool\n18C<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(
        render_prompt(&[msg("system", "S"), msg("user", "U")], &[]),
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn a_replayed_reply_extends_the_cached_text() {
    let first = vec![msg("user", "Hi")];
    let reply = Msg {
        role: "assistant".into(),
        content: "Hello!".into(),
        ..Msg::default()
    };
    let cached = render_prompt(&first, &[]) + &render_body(&reply);
    let next = render_prompt(&[msg("user", "Hi"), reply, msg("user", "Bye")], &[]);
    assert!(next.starts_with(&cached));
    assert_eq!(
        common_prefix_tokens(&cached, &next),
        cached.len() / TOKEN_BYTES
    );
}

#[test]
fn counts_tokens_and_splits_on_character_boundaries() {
    assert_eq!(token_count(0), 0);
    assert_eq!(token_count(1), 1);
    assert_eq!(token_count(8), 2);
    assert_eq!(common_prefix_tokens("abcdefgh", "abcdefgX"), 1);
    assert_eq!(truncate_to_tokens("héllo", 1), "hél");
    assert_eq!(split_chars("héllo wo", 3), vec!["hél", "lo ", "wo"]);
    assert!(split_chars("", 3).is_empty());
}
