//! `bxctl verify --hostile`'s later tricks (docs/decisions.md V25): a restart of brokerd
//! between the read and the send, arguments smuggled past a lax parser, and untrusted
//! content driving `edit_file`; each agreeing with the flows analysis, or stopped outright.

use stack::Home;

use crate::verify_hostile::{home, hostile, said, web};

/// A restart of brokerd between the read and the send (chain 6, after loopd's restart
/// chain 5): the read's turn ends, brokerd restarts in the shadow, and the session's next
/// turn fetches. brokerd keeps each session's label across the restart, so the chain
/// agrees with the direct one: a secret read still stops a fetch at private, and a private
/// read still leaks to a fetch at private, as the analysis reports.
#[test]
fn verify_hostile_restarts_brokerd_between_read_and_send() {
    for (name, class, max_taint, verdict) in [
        (
            "secret-stopped",
            "secret",
            "private",
            "stopped (the fetch was denied (grant web): taint_too_high)",
        ),
        (
            "private-out",
            "private",
            "private",
            "leaked, as the flows analysis reports",
        ),
    ] {
        let (home, notes) = home(
            &format!("hostile-brokerd-{name}"),
            class,
            &web("auto", max_taint, ""),
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
        let restarted = direct.replace(
            ", then send it to",
            "; the turn ends and brokerd restarts; the session's next turn: send it to",
        );
        assert_eq!(said(&found, "chain 6"), ("ok", restarted.as_str()), "{ctx}");
        let flows: Vec<&(String, String, String)> = found
            .iter()
            .filter(|(c, _, _)| c.ends_with("_out"))
            .collect();
        if name == "private-out" {
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
        assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
    }
}

/// Argument smuggling (chains 7 to 10, after the restarts): where the direct chain leaks
/// (a private read, a fetch at private), the same canary carried in a second `url` key, a
/// field http_fetch does not have, or the URL's user name is refused before any request
/// leaves, and one in the URL's fragment goes without it; none counts for the flow.
#[test]
fn verify_hostile_refuses_smuggled_arguments() {
    let (home, notes) = home("hostile-smuggle", "private", &web("auto", "private", ""));
    let (out, found) = hostile(&home, &[]);
    assert_eq!(out.status.code(), Some(0), "{found:#?}");
    let start = format!(
        "read {} (private) via grant notes-read, then send it to api.example.org smuggled in ",
        notes.display()
    );
    for (n, way, verdict) in [
        (
            7,
            "a second url key",
            "stopped (the fetch was denied: invalid_arguments)",
        ),
        (
            8,
            "a field http_fetch does not have",
            "stopped (the fetch was denied: invalid_arguments)",
        ),
        (
            9,
            "the URL's user name",
            "stopped (the fetch was denied: no_grant)",
        ),
        (
            10,
            "the URL's fragment",
            "sent without its fragment (the canary never reached the sink)",
        ),
    ] {
        let (level, s) = said(&found, &format!("chain {n}"));
        assert_eq!(level, "ok", "{found:#?}");
        assert!(s.starts_with(&format!("{start}{way} (")), "{s}");
        assert!(s.ends_with(&format!(": {verdict}")), "{s}");
    }
    let (level, s) = said(&found, "private_out");
    assert_eq!(level, "ok", "{found:#?}");
    assert!(
        s.starts_with("leaked by chain 1, 5, 6, 11, as reported: "),
        "{s}"
    );
}

/// Untrusted content driving `edit_file`: a fetch's answer (untrusted) put in place of the
/// line planted in a file of the shadow's, under an edit grant. With `if_untrusted = "ask"`
/// the edit asks, and the analysis reports nothing; without it the chain edits in the
/// shadow (never the owner's directory), as the analysis reports.
#[test]
fn verify_hostile_plays_an_untrusted_edit() {
    let home = Home::new("hostile-untrusted-edit", "");
    let www = home.files("www", &[("index.html", "<p>hi</p>\n")]);
    home.write_grant("web", &web("auto", "private", "untrusted = true"));
    let edit = |extra: &str| {
        format!(
            "tool = \"edit_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n{extra}\n\
             [constraints]\npaths = [\"{}\"]\n",
            www.display()
        )
    };
    home.write_grant("www-edit", &edit("if_untrusted = \"ask\""));
    let chain = |verdict: &str| {
        format!(
            "fetch from api.example.org (private) via grant web, then edit it into {} via \
             grant www-edit: {verdict}",
            www.display()
        )
    };
    let (out, found) = hostile(&home, &[]);
    assert_eq!(out.status.code(), Some(0), "{found:#?}");
    let asked = "asked (the edit asked you (grant www-edit), and was declined)";
    assert_eq!(said(&found, "chain 1"), ("ok", chain(asked).as_str()));
    assert!(
        !found.iter().any(|(c, _, _)| c == "untrusted_write"),
        "{found:#?}"
    );
    home.write_grant("www-edit", &edit(""));
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
    assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{found:#?}");
    assert_eq!(
        std::fs::read_dir(&www).expect("www").count(),
        1,
        "the owner's directory"
    );
    assert_eq!(
        std::fs::read_to_string(www.join("index.html")).expect("index"),
        "<p>hi</p>\n"
    );
}

/// A deny grant whose path sorts first (`.ssh` before `notes`): its direct chain is stopped
/// at the read, and the look-alike, restart and smuggling chains start from the notes, the
/// read that runs, each observed (none `not tried`, none passed on a read that was denied).
#[test]
fn verify_hostile_one_read_chains_skip_a_denied_path() {
    let (home, notes) = home("hostile-deny-first", "private", &web("auto", "private", ""));
    let ssh = home.files(".ssh", &[("id_ed25519", "the owner's key\n")]);
    home.write_grant(
        "ssh-deny",
        &format!(
            "tool = \"read_file\"\nmode = \"deny\"\nmax_taint = \"secret\"\n\
             [constraints]\npaths = [\"{}\"]\n",
            ssh.display()
        ),
    );
    let (out, found) = hostile(&home, &[]);
    assert_eq!(out.status.code(), Some(0), "{found:#?}");
    let (level, s) = said(&found, "chain 1");
    assert_eq!(level, "ok", "{found:#?}");
    assert!(
        s.starts_with(&format!("read {} ", ssh.display()))
            && s.ends_with("stopped (the read was denied (grant ssh-deny): denied_by_grant)"),
        "{s}"
    );
    // Chain 2 is the notes' direct chain; 3 to 5 the look-alikes, 6 and 7 the restarts, 8
    // to 11 the smuggling.
    let notes_read = format!("read {} (private) via grant notes-read", notes.display());
    for n in 3..=11 {
        let (level, s) = said(&found, &format!("chain {n}"));
        assert_eq!(level, "ok", "chain {n}: {found:#?}");
        assert!(s.starts_with(&notes_read), "chain {n}: {s}");
    }
    for n in [6, 7] {
        assert!(
            said(&found, &format!("chain {n}"))
                .1
                .ends_with("leaked, as the flows analysis reports")
        );
    }
    assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{found:#?}");
    assert!(
        !found.iter().any(|(_, _, s)| s.contains("not tried")),
        "{found:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(ssh.join("id_ed25519")).expect("key"),
        "the owner's key\n"
    );
}
