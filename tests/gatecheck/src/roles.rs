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
//! - a product crate (`role`, `support`, `protocol`, `test-peer`) never depends on a
//!   `tooling` or `tests` crate;
//! - a `support` crate never depends on a `role` crate;
//! - the `protocol` crate is data only: it depends on no `role`, `support` or `test-peer` crate;
//! - no members depend on each other in a circle (dev-dependencies included, which cargo
//!   alone would allow);
//! - a `support` crate states its one purpose: its library's root file opens with a `//!`
//!   comment, and its `Cargo.toml` has a `description`.
//!
//! A role may use as many support crates as it needs: what keeps the house clean is that
//! each support crate is focused and none of them reaches up (`docs/decisions.md` F13).

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
    description: Option<String>,
    #[serde(default)]
    dependencies: Vec<Dependency>,
    #[serde(default)]
    metadata: Option<PackageMetadata>,
    #[serde(default)]
    targets: Vec<Target>,
}

#[derive(Debug, Deserialize)]
struct Target {
    #[serde(default)]
    kind: Vec<String>,
    src_path: String,
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
        }
        if kind == Kind::Support {
            problems.extend(purpose_problems(package));
        }
    }

    problems.extend(cycles(&packages, &kinds));

    Ok(Outcome {
        check: Check::Roles,
        checked: packages.len(),
        problems,
    })
}

/// A support crate whose library root does not open with a `//!` statement of purpose, or
/// whose `Cargo.toml` has no `description` to say it in one line.
fn purpose_problems(package: &Package) -> Vec<String> {
    let Some(lib) = package
        .targets
        .iter()
        .find(|t| t.kind.iter().any(|k| k == "lib"))
    else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let text = std::fs::read_to_string(&lib.src_path).unwrap_or_default();
    if !text.trim_start().starts_with("//!") {
        problems.push(format!(
            "support crate `{}` does not state its purpose: {} must open with a `//!` \
             comment saying what the crate is for",
            package.name, lib.src_path
        ));
    }
    if package
        .description
        .as_deref()
        .is_none_or(|d| d.trim().is_empty())
    {
        problems.push(format!(
            "support crate `{}` does not state its purpose: its Cargo.toml needs a \
             `description` saying in one line what the crate is for",
            package.name
        ));
    }
    problems
}

/// Every circle of path dependencies among the members (any dependency kind), once each,
/// named from its smallest member.
fn cycles(packages: &[&Package], kinds: &BTreeMap<&str, Kind>) -> Vec<String> {
    let edges: BTreeMap<&str, BTreeSet<&str>> = packages
        .iter()
        .map(|p| {
            let deps = p
                .dependencies
                .iter()
                .filter(|d| d.path.is_some() && kinds.contains_key(d.name.as_str()))
                .map(|d| d.name.as_str())
                .collect();
            (p.name.as_str(), deps)
        })
        .collect();
    let mut found = BTreeSet::new();
    for &start in edges.keys() {
        // Depth-first from `start`, keeping to members that sort after it, so each circle
        // is reported from its smallest member only.
        let mut stack = vec![(start, vec![start])];
        let mut seen = BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for &next in edges.get(at).into_iter().flatten() {
                if next == start {
                    let mut circle = path.clone();
                    circle.push(start);
                    found.insert(circle);
                } else if next > start && seen.insert(next) {
                    let mut longer = path.clone();
                    longer.push(next);
                    stack.push((next, longer));
                }
            }
        }
    }
    found
        .into_iter()
        .map(|circle| {
            let names: Vec<String> = circle.iter().map(|n| format!("`{n}`")).collect();
            format!(
                "crates {} depend on each other in a circle: no cycles",
                names.join(" -> ")
            )
        })
        .collect()
}

fn known_kinds() -> String {
    let names: Vec<String> = Kind::ALL.iter().map(|kind| format!("\"{kind}\"")).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests;
