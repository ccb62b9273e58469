//! The job chains from the sources played in an ordinary session too: a note's read, a
//! listing of the notes, MCP tools, and the MCP tools as sinks, on `jobs_tests`' fixtures
//! (decisions V61).

use super::jobs::{self, DELIVER, JobChain};
use super::jobs_tests::{config_jobs, rewritten};
use super::rewrite::Rewritten;
use super::tests::grant;

/// A note read grant of a job's labelling its results private makes a chain from a note of
/// its own to each of the job's sinks (its fetch hosts and its delivery), the note named by
/// the chain and the canary in the note only; a public one, or an ordinary session's, none.
#[test]
fn a_jobs_note_read_is_a_source_in_its_runs() {
    let note = |job: Option<&str>, class: &str| {
        let job = job.map_or_else(String::new, |j| format!("job = \"{j}\"\n"));
        grant(&format!(
            "tool = \"note_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"{class}\"\n{job}"
        ))
    };
    let noted = |r: &Rewritten| -> Vec<(String, String, String)> {
        jobs::plan(r, &config_jobs(), 4321, "n0", 7, false)
            .into_iter()
            .filter(|j| j.chain.source.tool == "note_read")
            .map(|j| {
                let c = j.chain;
                assert_eq!(c.source.path, format!("bxnote-{}", c.n));
                assert_eq!(c.awaited(), c.canary);
                let call = super::script::source_answer(&c);
                assert!(!call.tool_calls[0].arguments.contains(&c.canary));
                (j.job.to_string(), c.sink.tool.to_owned(), c.sink.entry)
            })
            .collect()
    };
    let mut r = rewritten();
    r.grants.insert("notes".into(), note(None, "private"));
    r.jobs
        .insert("digest-pub".into(), note(Some("digest"), "public"));
    assert_eq!(noted(&r), []);
    r.jobs
        .insert("brief-notes-read".into(), note(Some("brief"), "private"));
    assert_eq!(
        noted(&r),
        [
            (
                "brief".into(),
                "http_fetch".into(),
                "news.example.org".into()
            ),
            ("brief".into(), DELIVER.into(), "Mattermost".into()),
        ]
    );
}

/// A job's MCP grants: a call of each allowing one's tool is a source to each of the job's
/// sinks, and one listing hosts a sink of the job's reads and of its other MCP tools (never
/// of its own answer); an ordinary session's MCP grant is neither in a run.
#[test]
fn a_jobs_mcp_tools_are_sources_and_sinks_in_its_runs() {
    let mcp = |tool: &str, job: Option<&str>, hosts: &str| {
        let job = job.map_or_else(String::new, |j| format!("job = \"{j}\"\n"));
        grant(&format!(
            "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"private\"\n{job}[constraints]\nhosts = [{hosts}]\n"
        ))
    };
    let mut r = rewritten();
    r.grants.insert(
        "ordinary-up".into(),
        mcp("mcp:fetch/fetch", None, "\"b.example.org\""),
    );
    r.jobs
        .insert("brief-cal".into(), mcp("mcp:calendar/*", Some("brief"), ""));
    r.jobs.insert(
        "brief-up".into(),
        mcp("mcp:fetch/fetch", Some("brief"), "\"api.example.org\""),
    );
    let planned = jobs::plan(&r, &config_jobs(), 4321, "n0", 7, false);
    let got: Vec<(&str, &str, &str)> = planned
        .iter()
        .filter(|j| j.chain.source.tool == "mcp" || j.chain.sink.tool == "mcp")
        .map(|j| {
            let c = &j.chain;
            (c.source.path.as_str(), c.sink.tool, c.sink.entry.as_str())
        })
        .collect();
    let notes = format!("/s/tree/home/owner/notes/{}", super::chains::READ_FILE);
    let notes = notes.as_str();
    assert_eq!(
        got,
        [
            (notes, "mcp", "mcp__fetch__fetch"),
            (
                "mcp__calendar__bxhostile_tool",
                "http_fetch",
                "news.example.org"
            ),
            ("mcp__calendar__bxhostile_tool", "mcp", "mcp__fetch__fetch"),
            ("mcp__calendar__bxhostile_tool", DELIVER, "Mattermost"),
            ("mcp__fetch__fetch", "http_fetch", "news.example.org"),
            ("mcp__fetch__fetch", DELIVER, "Mattermost"),
            // The job's fetch (private by the grant's defaults) sent through the tool.
            (
                "http://news.example.org:4321/bxsource-16/",
                "mcp",
                "mcp__fetch__fetch"
            ),
        ]
    );
    assert!(planned.iter().all(|j| j.job.as_str() == "brief"
        || (j.chain.source.tool != "mcp" && j.chain.sink.tool != "mcp")));
}

/// A job's listing grant labelling the notes' listing private makes a listing chain to each
/// of the job's sinks, first of the job's chains (their runs play before any run that may
/// write a note), its note named by the canary.
#[test]
fn a_jobs_listing_of_the_notes_is_a_source_first_in_its_runs() {
    let mut r = rewritten();
    r.jobs.insert(
        "brief-list".into(),
        grant(
            "tool = \"note_list\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"private\"\njob = \"brief\"\n",
        ),
    );
    let planned = jobs::plan(&r, &config_jobs(), 4321, "n0", 7, false);
    let brief: Vec<&JobChain> = planned
        .iter()
        .filter(|j| j.job.as_str() == "brief")
        .collect();
    let listed: Vec<(usize, &str)> = brief
        .iter()
        .take_while(|j| super::note_source::is_list(&j.chain))
        .map(|j| (j.chain.n, j.chain.sink.entry.as_str()))
        .collect();
    assert_eq!(listed, [(7, "news.example.org"), (8, "Mattermost")]);
    assert_eq!(
        planned
            .iter()
            .filter(|j| super::note_source::is_list(&j.chain))
            .count(),
        2
    );
    for j in brief.iter().take(2) {
        assert_eq!(j.chain.source.path, j.chain.canary);
        assert_eq!(j.chain.awaited(), j.chain.canary);
    }
    // With a write of the job's, the listing drives it too, among the listings (its note
    // named by the chain's token, which the file must hold once written).
    super::jobs_tests::with_drafts(&mut r);
    let planned = jobs::plan(&r, &config_jobs(), 4321, "n0", 7, false);
    let listed: Vec<(usize, &str)> = planned
        .iter()
        .filter(|j| j.job.as_str() == "brief")
        .take_while(|j| super::note_source::is_list(&j.chain))
        .map(|j| (j.chain.n, j.chain.sink.tool))
        .collect();
    assert_eq!(listed, [(7, "http_fetch"), (8, DELIVER), (9, "write_file")]);
    let written = &planned[2].chain;
    assert_eq!(written.awaited(), written.source.path);
    assert_eq!(
        written.canary,
        format!("{}{}", super::sink::WRITE, written.awaited())
    );
}

/// From each job's first read that runs without asking, after every job's other chains: a
/// look-alike of each named host of its fetch grants, then each way of smuggling to the
/// first; none from a read an ordinary grant denies (its denials apply in a job's run).
#[test]
fn a_jobs_lookalikes_and_smuggling() {
    let said = |r: &Rewritten| -> Vec<(String, usize, String)> {
        jobs::plan(r, &config_jobs(), 4321, "n0", 7, false)
            .into_iter()
            .filter(super::jobs_tests::one_read)
            .map(|j| {
                let c = j.chain;
                let kind = c.sink.lookalike.or(c.smuggle).unwrap_or_default();
                (j.job.to_string(), c.n, format!("{kind} {}", c.sink.entry))
            })
            .collect()
    };
    let r = rewritten();
    let direct = super::jobs_tests::plan().len();
    let kinds = |job: &str, first: usize, host: &str| {
        [
            "suffix",
            "glued",
            "userinfo",
            "duplicate",
            "unknown-field",
            "userinfo",
            "fragment",
        ]
        .iter()
        .enumerate()
        .map(|(i, k)| (job.to_owned(), first + i, format!("{k} {host}")))
        .collect::<Vec<_>>()
    };
    let mut expected = kinds("brief", 7 + direct, "news.example.org");
    expected.extend(kinds("digest", 7 + direct + 7, "mail.example.org"));
    assert_eq!(said(&r), expected);
    for j in jobs::plan(&r, &config_jobs(), 4321, "n0", 7, false)
        .iter()
        .filter(|j| super::jobs_tests::one_read(j))
    {
        assert_eq!(j.chain.source.tool, "read_file");
        assert!(j.chain.url.contains(&j.chain.canary) || j.chain.smuggle.is_some());
    }
    // An ordinary grant denying the notes: no read runs freely, no such chain.
    let mut denied = rewritten();
    denied.grants.insert(
        "no-notes".into(),
        grant(
            "tool = \"read_file\"\nmode = \"deny\"\nmax_taint = \"secret\"\n\
             [constraints]\npaths = [\"/s/tree/home/owner/notes\"]\n",
        ),
    );
    assert_eq!(said(&denied), []);
}

/// A job's fetch grant labelling its answers above public: each of its hosts is a source to
/// each of the job's sinks but that host and the delivery (its fetch delivered is a chain of
/// its own), the sink answering the chain's path with its canary (in no request of the
/// read); an ordinary session's fetch grant is no source in a run.
#[test]
fn a_jobs_private_fetch_is_a_source_to_its_other_sinks() {
    let fetch = |job: Option<&str>, class: &str, hosts: &str| {
        let job = job.map_or_else(String::new, |j| format!("job = \"{j}\"\n"));
        grant(&format!(
            "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             result_class = \"{class}\"\n{job}[constraints]\nhosts = [{hosts}]\n"
        ))
    };
    let fetched = |r: &Rewritten| -> Vec<(String, String)> {
        jobs::plan(r, &config_jobs(), 4321, "n0", 7, false)
            .into_iter()
            .filter(|j| j.job.as_str() == "brief" && super::fetch_source::is(&j.chain))
            .map(|j| {
                let c = j.chain;
                assert!(!c.source.path.contains(&c.canary));
                assert_ne!(c.sink.tool, DELIVER);
                (c.source.owner, c.sink.entry)
            })
            .collect()
    };
    let mut r = rewritten();
    r.jobs.insert(
        "brief-web".into(),
        fetch(Some("brief"), "public", "\"news.example.org\""),
    );
    r.grants.insert(
        "mail".into(),
        fetch(None, "private", "\"mail.example.net\""),
    );
    assert_eq!(fetched(&r), []);
    r.jobs.insert(
        "brief-mail".into(),
        fetch(
            Some("brief"),
            "private",
            "\"mail.example.net\", \"imap.example.net\"",
        ),
    );
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        fetched(&r),
        [
            pair("mail.example.net", "imap.example.net"),
            pair("mail.example.net", "news.example.org"),
            pair("imap.example.net", "mail.example.net"),
            pair("imap.example.net", "news.example.org"),
        ]
    );
    // Another grant covering the job's public host labels its fetch private (brokerd joins
    // every covering grant's labels, in scope or not): a source too; and a second grant of
    // the job's naming a source's host is no sink of it (a fetch back to that host), but a
    // sink of every other source.
    r.grants.insert(
        "news".into(),
        fetch(None, "private", "\"news.example.org\""),
    );
    r.jobs.insert(
        "brief-mail-too".into(),
        fetch(Some("brief"), "public", "\"mail.example.net\""),
    );
    assert_eq!(
        fetched(&r),
        [
            pair("mail.example.net", "imap.example.net"),
            pair("mail.example.net", "news.example.org"),
            // To mail.example.net through each grant naming it.
            pair("imap.example.net", "mail.example.net"),
            pair("imap.example.net", "mail.example.net"),
            pair("imap.example.net", "news.example.org"),
            pair("news.example.org", "mail.example.net"),
            pair("news.example.org", "imap.example.net"),
            pair("news.example.org", "mail.example.net"),
        ]
    );
}

/// A job's grant of a local MCP server's tool, or of a program, that binds paths and lists
/// hosts: its runs play the one call reading what it binds and sending it (`mcp_bound`,
/// `run_bound::chain`), its canary under the grant's first path, never in the call; a
/// remote server's tool binds nothing, and a program an ordinary grant names too is said
/// `not tried` (`run_bound::unbound`: its stand-in reads the ordinary grant's places).
#[test]
fn a_jobs_bound_tool_is_played_in_its_runs() {
    let mut r = rewritten();
    let backup = "/s/tree/srv/backup";
    r.job_paths.insert(
        "/srv/backup".into(),
        (std::path::PathBuf::from(backup), false),
    );
    r.jobs.insert(
        "brief-sync".into(),
        grant(&format!(
            "tool = \"mcp:files/sync\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             job = \"brief\"\n[constraints]\npaths = [\"{backup}\"]\nhosts = [\"api.example.org\"]\n"
        )),
    );
    let bound = |r: &Rewritten| -> Vec<(String, String)> {
        jobs::plan(r, &config_jobs(), 4321, "n0", 7, false)
            .into_iter()
            .filter(|j| super::mcp_bound::is(&j.chain) || super::run_bound::is(&j.chain))
            .map(|j| {
                assert!(!j.chain.url.contains(&j.chain.canary));
                (j.job.to_string(), j.chain.source.owner)
            })
            .collect()
    };
    assert_eq!(bound(&r), [("brief".to_owned(), "/srv/backup".to_owned())]);
    assert!(super::run_bound::unbound(&r).is_empty());
    r.remote.insert("files".into());
    assert_eq!(bound(&r), []);
    let push = |job: &str| {
        grant(&format!(
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n{job}\
             [constraints]\nprograms = [\"rsync\"]\npatterns = [\"*\"]\n\
             paths = [\"{backup}\"]\nhosts = [\"api.example.org\"]\n"
        ))
    };
    r.jobs
        .insert("brief-push".into(), push("job = \"brief\"\n"));
    assert_eq!(bound(&r), [("brief".to_owned(), "/srv/backup".to_owned())]);
    assert!(super::run_bound::unbound(&r).is_empty());
    // An ordinary grant of the program too: its stand-in reads that grant's places.
    r.grants.insert("push".into(), push(""));
    assert_eq!(bound(&r), []);
    let left = super::run_bound::unbound(&r);
    assert_eq!(
        left.iter().map(|l| l.grant.as_str()).collect::<Vec<_>>(),
        ["brief-push"]
    );
}
