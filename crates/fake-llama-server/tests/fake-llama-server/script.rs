//! Scripts (`script`): parsing, checking, the documented example, rule matching.

use fake_llama_server::render::{Call, Msg};
use fake_llama_server::script::{Match, Script};

use crate::render::msg;

#[test]
fn parses_every_field_and_refuses_unknown_ones() {
    let script = Script::parse(
        r#"
        [server]
        n_ctx = 512
        total_slots = 2
        reasoning = true
        [[rule]]
        name = "w"
        max_uses = 1
        match = { turn = 1, user_contains = "weather", last_tool = "x" }
        answer = { reasoning = "r", tool_calls = [{ name = "get", arguments = "{}" }] }
        [default]
        text = "d"
        "#,
    )
    .expect("valid script");
    assert_eq!(script.server.total_slots, 2);
    assert_eq!(script.rules.len(), 1);
    let typo = Script::parse("[[rule]]\nanswer = { txt = \"x\" }\n");
    assert!(typo.is_err(), "unknown answer key must be refused");
}

#[test]
fn the_example_in_the_crate_docs_is_a_valid_script() {
    let example: Vec<&str> = include_str!("../../src/lib.rs")
        .lines()
        .skip_while(|l| *l != "//! ```toml")
        .skip(1)
        .take_while(|l| *l != "//! ```")
        .map(|l| l.strip_prefix("//!").unwrap_or(l).trim_start_matches(' '))
        .collect();
    assert!(example.len() > 20, "the example was not found");
    let script = Script::parse(&example.join("\n")).expect("the documented example");
    assert_eq!(script.rules.len(), 1);
    assert!(script.default.is_some());
}

#[test]
fn refuses_inconsistent_answers() {
    for bad in [
        "[[rule]]\nanswer = { reasoning = \"r\" }\n",
        "[[rule]]\nanswer = { text = \"ab\", chunks = [\"a\"] }\n",
        "[[rule]]\nanswer = { tool_calls = [{ name = \"f\", arguments = \"{\" }] }\n",
        "[[rule]]\nanswer = { error = { status = 200, message = \"x\" } }\n",
        "[server]\ntotal_slots = 0\n",
    ] {
        assert!(Script::parse(bad).is_err(), "should refuse: {bad}");
    }
}

#[test]
fn matches_turn_user_text_tool_result_and_last_tool() {
    let call = Call {
        name: "get_weather".into(),
        arguments: "{}".into(),
    };
    let history = vec![
        msg("system", "s"),
        msg("user", "weather in Paris?"),
        Msg {
            role: "assistant".into(),
            tool_calls: vec![call],
            ..Msg::default()
        },
        msg("tool", "sunny"),
    ];
    let m = |toml: &str| -> Match { toml::from_str(toml).expect("match table") };
    assert!(m("turn = 1").matches(&history));
    assert!(!m("turn = 2").matches(&history));
    assert!(m("user_contains = \"Paris\"").matches(&history));
    assert!(!m("user_equals = \"Paris\"").matches(&history));
    assert!(m("tool_result_contains = \"sun\"").matches(&history));
    assert!(m("tool_result_contains = \"\"\nlast_tool = \"get_weather\"").matches(&history));
    assert!(!m("last_tool = \"other\"").matches(&history));
    assert!(!m("tool_result_contains = \"\"").matches(&history[..2]));
    // Any message of any role: the system prompt, the user's, a tool result.
    for needle in ["s", "Paris", "sunny"] {
        assert!(m(&format!("history_contains = \"{needle}\"")).matches(&history));
    }
    assert!(!m("history_contains = \"sunny\"").matches(&history[..3]));
    assert!(!m("history_contains = \"London\"").matches(&history));
}

#[test]
fn user_words_match_whole_words_without_case() {
    let m = |toml: &str| -> Match { toml::from_str(toml).expect("match table") };
    let said = |text: &str| vec![msg("system", "s"), msg("user", text)];
    let list = m("user_words = [\"list\", \"notes\"]");
    assert!(list.matches(&said("Can you LIST my things?")));
    assert!(list.matches(&said("what notes, please")));
    assert!(list.matches(&said("list")));
    // A word inside another is not that word (issue 28: a playlist raised a list card).
    assert!(!list.matches(&said("recommend a playlist for tea time")));
    assert!(!list.matches(&said("listing noted")));
    assert!(!list.matches(&[msg("system", "s")]), "no user message");
    for bad in [
        "[[rule]]\nmatch = { user_words = [\"to-do\"] }\nanswer = { text = \"x\" }\n",
        "[[rule]]\nmatch = { user_words = [\"\"] }\nanswer = { text = \"x\" }\n",
        "[[rule]]\nmatch = { user_words = [] }\nanswer = { text = \"x\" }\n",
    ] {
        let e = Script::parse(bad).expect_err(bad).to_string();
        assert!(e.starts_with("rule 1: user_words"), "{e}");
    }
}

#[test]
fn first_match_with_uses_left_wins() {
    let script = Script::parse(
        "[[rule]]\nmax_uses = 1\nanswer = { text = \"a\" }\n\
         [[rule]]\nmatch = { user_contains = \"zzz\" }\nanswer = { text = \"b\" }\n\
         [[rule]]\nanswer = { text = \"c\" }\n",
    )
    .expect("valid");
    let history = vec![msg("user", "hi")];
    assert_eq!(script.pick(&history, &[0, 0, 0]), Some(0));
    assert_eq!(script.pick(&history, &[1, 0, 0]), Some(2));
    assert_eq!(Script::default().pick(&history, &[]), None);
}
