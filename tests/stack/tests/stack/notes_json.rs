//! `bxctl notes list|show|relabel --json`: one line, brokerd's wire body (`notes_listing`,
//! `note_relabelled`), and the exit codes of docs/bxctl.md: 0 done, 1 refused (no JSON, the
//! reason on stderr), 2 brokerd not reached.

use std::process::Output;

use serde_json::{Value, json};

use crate::notes::{notes_home, write};

fn one_line(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(text.lines().count(), 1, "one line of JSON: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn refused(out: &Output, code: i32, says: &str) {
    assert_eq!(out.status.code(), Some(code), "{out:?}");
    assert!(out.stdout.is_empty(), "no JSON for a refusal: {out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(says), "{err}");
}

#[test]
fn notes_list_show_and_relabel_print_brokerds_answer_as_json() {
    let (home, _) = notes_home("notes-json");
    let d = home.start();
    write(&home, "s-1", 1, "plain", "buy milk");
    std::fs::write(home.root.join("home/memory/notes/edited.md"), "x").expect("plant");

    let listing = one_line(&home.bxctl(&["notes", "list", "--json"]));
    let notes = listing["notes"].as_array().expect("notes");
    assert_eq!(notes.len(), 2, "{listing}");
    assert_eq!(listing.get("text"), None, "a listing has no text");
    let edited = &notes[0];
    assert_eq!(edited["file"], "edited.md");
    assert_eq!(
        (&edited["class"], &edited["untrusted"], &edited["matches"]),
        (&json!("secret"), &json!(true), &json!(false))
    );
    assert_eq!(edited.get("record"), None);
    let plain = &notes[1];
    assert_eq!(plain["file"], "plain.md");
    assert_eq!(
        (&plain["class"], &plain["untrusted"], &plain["matches"]),
        (&json!("private"), &json!(false), &json!(true))
    );
    assert_eq!(plain["record"]["session"], "s-1");
    assert_eq!(plain["record"]["name"], "plain");

    let shown = one_line(&home.bxctl(&["notes", "show", "plain", "--json"]));
    assert_eq!(shown["text"], "buy milk");
    assert_eq!(shown["notes"].as_array().map(Vec::len), Some(1));
    assert_eq!(shown["notes"][0]["file"], "plain.md");

    let done =
        one_line(&home.bxctl(&["notes", "relabel", "edited", "--class", "private", "--json"]));
    assert_eq!(
        done,
        json!({
            "name": "edited",
            "hash": proto::Hash32::digest(b"x").to_string(),
            "old_class": "secret",
            "old_untrusted": true,
            "class": "private",
            "untrusted": false,
        })
    );

    // Refused: exit 1, no JSON.
    refused(
        &home.bxctl(&["notes", "show", "nope", "--json"]),
        1,
        "brokerd refused",
    );
    refused(
        &home.bxctl(&["notes", "relabel", "nope", "--class", "public", "--json"]),
        1,
        "brokerd refused",
    );
    // brokerd not there: exit 2.
    drop(d);
    refused(
        &home.bxctl(&["notes", "list", "--json"]),
        2,
        "cannot reach brokerd",
    );
}
