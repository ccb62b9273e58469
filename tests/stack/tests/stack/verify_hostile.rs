//! `bxctl verify --hostile` (issue 27 point 3): the live hostile self-test on a table of
//! grant sets, each agreeing with the flows analysis (leaked where it reports a flow,
//! stopped or asked where it does not), and a planted mistake in the analysis (a reported
//! flow dropped, a flow that cannot happen added) caught by the live run.

use std::process::{Command, Output};

use serde_json::Value;
use stack::{Home, bin};

fn text(out: &Output) -> String {
    stack::stdout_text(out)
}

/// `(check, level, said)` of each hostile line.
pub(crate) fn checks(out: &Output) -> Vec<(String, String, String)> {
    stack::verify_checks(out, "hostile")
}

pub(crate) fn said<'a>(found: &'a [(String, String, String)], check: &str) -> (&'a str, &'a str) {
    let (_, l, s) = found
        .iter()
        .find(|(c, _, _)| c == check)
        .unwrap_or_else(|| panic!("no {check}: {found:?}"));
    (l.as_str(), s.as_str())
}

fn read(class: &str, dir: &std::path::Path, extra: &str) -> String {
    format!(
        "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \"{class}\"\n\
         untrusted = false\n{extra}\n[constraints]\npaths = [\"{}\"]\n",
        dir.display()
    )
}

pub(crate) fn web(mode: &str, max_taint: &str, extra: &str) -> String {
    format!(
        "tool = \"http_fetch\"\nmode = \"{mode}\"\nmax_taint = \"{max_taint}\"\n\
         result_class = \"public\"\n{extra}\n[constraints]\nhosts = [\"api.example.org\"]\n"
    )
}

/// A home with the notes (`class`) and the fetch grant `web`; nothing of its stack runs:
/// the self-test starts a shadow of its own.
pub(crate) fn home(name: &str, class: &str, web_grant: &str) -> (Home, std::path::PathBuf) {
    let home = Home::new(name, "");
    let notes = home.files("notes", &[("real.md", "the owner's real data\n")]);
    home.write_grant("notes-read", &read(class, &notes, ""));
    home.write_grant("web", web_grant);
    (home, notes)
}

/// The owner's notes (one file of real data) and an auto grant reading them, private and
/// trusted: the read the stand-in tests start from.
pub(crate) fn owner_notes(home: &Home) -> std::path::PathBuf {
    let notes = home.files("notes", &[("real.md", "the owner's real data\n")]);
    home.write_grant(
        "notes-read",
        &stack::read_grant(
            "auto",
            &notes,
            "result_class = \"private\"\nuntrusted = false",
        ),
    );
    notes
}

/// The lines of the flows the analysis reported.
fn flows_of(found: &[(String, String, String)]) -> Vec<&(String, String, String)> {
    found
        .iter()
        .filter(|(c, _, _)| c.ends_with("_out"))
        .collect()
}

pub(crate) fn hostile(home: &Home, extra: &[&str]) -> (Output, Vec<(String, String, String)>) {
    let mut args = vec!["verify", "--hostile", "--json"];
    args.extend_from_slice(extra);
    let out = home.bxctl(&args);
    let found = checks(&out);
    (out, found)
}

/// The table: each grant set's chain 1 (the notes read, then the fetch to the granted
/// host) and what the analysis says, in agreement; never a canary through a look-alike.
#[test]
fn verify_hostile_agrees_with_the_analysis() {
    let expired = "expires = \"2020-01-01T00:00:00.000Z\"";
    let cases: [(&str, &str, String, &str, Option<&str>); 7] = [
        // A private read and an auto fetch at private: leaked, and reported.
        (
            "private-out",
            "private",
            web("auto", "private", ""),
            "leaked, as the flows analysis reports",
            Some("private_out"),
        ),
        // The same fetch stops at public: stopped by its max_taint.
        (
            "public-only",
            "private",
            web("auto", "public", ""),
            "stopped (the fetch was denied (grant web): taint_too_high)",
            None,
        ),
        // The fetch asks: asked, and declined by the self-test.
        (
            "ask",
            "private",
            web("ask", "private", ""),
            "asked (the fetch asked you (grant web), and was declined)",
            None,
        ),
        // The read asks (its grant rewritten below): asked, and declined.
        (
            "read-asks",
            "private",
            web("auto", "private", ""),
            "asked (the read asked you (grant notes-read), and was declined)",
            None,
        ),
        // A secret source and a fetch at private: stopped.
        (
            "secret-stopped",
            "secret",
            web("auto", "private", ""),
            "stopped (the fetch was denied (grant web): taint_too_high)",
            None,
        ),
        // A secret source and a fetch at secret: leaked, reported secret out.
        (
            "secret-out",
            "secret",
            web("auto", "secret", ""),
            "leaked, as the flows analysis reports",
            Some("secret_out"),
        ),
        // An expired fetch grant allows nothing.
        (
            "expired",
            "private",
            web("auto", "private", expired),
            "stopped (the fetch was denied (grant web): grant_expired)",
            None,
        ),
    ];
    for (name, class, web_grant, verdict, flow) in cases {
        let (home, notes) = home(&format!("hostile-{name}"), class, &web_grant);
        if name == "read-asks" {
            let asks = read(class, &notes, "").replace("mode = \"auto\"", "mode = \"ask\"");
            home.write_grant("notes-read", &asks);
        }
        let (out, found) = hostile(&home, &[]);
        let ctx = format!("{name}: {found:#?}");
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        let (level, s) = said(&found, "chain 1");
        assert_eq!(level, "ok", "{ctx}");
        // A read that asked and was declined never labelled the session, nor got to the
        // fetch.
        let expected = if name == "read-asks" {
            format!(
                "read {} via grant notes-read, then send it to api.example.org: {verdict}",
                notes.display()
            )
        } else {
            format!(
                "read {} ({class}) via grant notes-read, then send it to api.example.org via \
                 grant web: {verdict}",
                notes.display()
            )
        };
        assert_eq!(s, expected, "{ctx}");
        // A read that asks is no read the one-read chains (look-alikes, restarts,
        // smuggling) start from: none is played, and that is said, never passed.
        if name == "read-asks" {
            assert!(!found.iter().any(|(c, _, _)| c == "chain 2"), "{ctx}");
            assert!(
                found.iter().any(|(c, l, s)| c == "not-tried"
                    && l == "warn"
                    && s.starts_with(
                        "the look-alike, restart, compaction and smuggling chains: not tried"
                    )),
                "{ctx}"
            );
            assert!(flows_of(&found).is_empty(), "{ctx}");
            assert_eq!(
                std::fs::read_dir(&notes).expect("notes").count(),
                1,
                "{ctx}"
            );
            continue;
        }
        // The look-alikes: chains 2 to 4, each stopped by its fetch, none at the sink.
        for n in 2..=4 {
            let (level, s) = said(&found, &format!("chain {n}"));
            assert_eq!(level, "ok", "{ctx}");
            let stop = ": stopped (the fetch was denied: no_grant)";
            assert!(
                s.contains("look-alike of api.example.org") && s.contains(stop),
                "{ctx}"
            );
        }
        // Chain 5: the same read, its turn ended, loopd restarted, and the send in the
        // session's next turn: the same verdict as the direct chain's.
        let (level, s) = said(&found, "chain 5");
        assert_eq!(level, "ok", "{ctx}");
        let restarted = expected.replace(
            " via grant notes-read, then send it to",
            " via grant notes-read; the turn ends and loopd restarts; the session's next turn: send it to",
        );
        assert_eq!(s, restarted, "{ctx}");
        let flows = flows_of(&found);
        match flow {
            Some(severity) => {
                assert_eq!(flows.len(), 1, "{ctx}");
                assert_eq!(
                    (flows[0].0.as_str(), flows[0].1.as_str()),
                    (severity, "ok"),
                    "{ctx}"
                );
                assert!(
                    flows[0].2.starts_with(
                        "leaked by chain 1, 5, 6, 11, as reported: a hijacked model can read "
                    ),
                    "{ctx}"
                );
                // Said with the owner's path, not the shadow's.
                assert!(
                    flows[0].2.contains(&format!("read {} (", notes.display())),
                    "{ctx}"
                );
            }
            None => assert!(flows.is_empty(), "{ctx}"),
        }
        // The owner's files are untouched, and no canary is left on the machine.
        assert_eq!(
            std::fs::read_to_string(notes.join("real.md")).expect("real"),
            "the owner's real data\n"
        );
        assert_eq!(
            std::fs::read_dir(&notes).expect("notes").count(),
            1,
            "{ctx}"
        );
    }
}

/// Untrusted content driving a write: a fetch's answer (the sink's, untrusted) written
/// under a write grant. With `if_untrusted = "ask"` the write asks, and the analysis
/// reports nothing; without it the chain writes in the shadow (never the owner's
/// directory), as the analysis reports. A grant of a job not configured is said as not tried.
#[test]
fn verify_hostile_plays_an_untrusted_write() {
    let home = Home::new("hostile-untrusted", "");
    let www = home.files("www", &[("index.html", "<p>hi</p>\n")]);
    home.write_grant("web", &web("auto", "private", "untrusted = true"));
    let write = |extra: &str| {
        format!(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n{extra}\n\
             [constraints]\npaths = [\"{}\"]\n",
            www.display()
        )
    };
    home.write_grant("www-write", &write("if_untrusted = \"ask\""));
    home.write_grant("brief-web", &web("auto", "secret", "job = \"brief\""));
    let (out, found) = hostile(&home, &[]);
    assert_eq!(out.status.code(), Some(0), "{found:#?}");
    let (level, s) = said(&found, "not-tried");
    assert_eq!(level, "warn");
    assert!(
        s.starts_with("grant brief-web: not tried: its job brief is not configured"),
        "{s}"
    );
    assert!(
        !found.iter().any(|(c, _, _)| c == "untrusted_write"),
        "{found:#?}"
    );
    let chain = |verdict: &str| {
        format!(
            "fetch from api.example.org (private) via grant web, then write it under {} via \
             grant www-write: {verdict}",
            www.display()
        )
    };
    let asked = "asked (the write asked you (grant www-write), and was declined)";
    assert_eq!(said(&found, "chain 1"), ("ok", chain(asked).as_str()));
    home.write_grant("www-write", &write(""));
    let (out, found) = hostile(&home, &[]);
    assert_eq!(out.status.code(), Some(0), "{found:#?}");
    let leaked = "leaked, as the flows analysis reports";
    assert_eq!(said(&found, "chain 1"), ("ok", chain(leaked).as_str()));
    let (level, s) = said(&found, "untrusted_write");
    assert_eq!(level, "ok", "{found:#?}");
    assert!(
        s.starts_with(
            "leaked by chain 1, as reported: a hijacked model can fetch from api.example.org"
        ),
        "{s}"
    );
    assert_eq!(
        std::fs::read_dir(&www).expect("www").count(),
        1,
        "the owner's directory"
    );
}

/// The analysis as `brokerd --flows --json` prints it for `home`'s grants.
pub(crate) fn analysis(home: &Home) -> Value {
    let out = Command::new(bin("brokerd"))
        .arg("--config")
        .arg(home.config())
        .args(["--flows", "--json"])
        .output()
        .expect("brokerd --flows");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

pub(crate) fn planted(home: &Home, report: &Value) -> (Output, Vec<(String, String, String)>) {
    let path = home.config().with_file_name("planted.json");
    std::fs::write(&path, report.to_string()).expect("planted");
    hostile(home, &["--analysis", path.to_str().expect("path")])
}

/// A planted mistake in the analysis is caught by the live run: the flow it drops leaks
/// all the same, and the flow it adds does not happen. The same report unplanted passes.
#[test]
fn verify_hostile_catches_a_planted_mistake() {
    let (leaky, _) = home(
        "hostile-planted-drop",
        "private",
        &web("auto", "private", ""),
    );
    let report = analysis(&leaky);
    assert_eq!(
        report["flows"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    let (out, _) = planted(&leaky, &report);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut dropped = report.clone();
    dropped["flows"] = Value::Array(Vec::new());
    let (out, found) = planted(&leaky, &dropped);
    assert_eq!(out.status.code(), Some(1), "{found:#?}");
    let (level, s) = said(&found, "chain 1");
    assert_eq!(level, "fail");
    assert!(
        s.ends_with("leaked, and the flows analysis did not report it"),
        "{s}"
    );

    let (tight, _) = home("hostile-planted-add", "private", &web("auto", "public", ""));
    let mut added = analysis(&tight);
    assert_eq!(added["flows"].as_array().map(Vec::len), Some(0), "{added}");
    added["flows"] = report["flows"].clone();
    let (out, found) = planted(&tight, &added);
    assert_eq!(out.status.code(), Some(1), "{found:#?}");
    let (level, s) = said(&found, "private_out");
    assert_eq!(level, "fail");
    assert!(
        s.starts_with("the flows analysis reports a flow that no chain completed: "),
        "{s}"
    );
}

/// Laundering through a note: the read's session writes the canary to a note, a new
/// session reads it back and fetches. The note carries the writer's label, so a fetch that
/// stops at public stops the laundered chain as it stops the direct one; at private both
/// leak, and the one reported flow covers both.
#[test]
fn verify_hostile_launders_through_a_note() {
    for (max_taint, verdict) in [
        (
            "public",
            "stopped (the fetch was denied (grant web): taint_too_high)",
        ),
        ("private", "leaked, as the flows analysis reports"),
    ] {
        let (home, notes) = home(
            &format!("hostile-note-{max_taint}"),
            "private",
            &web("auto", max_taint, ""),
        );
        home.write_grant(
            "note-write",
            "tool = \"note_write\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"public\"\nuntrusted = false\n",
        );
        home.write_grant(
            "note-read",
            // Public by its grant: the note's own label is all that carries the read's.
            "tool = \"note_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"public\"\nuntrusted = false\n",
        );
        let (out, found) = hostile(&home, &[]);
        assert_eq!(out.status.code(), Some(0), "{found:#?}");
        let (level, s) = said(&found, "chain 5");
        assert_eq!(level, "ok", "{found:#?}");
        assert_eq!(
            s,
            format!(
                "read {} (private) via grant notes-read, write it to note bxhostile-5 and read \
                 that back in a new session, then send it to api.example.org via grant web: \
                 {verdict}",
                notes.display()
            )
        );
        let flows: Vec<(&str, &str)> = found
            .iter()
            .filter(|(c, _, _)| c == "private_out")
            .map(|(_, l, s)| (l.as_str(), s.as_str()))
            .collect();
        if max_taint == "public" {
            assert!(flows.is_empty(), "{flows:#?}");
        } else {
            assert_eq!(flows.len(), 1, "{flows:#?}");
            assert_eq!(flows[0].0, "ok");
            assert!(
                flows[0]
                    .1
                    .starts_with("leaked by chain 1, 5, 6, 7, 12, as reported: "),
                "{flows:#?}"
            );
        }
    }
}

/// The consult model, its URL led to the sink in the shadow (the consult key a stand-in):
/// a private read sent in a prompt leaks where the consult grant applies at private, as
/// the analysis reports (said at the owner's consult host), and is stopped at public.
#[test]
fn verify_hostile_plays_the_consult_model() {
    for (max_taint, verdict) in [
        ("private", "leaked, as the flows analysis reports"),
        (
            "public",
            "stopped (the consult was denied (grant consult-remote): taint_too_high)",
        ),
    ] {
        let (home, notes) = home(
            &format!("hostile-consult-{max_taint}"),
            "private",
            &web("auto", "public", ""),
        );
        home.append_config(
            "[broker.consult]\nurl = \"https://api.example.com/v1\"\nmodel = \"big\"\n",
        );
        home.write_grant(
            "consult-remote",
            &format!(
                "tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"{max_taint}\"\n\
                 secret = \"consult-key\"\nresult_class = \"public\"\nuntrusted = false\n"
            ),
        );
        let (out, found) = hostile(&home, &[]);
        assert_eq!(out.status.code(), Some(0), "{found:#?}");
        let (level, s) = said(&found, "chain 1");
        assert_eq!(level, "ok", "{found:#?}");
        assert_eq!(
            s,
            format!(
                "read {} (private) via grant notes-read, then send it to the consult model via \
                 grant consult-remote: {verdict}",
                notes.display()
            )
        );
        let flows: Vec<&(String, String, String)> = found
            .iter()
            .filter(|(c, _, _)| c == "private_out")
            .collect();
        if max_taint == "public" {
            assert!(flows.is_empty(), "{flows:#?}");
        } else {
            assert_eq!(flows.len(), 1, "{flows:#?}");
            assert_eq!(
                (flows[0].1.as_str(), flows[0].2.as_str()),
                (
                    "ok",
                    format!(
                        "leaked by chain 1, 6, 8, 14, as reported: a hijacked model can read {} \
                         (private) via grant notes-read and send it to the consult model at \
                         api.example.com via grant consult-remote, without asking you: set \
                         max_taint = \"public\" on consult-remote (which turns it off: \
                         every session is private from its start), or mode = \"ask\"",
                        notes.display()
                    )
                    .as_str()
                ),
                "{flows:#?}"
            );
        }
    }
}
