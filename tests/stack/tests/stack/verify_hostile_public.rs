//! `bxctl verify --hostile` on the grant sets of its first finding (docs/decisions.md V23,
//! resolved by V24): the flows analysis and the live run agree that a grant at
//! `max_taint = "public"` never applies, every session being private from its start.

use stack::Home;

use crate::verify_hostile::{hostile, said, web};
/// The self-test's first finding (docs/decisions.md V23, resolved by V24): every session is
/// private from its start, so a grant at `max_taint = "public"` never applies. Untrusted
/// content from a fetch driving a write, either of them public-only, is a flow the analysis
/// no longer reports, and the live run agrees: the chain is stopped by the public-only
/// grant, and nothing fails.
#[test]
fn verify_hostile_agrees_that_a_public_only_grant_never_applies() {
    for (name, fetch_taint, write_taint, chain) in [
        (
            "hostile-public-both",
            "public",
            "public",
            "fetch from api.example.org via grant web, then write it under {www}: stopped (the \
             read was denied (grant web): taint_too_high)",
        ),
        (
            "hostile-public-write",
            "private",
            "public",
            "fetch from api.example.org (private) via grant web, then write it under {www} via \
             grant www-write: stopped (the write was denied (grant www-write): taint_too_high)",
        ),
    ] {
        let home = Home::new(name, "");
        let www = home.files("www", &[("index.html", "<p>hi</p>\n")]);
        home.write_grant("web", &web("auto", fetch_taint, "untrusted = true"));
        home.write_grant(
            "www-write",
            &format!(
                "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"{write_taint}\"\n\
                 [constraints]\npaths = [\"{}\"]\n",
                www.display()
            ),
        );
        let (out, found) = hostile(&home, &[]);
        let ctx = format!("{name}: {found:#?}");
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert!(
            !found
                .iter()
                .any(|(c, l, _)| c == "untrusted_write" || l == "fail"),
            "{ctx}"
        );
        let (level, s) = said(&found, "chain 1");
        assert_eq!(level, "ok", "{ctx}");
        let www_shown = www.display().to_string();
        assert_eq!(s, chain.replace("{www}", &www_shown), "{ctx}");
        assert_eq!(
            std::fs::read_dir(&www).expect("www").count(),
            1,
            "the owner's directory"
        );
    }
}
