//! `bxctl verify flows` against the real stack (brokerd, loopd, inferproxy and the fake
//! llama-server as `bxctl dev` runs them, and under the real `bxctl dev`; issue 27 point 2):
//! brokerd's answer for the grants it decides by, a `warn` for private data out, a `FAIL`
//! for secret data out after the grants are reloaded, and an `ok` per severity when none.

use std::process::Output;

use stack::{Home, read_grant};

const SCRIPT: &str = "[server]\nn_ctx = 8192\ntotal_slots = 2\n\n[default]\ntext = \"ok\"\n";

fn text(out: &Output) -> String {
    stack::stdout_text(out)
}

/// `(check, level, said)` of each flows line.
fn checks(out: &Output) -> Vec<(String, String, String)> {
    stack::verify_checks(out, "flows")
}

fn web(max_taint: &str) -> String {
    format!(
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"{max_taint}\"\n\
         result_class = \"public\"\n[constraints]\nhosts = [\"api.example.org\"]\n"
    )
}

#[test]
fn verify_flows_reports_what_the_loaded_grants_let_out() {
    let home = Home::new("verify-flows", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    let vault = home.files("vault", &[("key", "hunter2\n")]);
    home.write_grant(
        "notes-read",
        &read_grant("auto", &notes, "untrusted = false"),
    );
    home.write_grant("web", &web("private"));
    let _agent = home.start_agent(SCRIPT, "");

    // Private notes and a fetch that applies at private: one warn, exit 0.
    let out = home.bxctl(&["verify", "flows", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let found = checks(&out);
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1.as_str()),
        ("private_out", "warn")
    );
    assert_eq!(
        found[0].2,
        format!(
            "a hijacked model can read {} (private) via grant notes-read and send it to \
             api.example.org via grant web, without asking you: set max_taint = \"public\" on \
             web (which turns it off: every session is private from its start), or mode = \
             \"ask\"",
            notes.display()
        )
    );
    assert_eq!(
        (found[1].0.as_str(), found[1].1.as_str()),
        ("secret_out", "ok")
    );

    // A secret grant and a fetch at secret, on disk: brokerd decides by what it loaded,
    // so nothing changes until the reload; then secret out fails, exit 1.
    home.write_grant(
        "vault-read",
        &read_grant(
            "auto",
            &vault,
            "result_class = \"secret\"\nuntrusted = false",
        ),
    );
    home.write_grant("web", &web("secret"));
    let before = checks(&home.bxctl(&["verify", "flows", "--json"]));
    assert_eq!(before, found);
    assert!(text(&home.bxctl(&["grants", "reload"])).starts_with("grants reloaded"));
    let out = home.bxctl(&["verify", "flows"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 6, "{t}");
    assert_eq!(
        lines[0],
        format!(
            "FAIL  flows  secret_out: a hijacked model can read {} (secret) via grant \
             vault-read and send it to api.example.org via grant web, without asking you: set \
             max_taint = \"private\" on web, or mode = \"ask\"",
            vault.display()
        )
    );
    assert!(
        lines[1].starts_with("            help: change ")
            && lines[1].contains("/web.toml as the line says"),
        "{t}"
    );
    assert!(
        lines[2].starts_with("warn  flows  private_out: a hijacked model can read "),
        "{t}"
    );
    assert!(
        lines[4].starts_with("ok    flows  untrusted_write: no grant lets content"),
        "{t}"
    );
    assert_eq!(lines[5], "verify: 1 ok, 1 warn, 1 FAIL");

    // The owner's fix: ask before a fetch; no flow is left.
    home.write_grant("web", &web("secret").replace("\"auto\"", "\"ask\""));
    assert!(text(&home.bxctl(&["grants", "reload"])).starts_with("grants reloaded"));
    let out = home.bxctl(&["verify", "flows", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let levels: Vec<(String, String)> = checks(&out).into_iter().map(|(c, l, _)| (c, l)).collect();
    assert_eq!(
        levels,
        [
            ("secret_out".to_owned(), "ok".to_owned()),
            ("private_out".to_owned(), "ok".to_owned()),
            ("untrusted_write".to_owned(), "ok".to_owned()),
        ]
    );
}

/// Under the real `bxctl dev`, with its sample grants: what `bxctl verify flows` says of
/// them from a second terminal, then of a fetch grant the owner adds and reloads.
#[test]
fn verify_flows_under_bxctl_dev() {
    let state = crate::dev::state_dir("verify-flows");
    let mut s = crate::dev::dev(&state, &[]);
    let bxctl = |args: &[&str]| {
        std::process::Command::new(stack::bin("bxctl"))
            .args(args)
            .env("BOXMAKER_CONFIG", state.join("config.toml"))
            .output()
            .expect("bxctl")
    };
    // The samples ask before anything leaves or is written: nothing to report.
    let out = bxctl(&["verify", "flows", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let levels: Vec<(String, String)> = checks(&out).into_iter().map(|(c, l, _)| (c, l)).collect();
    let all_ok: Vec<(String, String)> = ["secret_out", "private_out", "untrusted_write"]
        .iter()
        .map(|c| ((*c).to_owned(), "ok".to_owned()))
        .collect();
    assert_eq!(levels, all_ok);

    // The owner's own grants: a private directory read and a fetch, both without asking.
    let diary = state.join("diary");
    std::fs::create_dir_all(&diary).expect("diary");
    std::fs::write(
        state.join("grants/diary-read.toml"),
        read_grant("auto", &diary, "untrusted = false"),
    )
    .expect("grant");
    std::fs::write(state.join("grants/web.toml"), web("private")).expect("grant");
    assert!(text(&bxctl(&["grants", "reload"])).starts_with("grants reloaded"));
    let out = bxctl(&["verify", "flows"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(
        t.contains(&format!(
            "warn  flows  private_out: a hijacked model can read {} (private) via grant \
             diary-read and send it to api.example.org via grant web, without asking you",
            diary.display()
        )),
        "{t}"
    );
    // With the fetch, the samples' own reads without asking flow too: the demo's files,
    // the notes read and searched.
    for line in [
        "files/notes (private) via grant files-read and send it to api.example.org".to_owned(),
        "read the notes (private) via grant notes-read and send it to api.example.org".into(),
        "search the notes (private) via grant notes-search and send it to api.example.org".into(),
    ] {
        assert!(t.contains(&line), "{line}: {t}");
    }
    assert!(t.ends_with("verify: 2 ok, 4 warn, 0 FAIL\n"), "{t}");
    crate::dev::quit(&mut s, &state);
}
