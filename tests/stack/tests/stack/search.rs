//! `note_search`: brokerd's index of the notes, one partition per label. A search unit has
//! only the partitions its grant's label reaches bound, and its result is labelled by the
//! highest of them, whatever the tool says it found. The index is rebuilt from the notes.

use proto::{DataClass, ToolResponse};
use stack::Home;

use crate::notes::{assert_fetch_denied, call, content, labels, notes_home, write};

/// The note tools of `notes_home`, and a search grant with `constraints` (TOML lines).
fn search_home(name: &str, constraints: &str) -> (Home, std::path::PathBuf) {
    let (home, secrets) = notes_home(name);
    home.write_grant(
        "note-search",
        &format!(
            "tool = \"note_search\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"public\"\nuntrusted = false\n[constraints]\n{constraints}\n"
        ),
    );
    (home, secrets)
}

/// A `note_search` call, after a run of the indexer (what its path unit starts after each
/// note write).
fn search(home: &Home, session: &str, n: u64, query: &str) -> ToolResponse {
    home.index();
    let args = serde_json::json!({ "query": query });
    call(home, session, n, "note_search", &args.to_string())
}

/// A secret read in s-1, then a note written: its label is secret.
fn secret_note(home: &Home, secrets: &std::path::Path) {
    let key = format!(r#"{{"path":"{}/key.txt"}}"#, secrets.display());
    call(home, "s-1", 1, "read_file", &key);
    let w = write(home, "s-1", 2, "vault", "the launch code is hunter2");
    assert!(content(&w).contains("labelled secret"), "{w:?}");
}

#[test]
fn a_secret_note_found_by_search_makes_the_searcher_secret() {
    let (home, secrets) = search_home("search-secret", "");
    let _d = home.start();
    write(&home, "s-2", 1, "plain", "buy milk and a launch pad");
    // Only private notes so far: the result is private, whatever the grant could reach.
    let r = search(&home, "s-0", 1, "launch");
    assert_eq!(content(&r), "plain: buy milk and a [launch] pad\n");
    assert_eq!(labels(&r), (DataClass::Private, false));
    secret_note(&home, &secrets);
    let r = search(&home, "s-3", 1, "launch");
    let found = content(&r);
    assert!(
        found.starts_with("vault: ") || found.contains("\nvault: "),
        "{found}"
    );
    assert!(found.contains("plain: "), "{found}");
    assert!(found.contains("[launch]"), "{found}");
    assert_eq!(labels(&r), (DataClass::Secret, false));
    assert_fetch_denied(&home, "s-3", 2);
    home.assert_audit_good();
}

#[test]
fn a_search_limited_to_private_neither_sees_nor_is_labelled_by_secret_notes() {
    let (home, secrets) = search_home("search-private", "max_class = \"private\"");
    let _d = home.start();
    secret_note(&home, &secrets);
    write(&home, "s-2", 1, "plain", "buy milk and a launch pad");
    let r = search(&home, "s-3", 1, "launch");
    assert_eq!(content(&r), "plain: buy milk and a [launch] pad\n");
    assert_eq!(labels(&r), (DataClass::Private, false));
    assert!(
        search(&home, "s-3", 2, "hunter2").eq(&ToolResponse::Result {
            content: String::new(),
            class: DataClass::Private,
            untrusted: false,
            truncated: false,
        })
    );
}

#[test]
fn a_query_with_fts_syntax_errors_is_a_typed_failure() {
    let (home, _secrets) = search_home("search-syntax", "");
    let _d = home.start();
    write(&home, "s-1", 1, "plain", "buy milk");
    for q in ["\"unbalanced", "milk AND", "nocolumn: milk"] {
        match search(&home, "s-2", 1, q) {
            ToolResponse::Failed { message, .. } => {
                assert!(
                    message.contains("the search query is not valid"),
                    "{q}: {message}"
                );
            }
            other => panic!("{q}: {other:?}"),
        }
    }
    // And brokerd keeps serving.
    assert_eq!(
        content(&search(&home, "s-2", 2, "milk")),
        "plain: buy [milk]\n"
    );
}

#[test]
fn the_index_is_rebuilt_from_the_notes_after_deletion_and_corruption() {
    let (home, secrets) = search_home("search-rebuild", "");
    let index = home.root.join("home/index");
    {
        let _d = home.start();
        secret_note(&home, &secrets);
        write(&home, "s-2", 1, "plain", "buy milk");
        write(&home, "s-2", 2, "edited", "a trusted line");
    }
    home.index();
    std::fs::remove_dir_all(&index).expect("delete the index");
    {
        let _d = home.start();
        assert!(content(&search(&home, "s-3", 1, "hunter2")).starts_with("vault: "));
        assert!(content(&search(&home, "s-3", 2, "milk")).starts_with("plain: "));
    }
    std::fs::write(index.join("secret.sqlite"), vec![0x5a; 8192]).expect("corrupt");
    std::fs::write(index.join("private.sqlite"), b"").expect("truncate");
    // A note edited on disk reads as secret and untrusted: it is indexed so.
    let edited = home.root.join("home/memory/notes/edited.md");
    std::fs::write(&edited, "an injected line").expect("edit");
    let _d = home.start();
    let r = search(&home, "s-4", 1, "hunter2");
    assert!(content(&r).starts_with("vault: "), "{r:?}");
    assert!(content(&search(&home, "s-4", 2, "milk")).starts_with("plain: "));
    let r = search(&home, "s-5", 1, "injected OR trusted");
    assert_eq!(content(&r), "edited: an [injected] line\n");
    assert_eq!(labels(&r), (DataClass::Secret, true));
}

#[test]
fn bxctl_search_shows_the_owner_every_note_with_its_label_inert() {
    let (home, secrets) = search_home("search-bxctl", "max_class = \"public\"");
    let _d = home.start();
    secret_note(&home, &secrets);
    write(
        &home,
        "s-2",
        1,
        "plain",
        "a launch \u{1b}[31mred\u{1b}[0m day",
    );
    let edited = home.root.join("home/memory/notes/plain.md");
    home.index();
    let out = home.bxctl(&["search", "launch"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(
        text.contains("vault  secret\n  the [launch] code is hunter2\n"),
        "{text}"
    );
    assert!(text.contains("plain  private\n"), "{text}");
    assert!(!text.contains('\u{1b}'), "shown inert: {text:?}");
    // An edit on disk, then the owner's relabel: the index follows the relabel.
    std::fs::write(&edited, "a launch edited on disk").expect("edit");
    let out = home.bxctl(&["notes", "relabel", "plain", "--class", "public"]);
    assert!(out.status.success(), "{out:?}");
    home.index();
    let out = home.bxctl(&["search", "--json", "edited"]);
    let found: proto::notes::NotesFound = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(found.hits.len(), 1, "{found:?}");
    assert_eq!(found.hits[0].name.as_deref(), Some("plain"));
    assert_eq!(
        (found.hits[0].class, found.hits[0].untrusted),
        (DataClass::Public, false)
    );
    // A bad query: a clear refusal, and brokerd keeps serving.
    let out = home.bxctl(&["search", "\"unbalanced"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the search query is not valid"), "{err}");
    assert!(home.bxctl(&["search", "hunter2"]).status.success());
}
