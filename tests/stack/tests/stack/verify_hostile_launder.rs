//! `bxctl verify --hostile`'s laundering by compaction (docs/decisions.md V33): from the
//! first free read, the read's turn fills the shadow's context, loopd compacts the session
//! at its next turn with a summary that carries the canary, and the next epoch's turn sends
//! it. loopd keeps the session id across compaction and brokerd its label, so the chain
//! agrees with the direct one.

use crate::verify_hostile::{home, hostile, said, web};

/// Chain 11 (after the restarts and the smuggling chains): a private read still leaks to a
/// fetch at private after compaction, as the analysis reports; a secret read is still
/// stopped by it. Observed, never assumed: the line is `ok` only when loopd's log shows the
/// summary with the canary and the send in the next epoch.
#[test]
fn verify_hostile_launders_through_compaction() {
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
                    .starts_with("leaked by chain 1, 5, 6, 11, as reported: "),
                "{ctx}"
            );
        } else {
            assert!(flows.is_empty(), "{ctx}");
        }
    }
}
