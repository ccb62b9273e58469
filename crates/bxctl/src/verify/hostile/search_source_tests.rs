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

/// A search every covering grant labels trusted makes no chain and is said not played as
/// a source (the logs every chain's send raises to untrusted would raise it); beside an
/// untrusted grant the join is untrusted, and it is played. A search asked (or a grant in
/// force that would ask) makes no chain and is no source either (a declined search leaves
/// a log brokerd never labels); a logs' search whose `max_class` cannot reach a session's
/// words is said not played.
#[test]
fn which_searches_are_played_as_sources() {
    let searched = |r: &super::rewrite::Rewritten| {
        chains::plan(r, 4321, "n0", false)
            .into_iter()
            .filter(search_source::is)
            .count()
    };
    let mut r = rewritten();
    r.grants.insert(
        "notes-search".into(),
        search(
            "note_search",
            "result_class = \"private\"\nuntrusted = false\n",
        ),
    );
    // A trusted search of the notes played before any search of the logs: a source (the
    // index holds nothing untrusted while it plays).
    assert_eq!(searched(&r), 2);
    assert!(search_source::unplayed(&r).is_empty());
    // A search of the logs labelled lower, untrusted: it plays first, and its chains'
    // sessions, indexed, would raise the trusted one, which is not played then.
    r.grants.insert(
        "logs-search".into(),
        search("session_search", "result_class = \"public\"\n"),
    );
    assert_eq!(searched(&r), 0);
    let left = search_source::unplayed(&r);
    r.grants.remove("logs-search");
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
    assert_eq!(searched(&r), 2);
    assert!(search_source::unplayed(&r).is_empty());
    // An ask grant beside: the search asks, no chain, nothing said (the analysis has no flow).
    r.grants.insert(
        "notes-ask".into(),
        grant("tool = \"note_search\"\nmode = \"ask\"\nmax_taint = \"secret\"\n"),
    );
    assert_eq!(searched(&r), 0);
    assert!(search_source::unplayed(&r).is_empty());
    // A logs' search that reaches only public partitions: its words are at private.
    let mut r = rewritten();
    r.grants.insert(
        "logs-search".into(),
        search(
            "session_search",
            "result_class = \"private\"\n[constraints]\nmax_class = \"public\"\n",
        ),
    );
    assert_eq!(searched(&r), 0);
    let left = search_source::unplayed(&r);
    assert!(
        left.len() == 1 && left[0].why.contains("max_class"),
        "{left:?}"
    );
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

/// A search labelled above what the analysis gives its grant is set aside (`raised`), and
/// a flow only such a chain was to complete is `not observed`, a warning, not a failure.
#[test]
fn a_search_raised_above_the_analysis_is_set_aside() {
    use proto::flows::{Flow, FlowsReport, Severity, SourceLabel, Step};
    use proto::{CallId, DataClass, Hash32, ToolResponse};
    let mut r = rewritten();
    r.grants.insert(
        "notes-search".into(),
        search("note_search", "result_class = \"private\"\n"),
    );
    let plan = chains::plan(&r, 4321, "n0", false);
    let c = plan
        .iter()
        .find(|c| search_source::is(c))
        .expect("a search chain")
        .clone();
    let seen = |class| super::session::Seen {
        call: CallId(1),
        tool: "note_search".into(),
        asked: false,
        response: Some(ToolResponse::Result {
            content: "nothing".into(),
            class,
            untrusted: true,
            truncated: false,
        }),
    };
    let outcome = |class| super::compare::Outcome {
        source: Some((Some("notes-search".into()), seen(class))),
        laundering: Vec::new(),
        sink: None,
        at_sink: false,
        bare: false,
        write: false,
    };
    let step = |g: &str, tool: &str, what: &str| Step {
        grant: Some(g.into()),
        tool: tool.into(),
        what: what.into(),
    };
    let report = FlowsReport {
        snapshot: Hash32::ZERO,
        grants: Vec::new(),
        flows: vec![Flow {
            severity: Severity::PrivateOut,
            job: None,
            source: step("notes-search", "note_search", "the notes"),
            class: DataClass::Private,
            untrusted: true,
            sink: step("web", "http_fetch", "api.example.org"),
            text: "a hijacked model can search the notes".into(),
        }],
        sources: vec![SourceLabel {
            job: None,
            source: step("notes-search", "note_search", "the notes"),
            class: DataClass::Private,
            untrusted: true,
        }],
    };
    let raised = |o, report: &FlowsReport| search_source::raised(&r, &c, &o, report, None);
    assert_eq!(raised(outcome(DataClass::Private), &report), None);
    let why = raised(outcome(DataClass::Secret), &report).expect("raised");
    assert!(
        why.contains("labelled secret, untrusted, above the private, untrusted"),
        "{why}"
    );
    // An analysis that gives the grant less than its grants do is the one that is low: no
    // chain of its set aside (compare fails the flow); nor one that names no label for it.
    let mut low = report.clone();
    low.sources[0].class = DataClass::Public;
    assert_eq!(raised(outcome(DataClass::Secret), &low), None);
    low.sources.clear();
    assert_eq!(raised(outcome(DataClass::Secret), &low), None);
    let level = |played: &[(Chain, super::compare::Outcome)],
                 aside: &[(Chain, super::compare::Outcome)]| {
        super::compare::checks_with(played, aside, &report, &[], &Default::default())
            .into_iter()
            .find(|k| k.check == "private_out")
            .map(|k| (format!("{:?}", k.level), k.said))
            .expect("the flow's line")
    };
    assert_eq!(level(&[], &[]).0, "Fail");
    let aside = [(c.clone(), outcome(DataClass::Secret))];
    let (l, said) = level(&[], &aside);
    assert_eq!(l, "Warn", "{said}");
    assert!(
        said.starts_with(&format!("not observed (chain {} set aside", c.n)),
        "{said}"
    );
    // A chain observed for the same flow that did not complete it: still a disagreement.
    let mut other = c.clone();
    other.n += 100;
    let (l, said) = level(&[(other, outcome(DataClass::Private))], &aside);
    assert_eq!(l, "Fail", "{said}");
}

/// A job's searches are its first chains (the lower-labelled tool's first), each sent to
/// every sink of the job and driving each of its writes; a job's search of the logs is
/// played whether or not an ordinary session may search the logs, its words said by a run
/// of the job (its rule before the job's chains' reads), never by an ordinary session.
#[test]
fn a_jobs_searches_are_its_first_chains() {
    use super::jobs::{self, DELIVER};
    let mut r = super::jobs_tests::rewritten();
    let job = "job = \"brief\"\n";
    r.jobs
        .insert("brief-notes-search".into(), search("note_search", job));
    r.jobs
        .insert("brief-logs-search".into(), search("session_search", job));
    let config = super::jobs_tests::config_jobs();
    let brief = |r: &super::rewrite::Rewritten| {
        jobs::plan(r, &config, 4321, "n0", 1, false)
            .into_iter()
            .filter(|j| j.job.as_str() == "brief")
            .map(|j| j.chain)
            .collect::<Vec<Chain>>()
    };
    let sent = |plan: &[Chain]| -> Vec<(&str, &str)> {
        plan.iter()
            .take_while(|c| search_source::is(c))
            .map(|c| (c.source.tool, c.sink.tool))
            .collect()
    };
    let searches = [
        ("note_search", "http_fetch"),
        ("note_search", DELIVER),
        ("session_search", "http_fetch"),
        ("session_search", DELIVER),
    ];
    let alone = brief(&r);
    assert_eq!(sent(&alone), searches);
    assert!(
        alone[4..].iter().all(|c| !search_source::is(c)),
        "{alone:#?}"
    );
    assert!(search_source::unplayed(&r).is_empty());
    let plan = jobs::plan(&r, &config, 4321, "n0", 1, false);
    let rules = super::jobs_script::rules(&plan);
    let position = |name: &str| rules.iter().position(|rule| rule.name == name);
    for c in &alone[2..4] {
        let words = position(&format!("job brief chain {} words", c.n)).expect("words");
        let rule = &rules[words];
        assert_eq!(rule.when.user_contains, "[bxhostile job brief]");
        assert!(rule.answer.text.contains(&search_source::words(c)));
        assert_eq!(rule.answer.tool_calls[0].name, "session_search");
        assert!(!rule.answer.tool_calls[0].arguments.contains(&c.canary));
        // After the reads of the searches of the notes (played first), before the first
        // read of the searches of the logs: the runs saying the words come between.
        let read = |c: &Chain| position(&format!("job brief chain {} source", c.n));
        assert!(read(&alone[1]).is_some_and(|r| r < words), "{words}");
        assert!(read(&alone[2]).is_some_and(|r| words < r), "{words}");
    }
    let ordinary = |c: &Chain| {
        let tag = format!("[bxhostile chain {} words]", c.n);
        rules.iter().any(|rule| rule.when.user_contains == tag)
    };
    assert!(!alone.iter().any(ordinary));
    assert!(position(&format!("job brief chain {} words", alone[0].n)).is_none());
    // An ordinary search of the logs that runs freely changes nothing of the job's.
    r.grants
        .insert("logs-search".into(), search("session_search", ""));
    assert_eq!(sent(&brief(&r)), searches);
    assert!(search_source::unplayed(&r).is_empty());
    // A write of the job's: each search drives it, before the job's other chains.
    super::jobs_tests::with_drafts(&mut r);
    let written = brief(&r);
    let firsts = sent(&written);
    assert!(
        firsts.contains(&("note_search", "write_file"))
            && firsts.contains(&("session_search", "write_file")),
        "{firsts:?}"
    );
}
