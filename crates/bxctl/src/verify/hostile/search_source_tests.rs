//! The searches as sources of their own (`search_source`), without a stack: which grants
//! make chains, what each chain plants and calls, and the order the searches are played in.

use super::chains::{self, Chain};
use super::rewrite::Scope;
use super::search_source;
use super::tests::{grant, rewritten};

fn search(tool: &str, extra: &str) -> proto::Grant {
    grant(&format!(
        "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n{extra}"
    ))
}

/// A search grant labelling its results private makes a chain to every sink but the
/// look-alikes; its call searches a word of the chain's own, never the canary, and what it
/// plants holds what the chain waits for between that word twice: a note of its own for a
/// search of the notes, the words a session of its own says for a search of the logs.
#[test]
fn a_search_of_its_own_words_is_a_source_to_every_sink() {
    let mut r = rewritten();
    r.grants.insert(
        "notes-search".into(),
        search("note_search", "result_class = \"private\"\n"),
    );
    r.grants.insert(
        "logs-search".into(),
        search("session_search", "result_class = \"private\"\n"),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    let searched: Vec<&Chain> = plan.iter().filter(|c| search_source::is(c)).collect();
    let got: Vec<(&str, &str)> = searched
        .iter()
        .map(|c| (c.source.tool, c.sink.entry.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("note_search", "api.example.org"),
            ("note_search", "*.wikipedia.org"),
            ("session_search", "api.example.org"),
            ("session_search", "*.wikipedia.org"),
        ]
    );
    for c in &searched {
        let word = format!("bxseek{}", c.n);
        assert_eq!(c.source.path, word);
        let call = super::script::source_answer(c);
        assert_eq!(call.tool_calls[0].name, c.source.tool);
        assert_eq!(
            call.tool_calls[0].arguments,
            serde_json::json!({"query": word}).to_string()
        );
        assert!(!call.tool_calls[0].arguments.contains(&c.canary));
        assert_eq!(
            search_source::words(c),
            format!("{word} {} {word}", c.canary)
        );
        match c.source.tool {
            "note_search" => {
                assert_eq!(
                    search_source::note(c),
                    Some((format!("bxseek-{}", c.n), search_source::words(c)))
                );
                assert!(search_source::rules(c).is_none());
            }
            _ => {
                assert_eq!(search_source::note(c), None);
                let rule = search_source::rules(c).expect("the words' session");
                assert_eq!(
                    rule.when.user_contains,
                    format!("[bxhostile chain {} words]", c.n)
                );
                assert_eq!(rule.answer.tool_calls[0].name, "session_search");
            }
        }
    }
    // The script holds the rule of each session saying a search chain's words.
    let script = super::script::script(&plan).expect("script");
    for c in searched
        .iter()
        .filter(|c| c.source.tool == "session_search")
    {
        assert!(script.contains(&format!("chain {} words", c.n)), "{script}");
    }
    // The notes' search is labelled by its grants alone in the analysis: a public one makes
    // no send (public data out is no flow).
    let mut r = rewritten();
    r.grants.insert(
        "notes-search".into(),
        search("note_search", "result_class = \"public\"\n"),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    assert!(!plan.iter().any(search_source::is), "{plan:?}");
}

/// A search grant saying `untrusted = false` makes no chain and is said not played as a
/// source (the logs every chain's send raises to untrusted would raise it); every other
/// grant covering the search still joins: one such grant among several stops the chain.
#[test]
fn a_trusted_search_is_not_played_as_a_source() {
    let mut r = rewritten();
    r.grants.insert(
        "notes-search".into(),
        search(
            "note_search",
            "result_class = \"private\"\nuntrusted = false\n",
        ),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    assert!(!plan.iter().any(search_source::is), "{plan:?}");
    let left = search_source::unplayed(&r);
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(
        (left[0].grant.as_str(), left[0].scope),
        ("notes-search", Scope::Source)
    );
    assert!(left[0].why.contains("untrusted = false"), "{}", left[0].why);
    r.grants.insert(
        "notes-search-2".into(),
        search("note_search", "result_class = \"private\"\n"),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    assert!(!plan.iter().any(search_source::is), "{plan:?}");
}

/// The searches are played the lower-labelled tool's first: a search reaches the logs of
/// the sessions before it, which a higher-labelled search leaves higher.
#[test]
fn the_lower_labelled_search_is_played_first() {
    let mut r = rewritten();
    r.grants.insert(
        "notes-search".into(),
        search("note_search", "result_class = \"secret\"\n"),
    );
    r.grants.insert(
        "logs-search".into(),
        search("session_search", "result_class = \"private\"\n"),
    );
    assert_eq!(search_source::order(&r), ["session_search", "note_search"]);
    r.grants.insert(
        "logs-search".into(),
        search("session_search", "result_class = \"secret\"\n"),
    );
    r.grants.insert(
        "notes-search".into(),
        search("note_search", "result_class = \"private\"\n"),
    );
    assert_eq!(search_source::order(&r), ["note_search", "session_search"]);
}
