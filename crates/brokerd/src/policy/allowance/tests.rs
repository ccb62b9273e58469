//! The allowance rules from grant files as an owner writes them: the scope each subject
//! gives, what a scope holds, the label rule, and when a card offers the session answer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use grants::Snapshot;
use proto::allowance::{MAX_SCOPE, Scope, SessionOffer};
use proto::tools::ToolArgs;
use proto::{DataClass, Timestamp};

use super::{grant_text, holds, offer, scope, within};
use crate::policy::{Decision, SessionView, decide};

fn snapshot(grants: &[(&str, &str)]) -> Snapshot {
    let files: BTreeMap<String, (PathBuf, String)> = grants
        .iter()
        .map(|(id, text)| {
            let path = PathBuf::from(format!("{id}.toml"));
            ((*id).to_owned(), (path, (*text).to_owned()))
        })
        .collect();
    Snapshot::from_texts(files).expect("valid grants")
}

const PRIVATE: SessionView = SessionView {
    taint: DataClass::Private,
    untrusted: false,
};

const HOUR: Duration = Duration::from_secs(3600);

fn decided(grants: &[(&str, &str)], tool: &str, args: &str, at: SessionView) -> Decision {
    let args = ToolArgs::parse(tool, args).expect("args");
    let now = Timestamp::from_millis(1_789_632_300_000).expect("now");
    decide(&snapshot(grants), &args, at, now)
}

fn grant(tool: &str, mode: &str, extra: &str, constraints: &str) -> String {
    format!(
        "tool = \"{tool}\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\nuntrusted = false\n\
         {extra}\n[constraints]\n{constraints}\n"
    )
}

/// Each subject's scope is what the grant covered: the normalised path, the URL's host as
/// the grant matched it, the note's name, or the whole grant for a tool that names nothing.
#[test]
fn the_scope_is_the_subject_the_grant_covered() {
    let paths = "paths = [\"/srv\"]";
    let cases: [(&str, String, &str, Option<Scope>); 7] = [
        (
            "read_file",
            grant("read_file", "ask", "", paths),
            r#"{"path":"//srv/notes/./a.md/"}"#,
            Some(Scope::Path {
                path: "/srv/notes/a.md".into(),
            }),
        ),
        (
            "list_dir",
            grant("list_dir", "ask", "", paths),
            r#"{"path":"/srv/notes"}"#,
            Some(Scope::Path {
                path: "/srv/notes".into(),
            }),
        ),
        (
            "http_fetch",
            grant("http_fetch", "ask", "", "hosts = [\"*.example.org\"]"),
            r#"{"url":"https://WWW.Example.ORG.:8443/a?b=c"}"#,
            Some(Scope::Host {
                host: "www.example.org".into(),
            }),
        ),
        (
            "consult",
            grant("consult", "ask", "", ""),
            r#"{"prompt":"hello"}"#,
            Some(Scope::Grant),
        ),
        (
            "note_read",
            grant("note_read", "ask", "", ""),
            r#"{"name":"todo"}"#,
            Some(Scope::Note {
                name: "todo".into(),
            }),
        ),
        (
            "note_write",
            grant("note_write", "ask", "", ""),
            r#"{"mode":"append","name":"todo","text":"x"}"#,
            Some(Scope::Note {
                name: "todo".into(),
            }),
        ),
        (
            "note_list",
            grant("note_list", "ask", "", ""),
            "{}",
            Some(Scope::Grant),
        ),
    ];
    for (tool, text, args, want) in cases {
        let d = decided(&[("g", &text)], tool, args, PRIVATE);
        assert_eq!(scope(&d), want, "{tool} {args}");
    }
    // A denial has no subject.
    let d = decided(&[], "read_file", r#"{"path":"/srv/a"}"#, PRIVATE);
    assert_eq!(scope(&d), None);
    // A subject longer than a scope may name gets no scope (and so no offer).
    let text = grant("read_file", "ask", "", paths);
    let at = |n: usize| format!(r#"{{"path":"/srv/{}"}}"#, "a".repeat(n));
    let d = decided(&[("g", &text)], "read_file", &at(MAX_SCOPE - 5), PRIVATE);
    assert!(scope(&d).is_some_and(|s| s.value().map(str::len) == Some(MAX_SCOPE)));
    let d = decided(&[("g", &text)], "read_file", &at(MAX_SCOPE - 4), PRIVATE);
    assert_eq!(scope(&d), None);
    assert_eq!(offer(&d, PRIVATE, HOUR), None);
}

#[test]
fn a_scope_holds_what_falls_under_it_and_nothing_beside() {
    let path = |p: &str| Scope::Path { path: p.into() };
    let host = |h: &str| Scope::Host { host: h.into() };
    let note = |n: &str| Scope::Note { name: n.into() };
    for (scope, call, held) in [
        (path("/srv/notes"), path("/srv/notes"), true),
        (path("/srv/notes"), path("/srv/notes/a/b.md"), true),
        (path("/srv/notes"), path("/srv/notes2"), false),
        (path("/srv/notes"), path("/srv"), false),
        (path("/srv/notes/a.md"), path("/srv/notes/b.md"), false),
        (host("example.org"), host("example.org"), true),
        (host("example.org"), host("www.example.org"), false),
        (host("www.example.org"), host("example.org"), false),
        (note("todo"), note("todo"), true),
        (note("todo"), note("todo2"), false),
        (Scope::Grant, Scope::Grant, true),
        (path("/"), host("example.org"), false),
        (Scope::Grant, note("todo"), false),
    ] {
        assert_eq!(holds(&scope, &call), held, "{scope:?} holds {call:?}");
    }
}

#[test]
fn a_later_call_is_covered_only_at_or_below_the_answers_label() {
    let at = |taint, untrusted| SessionView { taint, untrusted };
    let (public, private, secret) = (DataClass::Public, DataClass::Private, DataClass::Secret);
    for (view, ceiling, ok) in [
        (at(private, false), at(private, false), true),
        (at(public, false), at(private, false), true),
        (at(secret, false), at(private, false), false),
        (at(private, true), at(private, false), false),
        (at(private, true), at(private, true), true),
        (at(private, false), at(private, true), true),
        (at(secret, true), at(secret, true), true),
        (at(secret, true), at(private, true), false),
    ] {
        assert_eq!(within(view, ceiling), ok, "{view:?} within {ceiling:?}");
    }
}

/// The card offers the session answer only for an ask no asking grant marks `always_ask`,
/// and only when the call's own result leaves the session at the label it is decided at.
#[test]
fn the_offer_is_withheld_for_always_ask_and_for_a_call_that_would_outgrow_it() {
    let paths = "paths = [\"/srv\"]";
    let list = r#"{"path":"/srv/notes"}"#;
    let offered = |grants: &[(&str, &str)], at| {
        let d = decided(grants, "list_dir", list, at);
        offer(&d, at, HOUR)
    };
    let asks = grant("list_dir", "ask", "", paths);
    assert_eq!(
        offered(&[("g", &asks)], PRIVATE),
        Some(SessionOffer {
            scope: Scope::Path {
                path: "/srv/notes".into()
            },
            lasts_secs: 3600,
        })
    );
    // always_ask on the deciding grant, or on any other grant that asks for the call.
    let always = grant("list_dir", "ask", "always_ask = true", paths);
    assert_eq!(offered(&[("g", &always)], PRIVATE), None);
    assert_eq!(offered(&[("a", &asks), ("z", &always)], PRIVATE), None);
    assert_eq!(offered(&[("a", &always), ("z", &asks)], PRIVATE), None);
    // An always_ask grant that does not ask here (its taint limit passed) withholds nothing.
    let low = always.replace("max_taint = \"secret\"", "max_taint = \"public\"");
    assert!(offered(&[("a", &asks), ("z", &low)], PRIVATE).is_some());
    // An auto grant asking only once untrusted, marked always_ask: asked, never offered.
    let auto = grant(
        "list_dir",
        "auto",
        "if_untrusted = \"ask\"\nalways_ask = true",
        paths,
    );
    let untrusted = SessionView {
        untrusted: true,
        ..PRIVATE
    };
    assert_eq!(offered(&[("g", &auto)], untrusted), None);
    // No ask, no offer.
    assert_eq!(
        offered(&[("g", &grant("list_dir", "auto", "", paths))], PRIVATE),
        None
    );
    // The result would make a trusted session untrusted, or a private one secret: the
    // allowance would end with this call, so it is not offered; once the session is
    // there, it is.
    let untrusting = grant("list_dir", "ask", "", paths).replace("untrusted = false", "");
    assert_eq!(offered(&[("g", &untrusting)], PRIVATE), None);
    assert!(offered(&[("g", &untrusting)], untrusted).is_some());
    let secret = grant("list_dir", "ask", "result_class = \"secret\"", paths);
    assert_eq!(offered(&[("g", &secret)], PRIVATE), None);
    let at_secret = SessionView {
        taint: DataClass::Secret,
        ..PRIVATE
    };
    assert!(offered(&[("g", &secret)], at_secret).is_some());
    // Another grant that only labels the call counts too.
    let labels = grant("list_dir", "auto", "result_class = \"secret\"", paths)
        .replace("max_taint = \"secret\"", "max_taint = \"public\"");
    assert_eq!(offered(&[("g", &asks), ("l", &labels)], PRIVATE), None);
}

#[test]
fn the_grant_text_changes_with_the_grant_and_not_with_its_comments() {
    let paths = "paths = [\"/srv\"]";
    let text = grant("list_dir", "ask", "", paths);
    let s = snapshot(&[("a", &text), ("b", &format!("# mine\n{text}"))]);
    let (a, b) = (s.get("a").expect("a"), s.get("b").expect("b"));
    assert_eq!(grant_text(a), grant_text(b));
    let wider = snapshot(&[("a", &text.replace("/srv", "/home"))]);
    assert_ne!(grant_text(a), grant_text(wider.get("a").expect("a")));
}
