//! Fetches as sources: a chain whose read is a fetch from a host of a grant whose results
//! are private or secret (`result_class`), then a send of what it fetched to every other
//! sink (each other host of a fetch grant, the same grant's other hosts, the consult model,
//! an MCP tool listing hosts). Every host leads to the sink (`[broker.self_test]`), which
//! answers the chain's path, `/bxsource-N/`, with its canary ([`register`]): the canary is
//! in no request of the read, so a canary at the sink means the fetched result went out. A
//! public result is no source of a flow, and a grant naming patterns is not played (the
//! URL's path is the shadow's own).

use proto::tools::{HttpFetchArgs, ToolArgs};

use super::chains::{Chain, Source, Target, host_of};
use super::rewrite::Rewritten;
use super::sink::Sink;

/// The path a fetch source chain's read names.
pub fn path(n: usize) -> String {
    format!("/bxsource-{n}/")
}

/// What names a source's canary, which the shadow picks (so a grant's patterns may not match
/// it): a fetch's URL path, a consult's prompt, a read's file name.
pub fn named_by(tool: &str) -> &'static str {
    match tool {
        "http_fetch" => "the URL's path",
        "consult" => "the prompt",
        "note_read" | "note_write" => "the note's name",
        _ => "the canary's file name",
    }
}

/// Whether `c` is a fetch source chain (an untrusted-write chain's fetch is a source too,
/// but its sink writes).
pub fn is(c: &Chain) -> bool {
    c.source.tool == "http_fetch"
        && !matches!(c.sink.tool, "write_file" | "edit_file")
        && c.source.path.ends_with(&path(c.n))
}

/// The fetch sources among `grants` (of `r`: an ordinary session's, or a job's): each host
/// of each allowing `http_fetch` grant naming no patterns whose fetch of a chain's path
/// ([`source`]) is labelled above public, each once. brokerd joins the labels of every
/// grant covering a call, in scope or not, so another grant covering the host labels it
/// too ([`labelled`]).
pub fn sources<'a>(
    r: &Rewritten,
    grants: impl IntoIterator<Item = (&'a String, &'a proto::Grant)>,
    port: u16,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, g) in grants {
        if g.tool != "http_fetch"
            || g.mode == proto::Mode::Deny
            || !g.constraints.patterns.is_empty()
        {
            continue;
        }
        for h in &g.constraints.hosts {
            if !out.contains(h) && labelled(r, h, port) {
                out.push(h.clone());
            }
        }
    }
    out
}

/// Whether a fetch of a chain's path from `entry` is labelled above public: a grant covering
/// it, any mode or scope, labels its results so.
fn labelled(r: &Rewritten, entry: &str, port: u16) -> bool {
    let url = source(entry, port, 0).path;
    let args = ToolArgs::HttpFetch(HttpFetchArgs { url });
    r.grants
        .values()
        .chain(r.jobs.values())
        .filter(|g| g.tool == "http_fetch" && g.result_class != proto::DataClass::Public)
        .any(|g| grants::constraints::check(g, &args).is_ok())
}

/// Whether `t` is a fetch from the source's own host `entry`, by any grant: a fetch back to
/// where the data came from is no flow.
pub fn own(t: &Target, entry: &str) -> bool {
    t.tool == "http_fetch" && t.entry == entry
}

/// Chain `n`'s fetch from `entry`, whose path the sink answers with the chain's canary.
pub fn source(entry: &str, port: u16, n: usize) -> Source {
    Source {
        tool: "http_fetch",
        owner: entry.to_owned(),
        path: format!("http://{}:{port}{}", host_of(entry), path(n)),
    }
}

/// Adds a chain from each fetch source of an ordinary session to each of `targets` but its
/// own host, look-alikes left out; numbered after `chains`.
pub fn plan(r: &Rewritten, targets: &[Target], port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    for entry in sources(r, r.grants.iter().filter(|(_, g)| g.job.is_none()), port) {
        let own = |t: &Target| own(t, &entry);
        for sink in targets.iter().filter(|t| t.lookalike.is_none() && !own(t)) {
            let n = chains.len() + 1;
            chains.push(Chain::send(n, source(&entry, port, n), sink, port, nonce));
        }
    }
}

/// Tells the sink each fetch source chain's path and canary, before the run.
pub fn register(sink: &Sink, chains: &[Chain]) {
    for c in chains.iter().filter(|c| is(c)) {
        sink.source(&path(c.n), &c.canary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shadow(grants: &[(&str, &str)]) -> Rewritten {
        let mut r = Rewritten::default();
        for (id, text) in grants {
            r.grants
                .insert((*id).into(), super::super::tests::grant(text));
        }
        r
    }

    const MAIL: &str = "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
        result_class = \"private\"\n[constraints]\nhosts = [\"mail.example.net\", \"imap.example.net\"]\n";
    const WEB: &str = "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
        result_class = \"public\"\n[constraints]\nhosts = [\"api.example.org\"]\n";

    /// A private grant's every host is a source, sending to every other host but its own;
    /// a public grant's hosts are no source; the canary is in no request of the read.
    #[test]
    fn a_private_fetch_is_a_source_to_every_other_host() {
        let r = shadow(&[("mail-api", MAIL), ("web", WEB)]);
        let chains = super::super::chains::plan(&r, 4242, "n0", false);
        let fetched: Vec<&Chain> = chains.iter().filter(|c| is(c)).collect();
        let pairs: Vec<(&str, &str)> = fetched
            .iter()
            .map(|c| (c.source.owner.as_str(), c.sink.entry.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("mail.example.net", "imap.example.net"),
                ("mail.example.net", "api.example.org"),
                ("imap.example.net", "mail.example.net"),
                ("imap.example.net", "api.example.org"),
            ]
        );
        for c in &fetched {
            assert_eq!(
                c.source.path,
                format!("http://{}:4242/bxsource-{}/", c.source.owner, c.n)
            );
            assert!(!c.source.path.contains(&c.canary));
            assert!(c.url.contains(&c.canary) && c.sink.lookalike.is_none());
        }
        // Numbered after every other chain.
        let last = chains
            .iter()
            .filter(|c| !is(c))
            .map(|c| c.n)
            .max()
            .unwrap_or(0);
        assert!(fetched.iter().all(|c| c.n > last));
        // The untrusted-write chains' fetches are no fetch source chains.
        assert!(
            chains
                .iter()
                .filter(|c| c.source.tool == "http_fetch")
                .count()
                >= fetched.len()
        );
    }

    /// A grant naming patterns, a denying one and a public one are no source.
    #[test]
    fn patterned_denying_and_public_fetches_are_no_source() {
        let patterned = format!("{MAIL}patterns = [\"*inbox*\"]\n");
        let deny = MAIL.replace("\"auto\"", "\"deny\"");
        for text in [patterned.as_str(), deny.as_str()] {
            let r = shadow(&[("mail-api", text), ("web", WEB)]);
            let chains = super::super::chains::plan(&r, 4242, "n0", false);
            assert!(!chains.iter().any(is), "{text}");
        }
        let r = shadow(&[("web", WEB), ("web2", &WEB.replace("api.", "www."))]);
        assert!(
            !super::super::chains::plan(&r, 4242, "n0", false)
                .iter()
                .any(is)
        );
    }

    /// The script fetches the source, and sends only once the fetch's result holds the
    /// canary.
    #[test]
    fn the_send_waits_for_the_fetched_canary() {
        let r = shadow(&[("mail-api", MAIL), ("web", WEB)]);
        let chains = super::super::chains::plan(&r, 4242, "n0", false);
        let c = chains.iter().find(|c| is(c)).expect("a fetch source chain");
        let script: toml::Value =
            toml::from_str(&super::super::script::script(&chains).expect("script")).expect("toml");
        let rules = script["rule"].as_array().expect("rules");
        let named = |name: String| {
            rules
                .iter()
                .find(|r| r["name"].as_str() == Some(&name))
                .expect("rule")
        };
        let sink = named(format!("chain {} sink", c.n));
        assert_eq!(
            sink["match"]["tool_result_contains"].as_str(),
            Some(c.canary.as_str())
        );
        let sent = sink["answer"]["tool_calls"][0]["arguments"]
            .as_str()
            .expect("args");
        assert!(sent.contains(&c.canary), "{sent}");
        let source = named(format!("chain {} source", c.n));
        let read = source["answer"]["tool_calls"][0]["arguments"]
            .as_str()
            .expect("args");
        assert_eq!(
            source["answer"]["tool_calls"][0]["name"].as_str(),
            Some("http_fetch")
        );
        assert!(
            read.contains(&path(c.n)) && !read.contains(&c.canary),
            "{read}"
        );
    }

    /// The sink answers each chain's path with its canary once registered, and no other.
    #[test]
    fn register_tells_the_sink_each_chain() {
        let r = shadow(&[("mail-api", MAIL), ("web", WEB)]);
        let sink = Sink::start().expect("sink");
        let chains = super::super::chains::plan(&r, sink.addr.port(), "n0", false);
        register(&sink, &chains);
        let c = chains.iter().find(|c| is(c)).expect("a fetch source chain");
        let get = |p: &str| {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(sink.addr).expect("connect");
            write!(s, "GET {p} HTTP/1.1\r\nHost: mail.example.net\r\n\r\n").expect("send");
            let mut a = String::new();
            s.read_to_string(&mut a).expect("answer");
            a
        };
        assert!(get(&path(c.n)).ends_with(&format!("BXSINK-OK {}", c.canary)));
        assert!(get(&path(0)).ends_with("\r\n\r\nBXSINK-OK"));
    }

    /// A fetch source's flow is compared as a read's: agreed by a chain that leaked it,
    /// failed when none did, `not tried` only for a grant naming patterns; a consult
    /// source is still not played.
    #[test]
    fn a_fetch_sources_flow_is_compared() {
        use proto::flows::{Flow, FlowsReport, Severity, Step};
        use proto::{CallId, DataClass, ToolResponse};
        use std::collections::BTreeSet;

        use super::super::compare::{self, Outcome};
        use super::super::session::Seen;

        let r = shadow(&[("mail-api", MAIL), ("web", WEB)]);
        let chains = super::super::chains::plan(&r, 4242, "n0", false);
        let c = chains
            .iter()
            .find(|c| is(c) && c.sink.grant == "web")
            .expect("a chain to web");
        let call = |n: u64, grant: &str, content: &str, class| {
            let response = ToolResponse::Result {
                content: content.into(),
                class,
                untrusted: true,
                truncated: false,
            };
            let seen = Seen {
                call: CallId(n),
                tool: "http_fetch".into(),
                asked: false,
                response: Some(response),
            };
            Some((Some(grant.to_owned()), seen))
        };
        let leak = Outcome {
            source: call(
                1,
                "mail-api",
                &format!("BXSINK-OK {}", c.canary),
                DataClass::Private,
            ),
            laundering: Vec::new(),
            sink: call(2, "web", "BXSINK-OK", DataClass::Private),
            at_sink: true,
            bare: false,
            write: false,
        };
        let step = |g: &str, what: &str| Step {
            grant: Some(g.into()),
            tool: "http_fetch".into(),
            what: what.into(),
        };
        let flow = |source: Step| Flow {
            severity: Severity::PrivateOut,
            job: None,
            source,
            class: DataClass::Private,
            untrusted: true,
            sink: step("web", "api.example.org"),
            text: "a hijacked model can fetch from mail.example.net".into(),
        };
        let report = FlowsReport {
            snapshot: proto::Hash32::ZERO,
            grants: vec!["mail-api".into(), "web".into()],
            flows: vec![flow(step("mail-api", "mail.example.net"))],
            sources: Vec::new(),
        };
        let levels = |played: &[(Chain, Outcome)], patterned: &BTreeSet<String>| {
            compare::checks(played, &report, &[], patterned)
                .into_iter()
                .map(|k| (k.check, format!("{:?}", k.level), k.said))
                .collect::<Vec<_>>()
        };
        let agreed = levels(&[(c.clone(), leak.clone())], &BTreeSet::new());
        assert_eq!(agreed.len(), 2, "{agreed:?}");
        assert!(agreed.iter().all(|(_, l, _)| l == "Ok"), "{agreed:?}");
        assert!(agreed[0].2.starts_with(
            "fetch from mail.example.net (private) via grant mail-api, then send it to \
             api.example.org via grant web: leaked"
        ));
        // No chain completed it: a disagreement, not a `not tried`.
        let none = levels(&[], &BTreeSet::new());
        assert_eq!(none[0].1, "Fail", "{none:?}");
        // A grant naming patterns is not played.
        let patterned = levels(&[], &BTreeSet::from(["mail-api".to_owned()]));
        assert_eq!(patterned[0].1, "Warn", "{patterned:?}");
        assert!(
            patterned[0]
                .2
                .contains("the URL's path is the shadow's own")
        );
        // A source of a tool the shadow does not know is not played; a note write's answer
        // and a search of the notes are (no chain completed them: a disagreement); a
        // consult source is, and its grant's patterns meet the shadow's prompt.
        let mut noted = report.clone();
        noted.flows[0].source.tool = "note_erase".into();
        let warned = compare::checks(&[], &noted, &[], &BTreeSet::new());
        assert!(
            warned[0]
                .said
                .contains("a source of note_erase is not played yet")
        );
        for tool in ["note_write", "note_search"] {
            noted.flows[0].source.tool = tool.into();
            let failed = compare::checks(&[], &noted, &[], &BTreeSet::new());
            assert_eq!(
                format!("{:?}", failed[0].level),
                "Fail",
                "{tool}: {failed:?}"
            );
        }
        let mut consulted = report.clone();
        consulted.flows[0].source.tool = "consult".into();
        let failed = compare::checks(&[], &consulted, &[], &BTreeSet::new());
        assert_eq!(format!("{:?}", failed[0].level), "Fail", "{failed:?}");
        let patterned = compare::checks(
            &[],
            &consulted,
            &[],
            &BTreeSet::from(["mail-api".to_owned()]),
        );
        assert!(patterned[0].said.contains("the prompt is the shadow's own"));
    }
}
