//! The role rules against workspaces written as `cargo metadata` shows them.

use super::*;
use serde_json::{Value, json};

/// A member as `cargo metadata` shows it; `deps` are (name, kind) path dependencies on
/// other members, plus a registry dependency on serde.
fn member(name: &str, kind: Option<&str>, deps: &[(&str, Option<&str>)]) -> Value {
    let mut dependencies = vec![json!({
        "name": "serde", "source": "registry+https://github.com/rust-lang/crates.io-index",
        "req": "^1", "kind": null, "rename": null, "optional": false,
        "uses_default_features": true, "features": ["derive"], "target": null,
        "registry": null
    })];
    for (dep, dep_kind) in deps {
        dependencies.push(json!({
            "name": dep, "source": null, "req": "*", "kind": dep_kind, "rename": null,
            "optional": false, "uses_default_features": true, "features": [],
            "target": null, "registry": null, "path": format!("/w/crates/{dep}")
        }));
    }
    let metadata = match kind {
        Some(kind) => json!({ "boxmaker": { "kind": kind } }),
        None => Value::Null,
    };
    json!({
        "name": name, "version": "0.1.0",
        "id": format!("path+file:///w/crates/{name}#0.1.0"),
        "license": "MIT OR Apache-2.0", "source": null, "dependencies": dependencies,
        "targets": [], "features": {}, "manifest_path": format!("/w/crates/{name}/Cargo.toml"),
        "metadata": metadata, "publish": [], "edition": "2024"
    })
}

fn workspace(members: Vec<Value>) -> String {
    let ids: Vec<Value> = members.iter().map(|m| m["id"].clone()).collect();
    json!({
        "packages": members, "workspace_members": ids,
        "workspace_default_members": ids, "resolve": null,
        "target_directory": "/w/target", "version": 1, "workspace_root": "/w",
        "metadata": null
    })
    .to_string()
}

fn good_members() -> Vec<Value> {
    vec![
        member("proto", Some("protocol"), &[]),
        member("daemon", Some("support"), &[("proto", None)]),
        member("loopd", Some("role"), &[("proto", None), ("daemon", None)]),
        member(
            "brokerd",
            Some("role"),
            &[("proto", None), ("daemon", None)],
        ),
        member("fake-llama-server", Some("test-peer"), &[("proto", None)]),
        member("gatecheck", Some("tooling"), &[]),
        member(
            "stack",
            Some("tests"),
            &[
                ("loopd", None),
                ("brokerd", Some("dev")),
                ("gatecheck", None),
            ],
        ),
    ]
}

fn problems_with(extra: Value) -> Vec<String> {
    let mut members = good_members();
    members.push(extra);
    let outcome = check_metadata(&workspace(members)).expect("metadata parses");
    outcome.problems
}

#[test]
fn a_well_formed_workspace_passes() {
    let outcome = check_metadata(&workspace(good_members())).expect("metadata parses");
    assert!(outcome.passed(), "{outcome}");
    assert_eq!(outcome.checked, 7);
}

#[test]
fn a_role_depending_on_a_role_fails_for_every_dependency_kind() {
    for dep_kind in [None, Some("dev"), Some("build")] {
        let problems = problems_with(member("bxctl", Some("role"), &[("loopd", dep_kind)]));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("role crate `bxctl` has a ")
                && problems[0].contains("on role crate `loopd`"),
            "{problems:?}"
        );
    }
}

#[test]
fn a_missing_or_unknown_kind_fails() {
    let problems = problems_with(member("gatewayd", None, &[("proto", None)]));
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("crate `gatewayd` declares no kind"));

    let problems = problems_with(member("gatewayd", Some("daemon"), &[]));
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("unknown kind \"daemon\""));

    let mut odd = member("odd", None, &[]);
    odd["metadata"] = json!({ "other-tool": { "x": 1 } });
    assert!(problems_with(odd)[0].contains("crate `odd` declares no kind"));
}

#[test]
fn product_crates_may_not_depend_on_tooling_or_tests() {
    for kind in ["role", "support", "protocol", "test-peer"] {
        let problems = problems_with(member("x", Some(kind), &[("gatecheck", Some("dev"))]));
        assert_eq!(problems.len(), 1, "{kind}: {problems:?}");
        assert!(problems[0].contains("dev-dependency on tooling crate `gatecheck`"));
        let problems = problems_with(member("x", Some(kind), &[("stack", None)]));
        assert!(problems[0].contains("dependency on tests crate `stack`"));
    }
}

#[test]
fn support_and_protocol_crates_may_not_depend_on_roles() {
    let problems = problems_with(member("util", Some("support"), &[("brokerd", None)]));
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("support crates never depend on role crates"));

    let problems = problems_with(member("proto2", Some("protocol"), &[("daemon", None)]));
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("the protocol crate is data only"));
}

#[test]
fn a_role_may_use_several_focused_support_crates() {
    let mut members = good_members();
    members.push(member("helpers", Some("support"), &[("daemon", None)]));
    members.push(member(
        "toolkit",
        Some("role"),
        &[("daemon", None), ("helpers", Some("dev"))],
    ));
    let outcome = check_metadata(&workspace(members)).expect("metadata parses");
    assert!(outcome.passed(), "{outcome}");
}

#[test]
fn members_in_a_circle_fail_whatever_the_dependency_kind() {
    let mut members = good_members();
    members.push(member("a", Some("support"), &[("b", None)]));
    members.push(member("b", Some("support"), &[("c", None)]));
    members.push(member("c", Some("support"), &[("a", Some("dev"))]));
    let outcome = check_metadata(&workspace(members)).expect("metadata parses");
    assert_eq!(
        outcome.problems,
        ["crates `a` -> `b` -> `c` -> `a` depend on each other in a circle: no cycles"]
    );
}

#[test]
fn a_support_crate_states_its_purpose() {
    let dir = std::env::temp_dir().join(format!("gatecheck-purpose-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let with = |name: &str, text: &str| {
        let lib = dir.join(format!("{name}.rs"));
        std::fs::write(&lib, text).expect("lib");
        let mut m = member(name, Some("support"), &[]);
        m["targets"] = json!([{ "kind": ["lib"], "src_path": lib.display().to_string() }]);
        m["description"] = json!("One thing, said once.");
        m
    };
    assert!(problems_with(with("said", "//! For one thing.\npub fn f() {}\n")).is_empty());
    let problems = problems_with(with("mute", "pub fn f() {}\n"));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("support crate `mute` does not state its purpose"));
    // The Cargo.toml says it too: no description, or an empty one, is a problem.
    for description in [Value::Null, json!("  ")] {
        let mut m = with("terse", "//! For one thing.\npub fn f() {}\n");
        m["description"] = description;
        let problems = problems_with(m);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .contains("support crate `terse` does not state its purpose: its Cargo.toml"),
            "{problems:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn registry_dependencies_and_non_members_are_not_judged() {
    let mut members = good_members();
    // A registry crate that happens to share a role's name is not that role.
    let mut role = member("inferproxy", Some("role"), &[]);
    role["dependencies"][0]["name"] = json!("loopd");
    members.push(role);
    let mut text: Value = serde_json::from_str(&workspace(members)).expect("test json is valid");
    // A package listed but not a workspace member is ignored.
    let outsider = member("outsider", None, &[("loopd", None)]);
    text["packages"]
        .as_array_mut()
        .expect("packages is an array")
        .push(outsider);
    let outcome = check_metadata(&text.to_string()).expect("metadata parses");
    assert!(outcome.passed(), "{outcome}");
}

#[test]
fn malformed_metadata_is_an_error() {
    assert!(matches!(check_metadata("{}"), Err(Error::Metadata(_))));
    assert!(matches!(
        check_metadata("not json"),
        Err(Error::Metadata(_))
    ));
}
