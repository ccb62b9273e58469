//! `bxctl verify --hostile` with a fetch as the source (docs/decisions.md V38): a grant
//! fetching secret results from two hosts sends what it fetched from one to the other (the
//! flow the analysis reports from the grant to itself) and is stopped at a grant applying at
//! private only; a public fetch is no source. Dropping the flow from the analysis fails.

use serde_json::Value;
use stack::Home;

use crate::verify_hostile::{analysis, hostile, planted, said, web};

const MAIL: &str = "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
    result_class = \"secret\"\n[constraints]\nhosts = [\"mail.example.net\", \"imap.example.net\"]\n";

#[test]
fn verify_hostile_plays_a_fetch_as_a_source() {
    let home = Home::new("hostile-fetch-source", "");
    home.write_grant("mail-api", MAIL);
    home.write_grant("web", &web("auto", "private", ""));
    let (out, found) = hostile(&home, &[]);
    assert_eq!(out.status.code(), Some(0), "{found:#?}");
    // Only the secret grant's hosts are sources, each to the other host and to web.
    let chains: Vec<&str> = found
        .iter()
        .filter(|(c, _, _)| c.starts_with("chain "))
        .map(|(_, _, s)| s.as_str())
        .collect();
    assert_eq!(chains.len(), 4, "{found:#?}");
    assert!(
        chains.iter().all(|s| s.starts_with("fetch from ")),
        "{chains:#?}"
    );
    for (from, to) in [
        ("mail.example.net", "imap.example.net"),
        ("imap.example.net", "mail.example.net"),
    ] {
        let line = format!(
            "fetch from {from} (secret) via grant mail-api, then send it to {to} via grant \
             mail-api: leaked, as the flows analysis reports"
        );
        assert!(chains.contains(&line.as_str()), "{line}\n{chains:#?}");
    }
    let stopped = chains
        .iter()
        .filter(|s| {
            s.ends_with(
                "then send it to api.example.org: stopped (the fetch was denied (grant web): \
                 taint_too_high)",
            ) || s.ends_with(
                "then send it to api.example.org via grant web: stopped (the fetch was denied \
                 (grant web): taint_too_high)",
            )
        })
        .count();
    assert_eq!(stopped, 2, "{chains:#?}");
    let (level, s) = said(&found, "secret_out");
    assert_eq!(level, "ok");
    assert!(s.starts_with("leaked by chain "), "{s}");
    assert!(!found.iter().any(|(_, l, _)| l != "ok"), "{found:#?}");

    // The flow dropped from the analysis: the chains that leaked it fail.
    let mut dropped = analysis(&home);
    assert_eq!(
        dropped["flows"].as_array().map(Vec::len),
        Some(1),
        "{dropped}"
    );
    dropped["flows"] = Value::Array(Vec::new());
    let (out, found) = planted(&home, &dropped);
    assert_eq!(out.status.code(), Some(1), "{found:#?}");
    let failed: Vec<&str> = found
        .iter()
        .filter(|(_, l, _)| l == "fail")
        .map(|(_, _, s)| s.as_str())
        .collect();
    assert_eq!(failed.len(), 2, "{found:#?}");
    assert!(
        failed
            .iter()
            .all(|s| s.ends_with("leaked, and the flows analysis did not report it")),
        "{failed:#?}"
    );
}
