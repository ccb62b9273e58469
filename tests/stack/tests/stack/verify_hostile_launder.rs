//! `bxctl verify --hostile`'s laundering by compaction and by search (docs/decisions.md
//! V33, V34). Compaction: from the first free read, the read's turn fills the shadow's
//! context, loopd compacts the session at its next turn with a summary that carries the
//! canary, and the next epoch's turn sends it; loopd keeps the session id across compaction
//! and brokerd its label, so the chain agrees with the direct one. Search: the read's
//! session writes the canary to a note (or says it, into loopd's log), the shadow's indexer
//! indexes it under the session's label, and a new session finds it by searching for its
//! words, then sends; the search raises the new session to what it reaches, so the send
//! stops where the direct one does.

use crate::verify_hostile::{home, hostile, said, web};

/// Chain 11 (after the restarts and the smuggling chains): a private read still leaks to a
/// fetch at private after compaction, as the analysis reports; a secret read is still
/// stopped by it. Observed, never assumed: the line is `ok` only when loopd's log shows the
/// summary with the canary and the send in the next epoch. Chains 12 (`note_search`) and 13
/// (`session_search`) agree the same way.
#[test]
fn verify_hostile_launders_through_compaction_and_search() {
    for (name, class, verdict) in [
        (
            "private-out",
            "private",
            "leaked, as the flows analysis reports",
        ),
        (
            "secret-stopped",
            "secret",
            "stopped (the fetch was denied (grant web): taint_too_high)",
        ),
    ] {
        let (home, notes) = home(
            &format!("hostile-compact-{name}"),
            class,
            &web("auto", "private", ""),
        );
        // The searches reach the private notes and logs only where the read is private (a
        // search is labelled by the highest partition it reaches, whatever it found, and
        // a session's records are indexed secret until brokerd has seen it: one reaching
        // every class would make the new session secret, docs/memory.md); where the read is
        // secret they reach everything, the secret note and log included.
        let reach = if class == "private" {
            "[constraints]\nmax_class = \"private\"\n"
        } else {
            ""
        };
        let plain = |tool: &str, reach: &str| {
            format!(
                "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 result_class = \"public\"\nuntrusted = false\n{reach}"
            )
        };
        home.write_grant("note-write", &plain("note_write", ""));
        home.write_grant("note-search", &plain("note_search", reach));
        home.write_grant("session-search", &plain("session_search", reach));
        let (out, found) = hostile(&home, &[]);
        let ctx = format!("{name}: {found:#?}");
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        let direct = format!(
            "read {} ({class}) via grant notes-read, then send it to api.example.org via \
             grant web: {verdict}",
            notes.display()
        );
        assert_eq!(said(&found, "chain 1"), ("ok", direct.as_str()), "{ctx}");
        let compacted = direct.replace(
            ", then send it to",
            "; the turn ends and the session compacts, its summary carrying it; the next \
             epoch's turn: send it to",
        );
        assert_eq!(
            said(&found, "chain 11"),
            ("ok", compacted.as_str()),
            "{ctx}"
        );
        let noted = direct.replace(
            " via grant notes-read, then send it to",
            " via grant notes-read, write it to note bxsearch-12 and find that by note_search \
             for its words in a new session, then send it to",
        );
        assert_eq!(said(&found, "chain 12"), ("ok", noted.as_str()), "{ctx}");
        let logged = direct.replace(
            " via grant notes-read, then send it to",
            " via grant notes-read, say it, and find that by session_search for its words in \
             a new session, then send it to",
        );
        assert_eq!(said(&found, "chain 13"), ("ok", logged.as_str()), "{ctx}");
        // The verdicts agree: no `compaction` line, and nothing failed or went unobserved.
        assert!(!found.iter().any(|(c, _, _)| c == "compaction"), "{ctx}");
        assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
        assert!(
            !found.iter().any(|(_, _, s)| s.contains("not observed")),
            "{ctx}"
        );
        let flows: Vec<&(String, String, String)> = found
            .iter()
            .filter(|(c, _, _)| c.ends_with("_out"))
            .collect();
        if class == "private" {
            assert_eq!(flows.len(), 1, "{ctx}");
            assert_eq!(flows[0].1, "ok", "{ctx}");
            assert!(
                flows[0]
                    .2
                    .starts_with("leaked by chain 1, 5, 6, 11, 12, 13, as reported: "),
                "{ctx}"
            );
        } else {
            assert!(flows.is_empty(), "{ctx}");
        }
    }
}
