//! The policy table: every outcome and every deny reason, from grant files as an owner
//! writes them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use brokerd::policy::{self, Approval, Labels, Outcome, SessionView};
use grants::Snapshot;
use proto::tools::ToolArgs;
use proto::{DataClass, DenyReason, Timestamp};

pub(crate) fn snapshot(grants: &[(&str, &str)]) -> Snapshot {
    let files: BTreeMap<String, (PathBuf, String)> = grants
        .iter()
        .map(|(id, text)| {
            (
                (*id).to_owned(),
                (PathBuf::from(format!("{id}.toml")), (*text).to_owned()),
            )
        })
        .collect();
    Snapshot::from_texts(files).expect("valid grants")
}

const NOW: u64 = 1_789_632_300_000;

pub(crate) fn now() -> Timestamp {
    Timestamp::from_millis(NOW).expect("now")
}

pub(crate) const PRIVATE: SessionView = SessionView {
    taint: DataClass::Private,
    untrusted: false,
};

fn read(path: &str) -> ToolArgs {
    ToolArgs::parse("read_file", &format!(r#"{{"path":"{path}"}}"#)).expect("args")
}

pub(crate) fn fetch(url: &str) -> ToolArgs {
    ToolArgs::parse("http_fetch", &format!(r#"{{"url":"{url}"}}"#)).expect("args")
}

fn notes(mode: &str, max_taint: &str) -> String {
    format!(
        "tool = \"read_file\"\nmode = \"{mode}\"\nmax_taint = \"{max_taint}\"\n\
         [constraints]\npaths = [\"/home/owner/notes\"]\n"
    )
}

pub(crate) fn web(mode: &str, extra: &str) -> String {
    format!(
        "tool = \"http_fetch\"\nmode = \"{mode}\"\nmax_taint = \"private\"\nresult_class = \
         \"public\"\n{extra}\n[constraints]\nhosts = [\"example.org\", \"*.wikipedia.org\"]\n"
    )
}

pub(crate) fn deny_reason(o: Outcome<'_>) -> Option<DenyReason> {
    match o {
        Outcome::Deny { reason, .. } => Some(reason),
        _ => None,
    }
}

#[test]
fn auto_allows_within_its_constraints() {
    let s = snapshot(&[("notes", &notes("auto", "secret"))]);
    let d = policy::decide(&s, &read("/home/owner/notes/todo.md"), PRIVATE, now());
    assert_eq!(
        d.outcome(),
        Outcome::Allow {
            grant_id: "notes",
            approval: None
        }
    );
    assert_eq!(d.grant().map(|(g, _)| g.tool.as_str()), Some("read_file"));
}

#[test]
fn no_grant_denies_with_the_mismatch_as_detail() {
    let s = snapshot(&[("notes", &notes("auto", "secret"))]);
    let d = policy::decide(&s, &read("/etc/shadow"), PRIVATE, now());
    match d.outcome() {
        Outcome::Deny {
            reason: DenyReason::NoGrant,
            grant_id: None,
            detail,
        } => assert!(detail.contains("grant notes"), "{detail}"),
        other => panic!("{other:?}"),
    }
    let d = policy::decide(&s, &fetch("https://example.org/"), PRIVATE, now());
    assert_eq!(deny_reason(d.outcome()), Some(DenyReason::NoGrant));
}

#[test]
fn ask_needs_the_owner_and_approval_records_who() {
    let s = snapshot(&[("web", &web("ask", ""))]);
    let wiki = fetch("https://en.wikipedia.org/wiki/X");
    let d = policy::decide(&s, &wiki, PRIVATE, now());
    assert_eq!(d.outcome(), Outcome::Ask { grant_id: "web" });
    // Only the desk makes the approval that turns an ask into an allow: the owner's
    // approve of the card as it was shown.
    let approved = crate::approvals::approved_by("uid 1000 (owner)");
    let d = policy::approve(d, approved);
    let approval = Approval {
        approver: "uid 1000 (owner)".into(),
        post: None,
        allowance: None,
    };
    assert_eq!(
        d.outcome(),
        Outcome::Allow {
            grant_id: "web",
            approval: Some(&approval)
        }
    );
}

#[test]
fn refusal_and_expiry_are_their_own_reasons() {
    let s = snapshot(&[("web", &web("ask", ""))]);
    let ask = || policy::decide(&s, &fetch("https://example.org/"), PRIVATE, now());
    let refused = policy::refuse(ask(), DenyReason::ApprovalRefused, "no");
    assert_eq!(
        deny_reason(refused.outcome()),
        Some(DenyReason::ApprovalRefused)
    );
    let expired = policy::refuse(ask(), DenyReason::ApprovalExpired, "late");
    assert_eq!(
        deny_reason(expired.outcome()),
        Some(DenyReason::ApprovalExpired)
    );
    let capped = policy::too_many_pending(ask(), 16);
    assert_eq!(
        deny_reason(capped.outcome()),
        Some(DenyReason::TooManyPendingApprovals)
    );
}

#[test]
fn deny_dominates_ask_dominates_allow() {
    let s = snapshot(&[
        ("a-auto", &web("auto", "")),
        ("b-ask", &web("ask", "")),
        ("c-deny", &web("deny", "")),
    ]);
    let args = fetch("https://example.org/");
    assert_eq!(
        deny_reason(policy::decide(&s, &args, PRIVATE, now()).outcome()),
        Some(DenyReason::DeniedByGrant)
    );
    let s = snapshot(&[("a-auto", &web("auto", "")), ("b-ask", &web("ask", ""))]);
    assert_eq!(
        policy::decide(&s, &args, PRIVATE, now()).outcome(),
        Outcome::Ask { grant_id: "b-ask" }
    );
    // A deny grant that does not cover the request does not deny it.
    let narrow_deny = "tool = \"http_fetch\"\nmode = \"deny\"\nmax_taint = \"public\"\n\
                       [constraints]\nhosts = [\"evil.example\"]\n";
    let s = snapshot(&[("a-auto", &web("auto", "")), ("z-deny", narrow_deny)]);
    assert_eq!(
        policy::decide(&s, &args, PRIVATE, now()).outcome(),
        Outcome::Allow {
            grant_id: "a-auto",
            approval: None
        }
    );
}

#[test]
fn a_deny_grant_denies_at_any_taint_and_without_constraints_covers_the_tool() {
    let all = "tool = \"read_file\"\nmode = \"deny\"\nmax_taint = \"public\"\n";
    let s = snapshot(&[("notes", &notes("auto", "secret")), ("no-reading", all)]);
    let secret = SessionView {
        taint: DataClass::Secret,
        untrusted: false,
    };
    let d = policy::decide(&s, &read("/home/owner/notes/a"), secret, now());
    assert_eq!(
        d.outcome(),
        Outcome::Deny {
            reason: DenyReason::DeniedByGrant,
            grant_id: Some("no-reading"),
            detail: "grant no-reading denies this"
        }
    );
}

#[test]
fn taint_above_max_taint_is_refused() {
    let s = snapshot(&[("web", &web("auto", ""))]);
    let secret = SessionView {
        taint: DataClass::Secret,
        untrusted: false,
    };
    let d = policy::decide(&s, &fetch("https://example.org/"), secret, now());
    assert_eq!(deny_reason(d.outcome()), Some(DenyReason::TaintTooHigh));
    // At the ceiling itself the grant applies.
    let d = policy::decide(&s, &fetch("https://example.org/"), PRIVATE, now());
    assert!(matches!(d.outcome(), Outcome::Allow { .. }));
}

#[test]
fn an_expired_grant_no_longer_applies() {
    let expires = |t: u64| {
        let ts = Timestamp::from_millis(t).expect("ts");
        format!("expires = \"{ts}\"")
    };
    let s = snapshot(&[("web", &web("auto", &expires(NOW)))]);
    let d = policy::decide(&s, &fetch("https://example.org/"), PRIVATE, now());
    assert_eq!(deny_reason(d.outcome()), Some(DenyReason::GrantExpired));
    let s = snapshot(&[("web", &web("auto", &expires(NOW + 1)))]);
    let d = policy::decide(&s, &fetch("https://example.org/"), PRIVATE, now());
    assert!(matches!(d.outcome(), Outcome::Allow { .. }));
}

#[test]
fn if_untrusted_tightens_only_after_untrusted_content() {
    let s = snapshot(&[("web", &web("auto", "if_untrusted = \"ask\""))]);
    let args = fetch("https://example.org/");
    assert!(matches!(
        policy::decide(&s, &args, PRIVATE, now()).outcome(),
        Outcome::Allow { .. }
    ));
    let untrusted = SessionView {
        taint: DataClass::Private,
        untrusted: true,
    };
    assert_eq!(
        policy::decide(&s, &args, untrusted, now()).outcome(),
        Outcome::Ask { grant_id: "web" }
    );
    let s = snapshot(&[("web", &web("ask", "if_untrusted = \"deny\""))]);
    assert_eq!(
        deny_reason(policy::decide(&s, &args, untrusted, now()).outcome()),
        Some(DenyReason::DeniedByGrant)
    );
    // It never loosens: a deny grant stays deny.
    let s = snapshot(&[("web", &web("deny", "if_untrusted = \"ask\""))]);
    assert_eq!(
        deny_reason(policy::decide(&s, &args, untrusted, now()).outcome()),
        Some(DenyReason::DeniedByGrant)
    );
}

#[test]
fn among_allowing_grants_the_most_conservative_labels_win() {
    let a = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \
             \"public\"\nuntrusted = false\n[constraints]\npaths = [\"/home/owner\"]\n";
    let b = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \
             \"secret\"\n[constraints]\npaths = [\"/home/owner/notes\"]\n";
    let s = snapshot(&[("a-broad", a), ("b-secret", b)]);
    let d = policy::decide(&s, &read("/home/owner/notes/x"), PRIVATE, now());
    assert_eq!(
        d.labels(),
        Some(Labels {
            class: DataClass::Secret,
            untrusted: true
        })
    );
}

#[test]
fn invalid_arguments_and_unknown_tools_never_reach_the_grants() {
    let e = ToolArgs::parse("read_file", r#"{"path":"/a","path":"/b"}"#).expect_err("dup");
    assert_eq!(
        deny_reason(policy::invalid(&e).outcome()),
        Some(DenyReason::InvalidArguments)
    );
    let e = ToolArgs::parse("shell", "{}").expect_err("unknown");
    assert_eq!(
        deny_reason(policy::invalid(&e).outcome()),
        Some(DenyReason::UnknownTool)
    );
}

#[test]
fn decisions_are_deterministic() {
    let s = snapshot(&[
        ("a-auto", &web("auto", "")),
        ("b-ask", &web("ask", "")),
        ("notes", &notes("auto", "secret")),
    ]);
    let args = fetch("https://example.org/");
    let first = format!("{:?}", policy::decide(&s, &args, PRIVATE, now()).outcome());
    for _ in 0..10 {
        assert_eq!(
            format!("{:?}", policy::decide(&s, &args, PRIVATE, now()).outcome()),
            first
        );
    }
}

/// A read_file grant for `paths` with every field that matters here spelled out.
fn file_grant(mode: &str, paths: &str, class: &str, untrusted: bool, extra: &str) -> String {
    format!(
        "tool = \"read_file\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\nresult_class = \
         \"{class}\"\nuntrusted = {untrusted}\n{extra}\n[constraints]\npaths = [{paths}]\n"
    )
}

fn expired_line() -> String {
    let ts = Timestamp::from_millis(NOW - 1).expect("ts");
    format!("expires = \"{ts}\"")
}

const SECRET_FILE: &str = "/home/owner/secrets/key";

/// The owner labelled the secrets directory secret and untrusted; a wider grant over the
/// whole home, of any mode, must not unlabel it, whichever of the two decides the mode.
#[test]
fn every_pair_of_modes_labels_by_every_covering_grant() {
    let modes = ["auto", "ask", "deny"];
    for narrow in modes {
        for wide in modes {
            let s = snapshot(&[
                (
                    "home-wide",
                    &file_grant(wide, "\"/home/owner\"", "private", false, ""),
                ),
                (
                    "secrets-narrow",
                    &file_grant(narrow, "\"/home/owner/secrets\"", "secret", true, ""),
                ),
            ]);
            let d = policy::decide(&s, &read(SECRET_FILE), PRIVATE, now());
            let strictest = if narrow == "deny" || wide == "deny" {
                "deny"
            } else if narrow == "ask" || wide == "ask" {
                "ask"
            } else {
                "auto"
            };
            // The audit names the grant whose mode decided: the first in id order among
            // those of the strictest mode.
            let decider = if wide == strictest {
                "home-wide"
            } else {
                "secrets-narrow"
            };
            let case = format!("narrow {narrow}, wide {wide}");
            match (strictest, d.outcome()) {
                (
                    "deny",
                    Outcome::Deny {
                        reason, grant_id, ..
                    },
                ) => {
                    assert_eq!(reason, DenyReason::DeniedByGrant, "{case}");
                    assert_eq!(grant_id, Some(decider), "{case}");
                }
                ("ask", Outcome::Ask { grant_id }) | ("auto", Outcome::Allow { grant_id, .. }) => {
                    assert_eq!(grant_id, decider, "{case}");
                    assert_eq!(
                        d.labels(),
                        Some(Labels {
                            class: DataClass::Secret,
                            untrusted: true
                        }),
                        "{case}"
                    );
                }
                (want, got) => panic!("{case}: wanted {want}, got {got:?}"),
            }
        }
    }
}

#[test]
fn two_auto_grants_join_class_and_untrusted() {
    let s = snapshot(&[
        (
            "a-secret",
            &file_grant("auto", "\"/home/owner\"", "secret", false, ""),
        ),
        (
            "b-public",
            &file_grant("auto", "\"/home/owner\"", "public", true, ""),
        ),
    ]);
    let d = policy::decide(&s, &read(SECRET_FILE), PRIVATE, now());
    assert_eq!(
        d.labels(),
        Some(Labels {
            class: DataClass::Secret,
            untrusted: true
        })
    );
}

/// A covering grant that does not apply now (expired, or the session above its
/// `max_taint`) still labels what another grant lets through.
#[test]
fn a_covering_grant_that_does_not_apply_still_labels() {
    let expired = expired_line();
    let cases = [
        file_grant("auto", "\"/home/owner/secrets\"", "secret", true, &expired),
        "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"public\"\nresult_class = \
         \"secret\"\nuntrusted = true\n[constraints]\npaths = [\"/home/owner/secrets\"]\n"
            .to_owned(),
    ];
    for narrow in &cases {
        let s = snapshot(&[
            (
                "home-wide",
                &file_grant("auto", "\"/home/owner\"", "private", false, ""),
            ),
            ("secrets-narrow", narrow),
        ]);
        let d = policy::decide(&s, &read(SECRET_FILE), PRIVATE, now());
        assert_eq!(
            d.outcome(),
            Outcome::Allow {
                grant_id: "home-wide",
                approval: None
            },
            "{narrow}"
        );
        assert_eq!(
            d.labels(),
            Some(Labels {
                class: DataClass::Secret,
                untrusted: true
            }),
            "{narrow}"
        );
    }
}

#[test]
fn grant_expired_only_when_an_expired_grant_covers_the_call() {
    let expired = expired_line();
    let s = snapshot(&[(
        "old-notes",
        &file_grant("auto", "\"/home/owner/notes\"", "private", false, &expired),
    )]);
    let covered = policy::decide(&s, &read("/home/owner/notes/a"), PRIVATE, now());
    assert_eq!(
        deny_reason(covered.outcome()),
        Some(DenyReason::GrantExpired)
    );
    let elsewhere = policy::decide(&s, &read("/etc/passwd"), PRIVATE, now());
    assert_eq!(deny_reason(elsewhere.outcome()), Some(DenyReason::NoGrant));
}

/// What a tool unit binds is labelled by every grant of any tool whose paths reach it: a
/// directory bound for list_dir brings a subdirectory that a read_file grant labels secret.
#[test]
fn bound_labels_reach_across_tools_and_into_a_listed_directory() {
    let s = snapshot(&[
        (
            "home-list",
            "tool = \"list_dir\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             [constraints]\npaths = [\"/home/owner\"]\n",
        ),
        (
            "secrets-read",
            &file_grant("deny", "\"/home/owner/secrets\"", "secret", false, ""),
        ),
        (
            "keys-only",
            &file_grant("auto", "\"/home/owner\"", "secret", true, "")
                .replace("[constraints]\n", "[constraints]\npatterns = [\"*.key\"]\n"),
        ),
    ]);
    let home = policy::bound_labels(&s, &["/home/owner"], true);
    assert_eq!(
        home,
        Labels {
            class: DataClass::Secret,
            untrusted: true
        }
    );
    // A single file is reached only where a grant's patterns match it.
    let todo = policy::bound_labels(&s, &["/home/owner/todo.md"], false);
    assert_eq!(todo.class, DataClass::Private);
    assert!(todo.untrusted, "home-list's default untrusted flag");
    let key = policy::bound_labels(&s, &["/home/owner/a.key"], false);
    assert_eq!(key.class, DataClass::Secret);
    // Below a directory, patterns are not narrowed: anything there may match them.
    let notes = policy::bound_labels(&s, &["/home/owner/notes"], true);
    assert_eq!(
        notes.class,
        DataClass::Secret,
        "keys-only's patterns may match below"
    );
    // A sibling of the secrets reaches neither their grant nor anything below it.
    let s = snapshot(&[
        (
            "secrets-read",
            &file_grant("deny", "\"/home/owner/secrets\"", "secret", false, ""),
        ),
        ("web", &web("auto", "")),
    ]);
    let notes = policy::bound_labels(&s, &["/home/owner/notes"], true);
    assert_eq!(notes, Labels::NONE);
}
