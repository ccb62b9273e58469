//! The grant snapshot: what its hash covers, its canonical texts, and how a bad grant file
//! or a stray file in the directory is refused.

use std::path::PathBuf;

use grants::{GrantsError, Snapshot};
use proto::Grant;

fn snap(files: &[(&str, &str)]) -> Result<Snapshot, GrantsError> {
    Snapshot::from_texts(
        files
            .iter()
            .map(|(id, text)| {
                (
                    (*id).to_owned(),
                    (PathBuf::from(format!("g/{id}.toml")), (*text).to_owned()),
                )
            })
            .collect(),
    )
}

const NOTES: &str = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                     [constraints]\npaths = [\"/home/owner/notes\"]\n";

#[test]
fn the_hash_covers_ids_and_contents() {
    let a = snap(&[("notes", NOTES)]).expect("valid");
    assert_eq!(a.ids(), ["notes"]);
    let b = snap(&[("notes2", NOTES)]).expect("valid");
    let c = snap(&[("notes", &NOTES.replace("auto", "ask"))]).expect("valid");
    assert_ne!(a.hash(), b.hash());
    assert_ne!(a.hash(), c.hash());
    assert_eq!(a.hash(), snap(&[("notes", NOTES)]).expect("valid").hash());
}

#[test]
fn canonical_texts_ignore_comments_and_spell_out_defaults() {
    let a = snap(&[("notes", NOTES), ("web", WEB)]).expect("valid");
    let text = &a.texts()["notes"];
    assert!(text.contains("result_class = \"private\""), "{text}");
    assert!(text.contains("untrusted = true"), "{text}");
    assert_eq!(
        Grant::from_toml(text).ok().as_ref(),
        a.get("notes"),
        "{text}"
    );
    // A comment changes the hash, not the grant; a changed mode and a new grant show.
    let commented = snap(&[("notes", &format!("# mine\n{NOTES}")), ("web", WEB)]);
    let commented = commented.expect("valid");
    assert_ne!(commented.hash(), a.hash());
    assert!(commented.changed_since(&a).is_empty());
    let b = snap(&[("notes", &NOTES.replace("auto", "ask")), ("x", WEB)]).expect("valid");
    let changed = b.changed_since(&a);
    assert_eq!(changed.keys().collect::<Vec<_>>(), ["notes", "x"]);
    assert!(changed["notes"].contains("mode = \"ask\""));
}

const WEB: &str = "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"private\"\n\
                   [constraints]\nhosts = [\"example.org\"]\n";

#[test]
fn a_bad_grant_names_its_file_line_and_reason() {
    let err = snap(&[
        ("notes", NOTES),
        ("web", "tool = \"http_fetch\"\nmode = \"sometimes\"\n"),
    ])
    .expect_err("bad mode");
    assert_eq!(err.file, PathBuf::from("g/web.toml"));
    assert_eq!(err.line, 2);
    assert!(err.to_string().starts_with("g/web.toml:2:"), "{err}");
    let err = snap(&[(
        "x",
        "tool = \"shell\"\nmode = \"auto\"\nmax_taint = \"public\"\n",
    )])
    .expect_err("unknown tool");
    assert!(err.reason.contains("no tool is named"), "{err}");
    let err = snap(&[("x", &format!("{NOTES}\n"))]).map(|s| s.ids());
    assert!(err.is_ok());
    let secret = NOTES.replace("[constraints]", "secret = \"../key\"\n[constraints]");
    assert!(
        snap(&[("x", &secret)])
            .expect_err("secret")
            .reason
            .contains("credential"),
        "secret"
    );
}

#[test]
fn load_reads_a_directory_and_refuses_strays() {
    let dir = std::env::temp_dir().join(format!("bx-grants-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("notes.toml"), NOTES).expect("write");
    std::fs::write(dir.join(".hidden"), "ignored").expect("write");
    assert_eq!(Snapshot::load(&dir).expect("load").ids(), ["notes"]);
    std::fs::write(dir.join("web.tml"), NOTES).expect("write");
    let err = Snapshot::load(&dir).expect_err("stray");
    assert!(err.reason.contains("<id>.toml"), "{err}");
    std::fs::remove_file(dir.join("web.tml")).expect("rm");
    std::fs::write(dir.join("Web.toml"), NOTES).expect("write");
    assert!(
        Snapshot::load(&dir)
            .expect_err("id")
            .reason
            .contains("grant id")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `always_ask` withholds the session answer, so it is taken only on a grant that asks:
/// `mode = "ask"`, or an `auto` grant that asks once the session is untrusted. Anywhere
/// else it would change nothing, and is refused rather than silently ignored.
#[test]
fn always_ask_is_refused_on_a_grant_that_never_asks() {
    let always = |text: &str| text.replace("[constraints]", "always_ask = true\n[constraints]");
    let asking = [
        always(WEB),
        always(&NOTES.replace("auto", "ask")),
        always(&format!("if_untrusted = \"ask\"\n{NOTES}")),
    ];
    for text in &asking {
        let s = snap(&[("g", text)]).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(s.get("g").is_some_and(|g| g.always_ask), "{text}");
    }
    let never = [
        always(NOTES),
        always(&NOTES.replace("auto", "deny")),
        always(&format!(
            "if_untrusted = \"ask\"\n{}",
            NOTES.replace("auto", "deny")
        )),
        always(&format!("if_untrusted = \"deny\"\n{NOTES}")),
    ];
    for text in &never {
        let err = snap(&[("g", text)]).expect_err(text).to_string();
        assert!(
            err.contains("always_ask = true means nothing on a grant that never asks"),
            "{text}: {err}"
        );
        assert!(err.starts_with("g/g.toml: "), "{err}");
    }
}
