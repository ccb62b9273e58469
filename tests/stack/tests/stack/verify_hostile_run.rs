//! `bxctl verify --hostile` with `run` grants (docs/verify.md, decisions V39): each program a
//! grant names is played by a stand-in of the self-test's (a script recording its
//! arguments, never the owner's program), a program whose grant lists hosts is a sink,
//! and a grant whose patterns admit no argument carrying a canary is left out, said.

use stack::Home;

use crate::verify_hostile::{hostile, owner_notes, said};

/// A private read, the program `curl` granted with a host at `max_taint = "private"`
/// (`mode`), and `make`, granted with a host but only a fixed argument; the owner's
/// configuration maps both to a script that would leave a mark if it ever ran.
fn run_home(name: &str, mode: &str) -> (Home, std::path::PathBuf, std::path::PathBuf) {
    let home = Home::new(name, "");
    let notes = owner_notes(&home);
    let mark = home.root.join("owner-program-ran");
    let program = home.root.join("owner-program");
    std::fs::write(
        &program,
        format!("#!/bin/sh\necho ran >> '{}'\n", mark.display()),
    )
    .expect("program");
    home.append_config(&format!(
        "[broker.programs]\ncurl = \"{p}\"\nmake = \"{p}\"\n",
        p = program.display()
    ));
    home.write_grant(
        "curl-run",
        &format!(
            "tool = \"run\"\nmode = \"{mode}\"\nmax_taint = \"private\"\n\
             result_class = \"public\"\n[constraints]\nprograms = [\"curl\"]\n\
             patterns = [\"https://api.example.org/*\"]\nhosts = [\"api.example.org\"]\n"
        ),
    );
    home.write_grant(
        "make-run",
        "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         [constraints]\nprograms = [\"make\"]\npatterns = [\"--version\"]\n\
         hosts = [\"api.example.org\"]\n",
    );
    (home, notes, mark)
}

/// A private read sent as a program's argument reaches its stand-in, leaked as the analysis
/// reports; with `mode = "ask"` the run asks and nothing is reported. The grant whose only
/// pattern is fixed is not tried, saying why. The owner's program never runs.
#[test]
fn verify_hostile_plays_programs_through_stand_ins() {
    for (mode, verdict) in [
        ("auto", "leaked, as the flows analysis reports"),
        (
            "ask",
            "asked (the run asked you (grant curl-run), and was declined)",
        ),
    ] {
        let (home, notes, mark) = run_home(&format!("hostile-run-{mode}"), mode);
        let (out, found) = hostile(&home, &[]);
        let ctx = format!("{mode}: {found:#?}");
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
        let (level, s) = said(&found, "chain 1");
        assert_eq!(level, "ok", "{ctx}");
        assert_eq!(
            s,
            format!(
                "read {} (private) via grant notes-read, then send it to curl \
                 https://api.example.org/* via grant curl-run: {verdict}",
                notes.display()
            ),
            "{ctx}"
        );
        let flows: Vec<&(String, String, String)> = found
            .iter()
            .filter(|(c, _, _)| c == "private_out")
            .collect();
        if mode == "ask" {
            assert!(flows.is_empty(), "{ctx}");
        } else {
            assert_eq!(flows.len(), 1, "{ctx}");
            let (_, level, s) = flows[0];
            assert_eq!(level, "ok", "{ctx}");
            assert!(s.starts_with("leaked by chain "), "{ctx}");
            assert!(s.contains("through run curl via grant curl-run"), "{ctx}");
        }
        let left: Vec<&str> = found
            .iter()
            .filter(|(c, _, _)| c == "not-tried")
            .map(|(_, _, s)| s.as_str())
            .collect();
        assert_eq!(
            left,
            [
                "grant make-run: not tried: no argument its patterns (--version) admit can carry \
              a canary (a pattern without `*`)"
            ],
            "{ctx}"
        );
        assert!(!mark.exists(), "the owner's program ran: {ctx}");
        assert_eq!(
            std::fs::read_dir(&notes).expect("notes").count(),
            1,
            "{ctx}"
        );
    }
}
