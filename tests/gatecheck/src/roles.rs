//! Every workspace member declares its kind, and kinds depend on each other only as allowed.
//!
//! Each member's `Cargo.toml` has
//!
//! ```toml
//! [package.metadata.boxmaker]
//! kind = "role"   # or "support", "protocol", "test-peer", "tooling", "tests"
//! ```
//!
//! Rules, over normal, dev and build dependencies alike (a dependency counts when it is a
//! path dependency on another workspace member):
//! - a `role` crate never depends on another `role` crate;
//! - a `role` crate depends on at most one `support` crate;
//! - a product crate (`role`, `support`, `protocol`, `test-peer`) never depends on a
//!   `tooling` or `tests` crate;
//! - a `support` crate never depends on a `role` crate;
//! - the `protocol` crate is data only: it depends on no `role`, `support` or `test-peer` crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use crate::{Check, Error, Outcome};

/// What a workspace member is, from `[package.metadata.boxmaker] kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A daemon or the admin CLI: one of the isolated roles.
    Role,
    /// A small non-role library the roles share (socket handoff, config, peer checks).
    Support,
    /// `proto`: wire types only.
    Protocol,
    /// A peer shipped for tests, such as the fake llama-server.
    TestPeer,
    /// Development tooling such as gatecheck.
    Tooling,
    /// A test-only crate such as the stack tests.
    Tests,
}

impl Kind {
    pub const ALL: [Self; 6] = [
        Self::Role,
        Self::Support,
        Self::Protocol,
        Self::TestPeer,
        Self::Tooling,
        Self::Tests,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Role => "role",
            Self::Support => "support",
            Self::Protocol => "protocol",
            Self::TestPeer => "test-peer",
            Self::Tooling => "tooling",
            Self::Tests => "tests",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Whether crates of this kind are part of what is built and deployed.
    pub fn is_product(self) -> bool {
        !matches!(self, Self::Tooling | Self::Tests)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The part of `cargo metadata --format-version 1 --no-deps` that the check reads.
#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Package {
    name: String,
    id: String,
    #[serde(default)]
    dependencies: Vec<Dependency>,
    #[serde(default)]
    metadata: Option<PackageMetadata>,
}

#[derive(Debug, Deserialize)]
struct PackageMetadata {
    #[serde(default)]
    boxmaker: Option<BoxmakerMetadata>,
}

#[derive(Debug, Deserialize)]
struct BoxmakerMetadata {
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Dependency {
    /// The depended-on package's own name (not a rename).
    name: String,
    /// `null` for a normal dependency, `"dev"` or `"build"`.
    #[serde(default)]
    kind: Option<String>,
    /// Set for path dependencies.
    #[serde(default)]
    path: Option<String>,
}

impl Dependency {
    fn section(&self) -> &str {
        match self.kind.as_deref() {
            Some("dev") => "dev-dependency",
            Some("build") => "build-dependency",
            _ => "dependency",
        }
    }
}

/// Runs `cargo metadata --format-version 1 --no-deps` for the workspace at `root`.
pub fn cargo_metadata(root: &Path) -> Result<String, Error> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(root.join("Cargo.toml"));
    crate::run_command(&mut command, "cargo metadata --format-version 1 --no-deps")
}

/// Checks the kinds and the dependencies between the workspace members described by
/// `json`, the output of `cargo metadata --format-version 1 --no-deps`.
pub fn check_metadata(json: &str) -> Result<Outcome, Error> {
    let metadata: Metadata = serde_json::from_str(json).map_err(Error::Metadata)?;
    let members: BTreeSet<&str> = metadata
        .workspace_members
        .iter()
        .map(String::as_str)
        .collect();
    let packages: Vec<&Package> = metadata
        .packages
        .iter()
        .filter(|package| members.contains(package.id.as_str()))
        .collect();

    let mut problems = Vec::new();
    let mut kinds: BTreeMap<&str, Kind> = BTreeMap::new();
    for package in &packages {
        let declared = package
            .metadata
            .as_ref()
            .and_then(|m| m.boxmaker.as_ref())
            .and_then(|b| b.kind.as_deref());
        match declared.map(|name| (name, Kind::from_name(name))) {
            Some((_, Some(kind))) => {
                kinds.insert(&package.name, kind);
            }
            Some((name, None)) => problems.push(format!(
                "crate `{}` declares unknown kind \"{name}\" in [package.metadata.boxmaker] \
                 (known: {})",
                package.name,
                known_kinds()
            )),
            None => problems.push(format!(
                "crate `{}` declares no kind: add [package.metadata.boxmaker] kind = one of {}",
                package.name,
                known_kinds()
            )),
        }
    }

    for package in &packages {
        let Some(&kind) = kinds.get(package.name.as_str()) else {
            continue;
        };
        let mut supports: BTreeSet<&str> = BTreeSet::new();
        for dep in &package.dependencies {
            if dep.path.is_none() {
                continue;
            }
            let Some(&dep_kind) = kinds.get(dep.name.as_str()) else {
                continue;
            };
            let broken = match (kind, dep_kind) {
                (Kind::Role, Kind::Role) => Some("role crates never depend on each other"),
                (k, Kind::Tooling | Kind::Tests) if k.is_product() => {
                    Some("product crates never depend on tooling or test crates")
                }
                (Kind::Support, Kind::Role) => Some("support crates never depend on role crates"),
                (Kind::Protocol, Kind::Role | Kind::Support | Kind::TestPeer) => {
                    Some("the protocol crate is data only and depends on no other product crate")
                }
                _ => None,
            };
            if let Some(rule) = broken {
                problems.push(format!(
                    "{kind} crate `{}` has a {} on {dep_kind} crate `{}`: {rule}",
                    package.name,
                    dep.section(),
                    dep.name
                ));
            }
            if kind == Kind::Role && dep_kind == Kind::Support {
                supports.insert(&dep.name);
            }
        }
        if supports.len() > 1 {
            let list: Vec<String> = supports.iter().map(|name| format!("`{name}`")).collect();
            problems.push(format!(
                "role crate `{}` depends on {} support crates ({}): a role depends on at most one",
                package.name,
                supports.len(),
                list.join(", ")
            ));
        }
    }

    Ok(Outcome {
        check: Check::Roles,
        checked: packages.len(),
        problems,
    })
}

fn known_kinds() -> String {
    let names: Vec<String> = Kind::ALL.iter().map(|kind| format!("\"{kind}\"")).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
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
    fn a_role_may_use_at_most_one_support_crate() {
        let problems = problems_with(member(
            "toolkit",
            Some("role"),
            &[("daemon", None), ("helpers", None)],
        ));
        // `helpers` is not a member yet: only one support crate is known, so it passes.
        assert!(problems.is_empty(), "{problems:?}");

        let mut members = good_members();
        members.push(member("helpers", Some("support"), &[]));
        members.push(member(
            "toolkit",
            Some("role"),
            &[("daemon", None), ("helpers", Some("dev"))],
        ));
        let outcome = check_metadata(&workspace(members)).expect("metadata parses");
        assert_eq!(outcome.problems.len(), 1);
        assert!(outcome.problems[0].contains("depends on 2 support crates (`daemon`, `helpers`)"));
    }

    #[test]
    fn registry_dependencies_and_non_members_are_not_judged() {
        let mut members = good_members();
        // A registry crate that happens to share a role's name is not that role.
        let mut role = member("inferproxy", Some("role"), &[]);
        role["dependencies"][0]["name"] = json!("loopd");
        members.push(role);
        let mut text: Value =
            serde_json::from_str(&workspace(members)).expect("test json is valid");
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
}
