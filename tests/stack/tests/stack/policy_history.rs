//! The policy's history reads back from the audit: each `grants_loaded` line records the
//! canonical text of every grant new or changed, `bxctl audit show --policy-at SEQ` prints
//! the grants in force at any record, and a refused reload is audited with its reason.

use std::collections::BTreeMap;

use proto::{AuditEvent, AuditLine, Grant, ToolResponse};
use stack::{Home, poll_until, read_grant, response, tool};

/// The grants `bxctl audit show --policy-at seq` prints, by id.
fn policy_at(home: &Home, seq: u64) -> BTreeMap<String, String> {
    let out = home.bxctl(&["audit", "show", "--policy-at", &seq.to_string()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(
        text.starts_with(&format!("policy in force at #{seq}: ")),
        "{text}"
    );
    text.split("\n# grant ")
        .skip(1)
        .map(|block| {
            let (header, grant) = block.split_once('\n').expect("a header line");
            let id = header.split_whitespace().next().expect("an id");
            (id.to_owned(), grant.to_owned())
        })
        .collect()
}

/// Each grant file's text in canonical form, as the audit should have recorded it.
fn canonical(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(id, text)| {
            let grant = Grant::from_toml(text).expect("grant");
            ((*id).to_owned(), grant.canonical())
        })
        .collect()
}

/// The seq of the decision for `call`.
fn decision_seq(home: &Home, call: u64) -> u64 {
    home.audit_lines()
        .iter()
        .find_map(|l| match l {
            AuditLine::Decision(r) if r.call.0 == call => Some(r.seq),
            _ => None,
        })
        .expect("decision")
}

#[test]
fn the_policy_at_any_record_reads_back_after_reloads_that_add_change_and_remove() {
    let home = Home::new("policy-history", "");
    let notes = home.files("notes", &[("n.md", "note")]);
    let docs = home.files("docs", &[("d.md", "doc")]);
    let path = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let read = |call| {
        let answer = tool(&home.loop_sock(), "s-1", call, "read_file", &path);
        assert!(matches!(response(&answer), ToolResponse::Result { .. }));
    };
    let notes_v1 = format!("# the owner's notes\n{}", read_grant("auto", &notes, ""));
    let docs_v1 = read_grant("auto", &docs, "untrusted = false");
    let web = "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\n\
               [constraints]\nhosts = [\"example.org\"]\n";
    home.write_grant("notes", &notes_v1);
    home.write_grant("docs", &docs_v1);
    let d = home.start();
    read(1);
    // One reload adds a grant; the next changes one and removes one.
    home.write_grant("web", web);
    home.reload(&d, 2);
    read(2);
    let notes_v2 = read_grant("auto", &notes, "result_class = \"secret\"");
    home.write_grant("notes", &notes_v2);
    std::fs::remove_file(home.root.join("grants/docs.toml")).expect("rm");
    home.reload(&d, 3);
    read(3);

    let first = canonical(&[("notes", &notes_v1), ("docs", &docs_v1)]);
    let added = canonical(&[("notes", &notes_v1), ("docs", &docs_v1), ("web", web)]);
    let changed = canonical(&[("notes", &notes_v2), ("web", web)]);
    assert_eq!(policy_at(&home, 0), first);
    assert_eq!(policy_at(&home, decision_seq(&home, 1)), first);
    assert_eq!(policy_at(&home, decision_seq(&home, 2)), added);
    assert_eq!(policy_at(&home, decision_seq(&home, 3)), changed);
    // The second reload recorded only what it changed.
    let recorded: Vec<Vec<String>> = home
        .audit_lines()
        .iter()
        .filter_map(|l| match l {
            AuditLine::Event(AuditEvent::GrantsLoaded { texts, .. }) => {
                Some(texts.keys().cloned().collect())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        recorded,
        [vec!["docs", "notes"], vec!["web"], vec!["notes"]],
        "texts recorded by each snapshot line"
    );

    // A refused reload is audited with its reason; the policy in force stays.
    home.write_grant("bad", "tool = \"read_file\"\nmode = \"sometimes\"\n");
    d.hup();
    let refused = poll_until(std::time::Duration::from_secs(10), || {
        home.audit_lines().into_iter().find_map(|l| match l {
            AuditLine::Event(AuditEvent::GrantsRefused {
                seq, kept, reason, ..
            }) => Some((seq, kept, reason)),
            _ => None,
        })
    });
    let (seq, kept, reason) = refused.unwrap_or_else(|| panic!("not audited: {}", d.log()));
    assert!(reason.contains("bad.toml:2:"), "{reason}");
    assert!(reason.contains("sometimes"), "{reason}");
    let last_loaded = home.audit_lines().into_iter().rev().find_map(|l| match l {
        AuditLine::Event(AuditEvent::GrantsLoaded { snapshot, .. }) => Some(snapshot),
        _ => None,
    });
    assert_eq!(Some(kept), last_loaded);
    assert_eq!(policy_at(&home, seq), changed);
    read(4);
    let shown = home.bxctl(&["audit", "show"]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(&format!("#{seq} ")), "{shown}");
    assert!(shown.contains("grants reload REFUSED"), "{shown}");
    home.assert_audit_good();
}
