//! The module rule against synthetic crates written to a temp dir.

use super::*;
use crate::testutil::TempDir;

/// Writes `files` (path under the crate `demo` at `crates/demo`, contents) and runs the
/// check over them.
fn run(files: &[(&str, &str)]) -> Outcome {
    run_allowing(files, &[])
}

fn run_allowing(files: &[(&str, &str)], allowed: &[Allowed<'_>]) -> Outcome {
    let dir = TempDir::new("modules");
    let mut listing = Vec::new();
    for (rel, text) in files {
        let rel = format!("crates/demo/{rel}");
        dir.write(&rel, text);
        listing.push(rel);
    }
    listing.sort();
    let crates = vec![("demo".to_owned(), "crates/demo".to_owned())];
    check(dir.path(), &crates, &listing, allowed).expect("check runs")
}

#[test]
fn finds_a_cycle_and_names_the_lines() {
    let outcome = run(&[
        ("src/lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
        ("src/a.rs", "//! A.\n\nuse crate::b::B;\npub struct A(B);\n"),
        (
            "src/b.rs",
            "pub struct B;\nfn f() -> crate::a::A { todo!() }\n",
        ),
    ]);
    assert_eq!(
        outcome.problems,
        vec![
            "crate `demo`: modules `a` -> `b` -> `a` import each other in a circle (`a` uses \
             `crate::b` at crates/demo/src/a.rs:3; `b` uses `crate::a` at \
             crates/demo/src/b.rs:2); move what they share to the module that owns it"
                .to_owned()
        ]
    );
    assert_eq!(outcome.checked, 2);
}

#[test]
fn a_chain_is_not_a_cycle() {
    let outcome = run(&[
        ("src/main.rs", "mod a;\nmod b;\nmod c;\nuse crate::a::A;\n"),
        ("src/a.rs", "use crate::b::B;\nuse crate::c::C;\n"),
        ("src/b.rs", "use crate::{c::C, Error};\n"),
        ("src/c.rs", "use crate::Error;\npub(crate) struct C;\n"),
    ]);
    assert!(outcome.passed(), "{outcome}");
    assert_eq!(outcome.checked, 3);
}

#[test]
fn finds_a_cycle_through_a_submodule_file_and_a_group() {
    let outcome = run(&[
        ("src/lib.rs", "mod server;\nmod chat;\n"),
        ("src/server/mod.rs", "mod route;\n"),
        (
            "src/server/route.rs",
            "use crate::{\n    chat::{self, Reply},\n};\n",
        ),
        ("src/chat.rs", "pub fn go() { crate::server::start() }\n"),
    ]);
    assert_eq!(outcome.problems.len(), 1, "{outcome}");
    let problem = &outcome.problems[0];
    assert!(
        problem.starts_with("crate `demo`: modules `chat` -> `server` -> `chat` import"),
        "{problem}"
    );
    assert!(
        problem.contains("crates/demo/src/server/route.rs:2"),
        "{problem}"
    );
    assert!(problem.contains("crates/demo/src/chat.rs:1"), "{problem}");
}

#[test]
fn comments_and_literals_are_not_imports() {
    let outcome = run(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\n"),
        (
            "src/b.rs",
            "// use crate::a::A;\n/// see [`crate::a::A`]\n/* crate::a /* nested */ crate::a */\n\
             const S: &str = \"crate::a::A\";\nconst R: &str = r#\"crate::a \" crate::a\"#;\n\
             const C: char = '\"'; fn f<'a>(x: &'a str) -> &'a str { x }\n\
             const T: &str = \"use crate::a;\";\n",
        ),
    ]);
    assert!(outcome.passed(), "{outcome}");
}

#[test]
fn every_circle_of_three_is_reported_once() {
    let outcome = run(&[
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("src/a.rs", "use crate::b::X;\n"),
        ("src/b.rs", "use crate::c::X;\nuse crate::a::Y;\n"),
        ("src/c.rs", "use crate::a::X;\n"),
    ]);
    let heads: Vec<&str> = outcome
        .problems
        .iter()
        .map(|p| p.split(" import").next().unwrap_or(""))
        .collect();
    assert_eq!(
        heads,
        vec![
            "crate `demo`: modules `a` -> `b` -> `a`",
            "crate `demo`: modules `a` -> `b` -> `c` -> `a`",
        ]
    );
}

#[test]
fn roots_bins_and_other_files_are_no_modules() {
    assert_eq!(module_of("lib.rs"), None);
    assert_eq!(module_of("main.rs"), None);
    assert_eq!(module_of("bin/probe.rs"), None);
    assert_eq!(module_of("a.rs"), Some("a"));
    assert_eq!(module_of("a/mod.rs"), Some("a"));
    assert_eq!(module_of("a/b/c.rs"), Some("a"));
    assert_eq!(module_of("a/data.json"), None);
    // The root's own imports are no edges; `pub(crate)` and `$crate` are handled.
    let outcome = run(&[
        (
            "src/lib.rs",
            "mod a;\nmod b;\nuse crate::a::A;\nuse crate::b::B;\n",
        ),
        (
            "src/a.rs",
            "pub(crate) fn f() {}\nmacro_rules! m { () => { $crate::b::g() } }\n",
        ),
        ("src/b.rs", "pub(in crate::b) fn g() {}\n"),
        ("src/bin/probe.rs", "mod a;\nuse crate::a::f;\n"),
    ]);
    assert!(outcome.passed(), "{outcome}");
}

#[test]
fn finds_paths_after_crate() {
    let paths = crate_paths(
        "use crate::a::X;\nuse crate :: b;\nuse crate::{c, d::{e, f}, self};\nx = crate::g;\n",
    );
    let names: Vec<(usize, &str)> = paths.iter().map(|(l, n)| (*l, n.as_str())).collect();
    assert_eq!(
        names,
        vec![(1, "a"), (2, "b"), (3, "c"), (3, "d"), (4, "g")]
    );
}

#[test]
fn reads_members_from_cargo_metadata() {
    let json = serde_json::json!({
        "packages": [
            {"name": "demo", "id": "path+file:///w/crates/demo#0.1.0",
             "manifest_path": "/w/crates/demo/Cargo.toml"},
            {"name": "gatecheck", "id": "path+file:///w/tests/gatecheck#0.1.0",
             "manifest_path": "/w/tests/gatecheck/Cargo.toml"},
            {"name": "serde", "id": "registry+serde#1.0.0",
             "manifest_path": "/home/.cargo/serde/Cargo.toml"}
        ],
        "workspace_members": ["path+file:///w/crates/demo#0.1.0",
                              "path+file:///w/tests/gatecheck#0.1.0"],
        "workspace_root": "/w"
    });
    let members = members(&json.to_string()).expect("parses");
    assert_eq!(
        members,
        vec![
            ("demo".to_owned(), "crates/demo".to_owned()),
            ("gatecheck".to_owned(), "tests/gatecheck".to_owned()),
        ]
    );
}

#[test]
fn an_allowed_cycle_passes_and_a_stale_entry_fails() {
    let files = [
        ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("src/a.rs", "use crate::b::B;\n"),
        ("src/b.rs", "use crate::a::A;\nuse crate::c::C;\n"),
        ("src/c.rs", "use crate::b::B;\n"),
    ];
    let both: &[Allowed<'_>] = &[
        ("demo", &["a", "b"], "a reason"),
        ("demo", &["b", "c"], "another"),
    ];
    assert!(run_allowing(&files, both).passed());
    // One left off fails; an entry for a cycle that is gone fails; other crates' are skipped.
    let stale: &[Allowed<'_>] = &[
        ("demo", &["a", "b"], "a reason"),
        ("demo", &["a", "c"], "gone"),
        ("other", &["x", "y"], "not checked here"),
    ];
    let outcome = run_allowing(&files, stale);
    assert_eq!(outcome.problems.len(), 2, "{outcome}");
    assert!(outcome.problems[0].starts_with("crate `demo`: modules `b` -> `c` -> `b` import"));
    assert_eq!(
        outcome.problems[1],
        "crate `demo`: allowed module cycle `a` -> `c` -> `a` no longer exists: remove it \
         from gatecheck's modules::ALLOWED"
    );
    assert!(
        ALLOWED.is_empty(),
        "the workspace has no module cycles left to allow"
    );
}

#[test]
fn a_name_the_root_brings_in_reaches_its_module() {
    let outcome = run(&[
        (
            "src/lib.rs",
            "mod error;\nmod net;\npub use error::{Failure, NetError};\n",
        ),
        (
            "src/error.rs",
            "use crate::net::words;\npub struct NetError;\n",
        ),
        ("src/net.rs", "use crate::NetError;\npub fn words() {}\n"),
    ]);
    assert_eq!(outcome.problems.len(), 1, "{outcome}");
    assert!(
        outcome.problems[0]
            .contains("`net` uses `crate::error` at crates/demo/src/net.rs:1 (`crate::NetError`)"),
        "{outcome}"
    );
}

#[test]
fn reads_the_names_a_root_brings_in() {
    let modules: BTreeSet<String> = ["a", "b", "c", "d"].map(str::to_owned).into();
    let names = root_names(
        "pub use a::{X, inner::{Y as Z, self}, *};\nuse crate::b::B as Front;\n\
         pub(crate) use self::c;\nuse std::fmt::Display;\n// use d::Hidden;\nuse d::*;\n",
        &modules,
    );
    let names: Vec<(&str, &str)> = names
        .iter()
        .map(|(name, module)| (name.as_str(), module.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![("Front", "b"), ("X", "a"), ("Z", "a"), ("c", "c")]
    );
}

#[test]
fn finds_a_parent_and_child_that_import_each_other() {
    // accounting/mod.rs re-exports its child's error while the child takes a constant the
    // parent defines: the circle `accounting` <-> `accounting::log` (brokerd's, once).
    let outcome = run(&[
        ("src/lib.rs", "pub mod accounting;\n"),
        (
            "src/accounting/mod.rs",
            "mod log;\nmod record;\npub use log::LogError;\npub use record::Record;\n\
             pub const OWNER: u8 = 1;\n",
        ),
        (
            "src/accounting/log.rs",
            "use super::{OWNER, Record};\npub enum LogError {}\n",
        ),
        ("src/accounting/record.rs", "pub struct Record;\n"),
    ]);
    assert_eq!(
        outcome.problems,
        vec![
            "crate `demo`: module `accounting` and its child `accounting::log` import each \
             other (`accounting::log` uses `accounting`'s own items at \
             crates/demo/src/accounting/log.rs:1 (`super::OWNER`); `accounting` names \
             `accounting::log`'s at crates/demo/src/accounting/mod.rs:3 (`log::LogError`)); \
             move what they share into a module of its own beside `accounting::log`, or into \
             the one that owns it"
                .to_owned()
        ]
    );
    assert!(
        run_allowing(
            &[
                ("src/lib.rs", "pub mod accounting;\n"),
                (
                    "src/accounting/mod.rs",
                    "mod log;\npub use log::L;\nfn f() {}\n"
                ),
                (
                    "src/accounting/log.rs",
                    "pub struct L;\nfn g() { super::f() }\n"
                ),
            ],
            &[("demo", &["accounting", "accounting::log"], "a reason")]
        )
        .passed()
    );
}

#[test]
fn a_parent_and_child_circle_is_seen_at_any_depth_and_through_crate_paths() {
    let outcome = run(&[
        ("src/lib.rs", "mod a;\n"),
        ("src/a/mod.rs", "mod b;\n"),
        (
            "src/a/b/mod.rs",
            "mod c;\npub(crate) fn shared() {}\nfn go() { c::d::run() }\n",
        ),
        ("src/a/b/c/mod.rs", "pub mod d;\n"),
        (
            "src/a/b/c/d.rs",
            "pub fn run() { super::super::shared(); crate::a::b::shared() }\n",
        ),
    ]);
    assert_eq!(outcome.problems.len(), 1, "{outcome}");
    let problem = &outcome.problems[0];
    assert!(
        problem.starts_with("crate `demo`: module `a::b` and its child `a::b::c` import"),
        "{problem}"
    );
    assert!(
        problem.contains(
            "d.rs:1 (`super::super::shared`), crates/demo/src/a/b/c/d.rs:1 \
                          (`crate::a::b::shared`)"
        ),
        "{problem}"
    );
    assert!(problem.contains("mod.rs:3 (`c::d::run`)"), "{problem}");
}

#[test]
fn what_a_parent_shares_from_a_sibling_its_root_and_its_tests_are_no_circle() {
    let outcome = run(&[
        // The crate root is no parent: its crate-wide error is the crate's.
        (
            "src/lib.rs",
            "mod error;\nmod net;\npub use net::Net;\npub struct Error;\n",
        ),
        ("src/net.rs", "use crate::Error;\npub struct Net;\n"),
        ("src/error.rs", "pub fn f() {}\n"),
        // A name the parent brings in from a child is that child's: a sibling's import.
        (
            "src/notes/mod.rs",
            "mod error;\nmod run;\npub use error::NoteError;\npub use run::Prep;\n\
             pub struct Notes;\n#[cfg(test)]\nmod tests;\n\
             mod inline { use super::Notes; }\n",
        ),
        ("src/notes/error.rs", "pub struct NoteError;\n"),
        (
            "src/notes/run.rs",
            "use super::NoteError;\npub enum Prep {}\n",
        ),
        // A test module below a child may build the parent's whole.
        ("src/notes/tests.rs", "use super::{Notes, run::Prep};\n"),
        ("src/a/mod.rs", "mod b;\npub use b::B;\npub struct A;\n"),
        (
            "src/a/b/mod.rs",
            "pub struct B;\n#[cfg(test)]\nmod tests;\n",
        ),
        ("src/a/b/tests.rs", "use super::super::A;\n"),
    ]);
    assert!(outcome.passed(), "{outcome}");
}
