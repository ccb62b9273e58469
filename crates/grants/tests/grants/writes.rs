//! Where a write reads back from (every grant that reaches the place, whatever its tool and
//! mode) and the rule a write obeys there: no write down, integrity.

use grants::Snapshot;
use grants::writes::{DecidedAt, Place, Refusal, Verdict, place_labels, rule};
use proto::{DataClass, DenyReason};

use crate::hands::load;

const GRANTS: &[(&str, &str)] = &[
    (
        "notes-read",
        "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n\
         [constraints]\npaths = [\"/home/owner/notes\"]\n",
    ),
    (
        "notes-write",
        "tool = \"write_file\"\nmode = \"ask\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n\
         [constraints]\npaths = [\"/home/owner/notes\"]\n",
    ),
    (
        "vault",
        "tool = \"list_dir\"\nmode = \"deny\"\nmax_taint = \"secret\"\nresult_class = \"secret\"\n\
         [constraints]\npaths = [\"/home/owner/notes/vault\"]\n",
    ),
    (
        "www",
        "tool = \"read_file\"\nmode = \"deny\"\nmax_taint = \"secret\"\nresult_class = \"public\"\n\
         expires = \"2020-01-01T00:00:00.000Z\"\n[constraints]\npaths = [\"/srv/www\"]\n",
    ),
    (
        "www-md",
        "tool = \"edit_file\"\nmode = \"auto\"\nmax_taint = \"private\"\nresult_class = \"public\"\n\
         [constraints]\npaths = [\"/srv\"]\npatterns = [\"*.md\"]\n",
    ),
    (
        "build",
        "tool = \"run\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"public\"\n\
         [constraints]\nprograms = [\"make\"]\npatterns = [\"*\"]\n\
         workdir = \"/home/owner/project\"\n",
    ),
];

fn snapshot() -> Snapshot {
    load(GRANTS).expect("grants load")
}

fn at(taint: DataClass, untrusted: bool) -> DecidedAt {
    DecidedAt { taint, untrusted }
}

#[test]
fn a_place_is_labelled_by_every_grant_that_reaches_it() {
    let s = snapshot();
    assert_eq!(
        place_labels(&s, "/home/owner/notes/a.md", false),
        Place {
            lowest: Some((DataClass::Private, "notes-read".into())),
            highest: Some(DataClass::Secret),
            untrusted: true,
            owner_only: vec!["notes-read".into()],
        }
    );
    // A deny grant and an expired one label a place too: the owner said what it is.
    let www = place_labels(&s, "/srv/www/index.html", false);
    assert_eq!(www.lowest, Some((DataClass::Public, "www".into())));
    // Patterns narrow a single file: the edit grant reaches a.md, not a.txt.
    assert_eq!(
        place_labels(&s, "/srv/a.md", false).lowest,
        Some((DataClass::Public, "www-md".into()))
    );
    assert_eq!(place_labels(&s, "/srv/a.txt", false), Place::default());
    // A run's writable working directory reaches what it binds; a subtree reaches more.
    assert_eq!(
        place_labels(&s, "/home/owner/project/Makefile", false).lowest,
        Some((DataClass::Public, "build".into()))
    );
    let home = place_labels(&s, "/home/owner", true);
    assert_eq!(home.lowest, Some((DataClass::Public, "build".into())));
    assert_eq!(home.highest, Some(DataClass::Secret));
    assert_eq!(place_labels(&s, "/home/owner", false), Place::default());
}

#[test]
fn no_write_down_refuses_a_session_above_the_lowest_label() {
    let s = snapshot();
    let notes = place_labels(&s, "/home/owner/notes/a.md", false);
    let refused = rule(&notes, at(DataClass::Secret, false), true);
    assert_eq!(
        refused,
        Verdict::Refused(Refusal::WriteDown {
            taint: DataClass::Secret,
            lowest: DataClass::Private,
            grant: "notes-read".into(),
        })
    );
    let Verdict::Refused(r) = refused else {
        unreachable!()
    };
    assert_eq!(r.reason(), DenyReason::WriteDown);
    assert_eq!(
        r.to_string(),
        "the session is secret, and what is written here reads back as private (grant \
         notes-read): no write down"
    );
    // At the lowest label or below, the grants' mode stands.
    assert_eq!(
        rule(&notes, at(DataClass::Private, false), false),
        Verdict::Stands
    );
    assert_eq!(
        rule(&notes, at(DataClass::Public, false), false),
        Verdict::Stands
    );
    // A private session cannot write where a (deny, expired) grant says public.
    let www = place_labels(&s, "/srv/www/index.html", false);
    assert!(matches!(
        rule(&www, at(DataClass::Private, false), false),
        Verdict::Refused(Refusal::WriteDown { .. })
    ));
    // No write down is never asked, opt-in or not.
    assert!(matches!(
        rule(&www, at(DataClass::Private, true), true),
        Verdict::Refused(Refusal::WriteDown { .. })
    ));
}

#[test]
fn integrity_refuses_an_untrusted_write_where_only_the_owner_writes() {
    let s = snapshot();
    let notes = place_labels(&s, "/home/owner/notes/a.md", false);
    let refused = rule(&notes, at(DataClass::Private, true), false);
    assert_eq!(
        refused,
        Verdict::Refused(Refusal::UntrustedWrite {
            grants: vec!["notes-read".into()]
        })
    );
    let Verdict::Refused(r) = refused else {
        unreachable!()
    };
    assert_eq!(r.reason(), DenyReason::UntrustedWrite);
    assert!(
        r.to_string().contains("untrusted = false in notes-read"),
        "{r}"
    );
    // The deciding grant's if_untrusted = "ask" turns the refusal into a question.
    assert_eq!(
        rule(&notes, at(DataClass::Private, true), true),
        Verdict::Ask
    );
    // Where no grant says only the owner writes, an untrusted write stands.
    let md = place_labels(&s, "/srv/a.md", false);
    assert_eq!(
        rule(&md, at(DataClass::Public, true), false),
        Verdict::Stands
    );
}

#[test]
fn a_place_no_grant_reaches_has_nothing_to_refuse() {
    assert_eq!(
        rule(&Place::default(), at(DataClass::Secret, true), false),
        Verdict::Stands
    );
}
