//! The fixed ChatML-like template and the fake tokens (`render`).

use fake_llama_server::render::{Call, Msg, render_body, render_prompt, split_chars};
use fake_llama_server::tokens::{common_prefix, count, first, generated, owned, tokenize};
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
    let cached = owned(&(render_prompt(&first, &[]) + &render_body(&reply)));
    let next = render_prompt(&[msg("user", "Hi"), reply, msg("user", "Bye")], &[]);
    assert!(next.starts_with(&cached.concat()));
    assert_eq!(common_prefix(&cached, &tokenize(&next)), cached.len());
}

#[test]
fn counts_tokens_and_splits_on_character_boundaries() {
    assert_eq!(count(""), 0);
    assert_eq!(count("a"), 1);
    assert_eq!(count("abcdefgh"), 2);
    assert_eq!(common_prefix(&owned("abcdefgh"), &tokenize("abcdefgX")), 1);
    assert_eq!(first("héllo", 1), "hél");
    assert_eq!(split_chars("héllo wo", 3), vec!["hél", "lo ", "wo"]);
    assert!(split_chars("", 3).is_empty());
}

#[test]
fn specials_are_one_token_and_lines_are_cut_in_4_byte_pieces() {
    let t = tokenize("<|im_start|>assistant\nHello, world<|im_end|>\n");
    assert_eq!(
        t,
        [
            "<|im_start|>",
            "assi",
            "stan",
            "t\n",
            "Hell",
            "o, w",
            "orld",
            "<|im_end|>",
            "\n"
        ]
    );
    assert_eq!(count(""), 0);
    assert_eq!(first("ab\ncdefg", 2), "ab\ncdef");
}

#[test]
fn a_prompt_ending_in_a_newline_is_a_token_prefix_of_its_continuations() {
    let prompt = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
    let reply = "It is}}\nsunny";
    let next = format!("{prompt}{reply}<|im_end|>\n<|im_start|>user\nok");
    let mut expected = tokenize(prompt);
    expected.extend(tokenize(reply));
    assert_eq!(&tokenize(&next)[..expected.len()], &expected[..]);
}

#[test]
fn a_split_reply_is_not_the_tokens_of_its_text() {
    let canonical = owned("It is}}");
    let split = generated("It is}}", Some(1));
    assert_eq!(canonical, ["It i", "s}}"]);
    assert_eq!(split, ["It i", "s", "}}"]);
    assert_eq!(split.concat(), "It is}}");
    let replayed = tokenize("It is}}");
    assert_eq!(common_prefix(&split, &replayed), 1);
    assert_eq!(common_prefix(&canonical, &replayed), 2);
    // No token of more than one character from there on: nothing is split.
    assert_eq!(generated("ab\nc", Some(1)), owned("ab\nc"));
}
