//! Every dependency named in any `Cargo.toml` has a row in `docs/dependencies.md`.
//!
//! The manifests are every `Cargo.toml` git tracks or would track (so the root manifest, every
//! workspace member and `fuzz/Cargo.toml`). A dependency is any entry of `[dependencies]`,
//! `[dev-dependencies]`, `[build-dependencies]` (also their `target.<cfg>` forms) and
//! `[workspace.dependencies]`. It is named by its package name: `package = "..."` when renamed,
//! else its key (a `workspace = true` entry takes the package name of the workspace entry).
//! Path dependencies (an entry with `path`, or a `workspace = true` entry whose workspace entry
//! has `path`) are workspace crates and exempt. The documentation format is in [`crate::doc`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::{Check, Error, Outcome, doc};

/// Where the dependency documentation lives, relative to the repository root.
pub const DOC_PATH: &str = "docs/dependencies.md";

type DepTable = BTreeMap<String, DepSpec>;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Manifest {
    #[serde(default)]
    dependencies: DepTable,
    #[serde(default)]
    dev_dependencies: DepTable,
    #[serde(default)]
    build_dependencies: DepTable,
    #[serde(default)]
    target: BTreeMap<String, TargetTables>,
    #[serde(default)]
    workspace: Option<WorkspaceTables>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct TargetTables {
    #[serde(default)]
    dependencies: DepTable,
    #[serde(default)]
    dev_dependencies: DepTable,
    #[serde(default)]
    build_dependencies: DepTable,
}

#[derive(Debug, Default, Deserialize)]
struct WorkspaceTables {
    #[serde(default)]
    dependencies: DepTable,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DepSpec {
    /// `name = "1.0"`
    Version(#[allow(dead_code, reason = "only the entry's shape is checked")] String),
    /// `name = { version = "1.0", package = "other", path = "...", workspace = true, ... }`
    Detailed {
        #[serde(default)]
        package: Option<String>,
        #[serde(default)]
        path: Option<String>,
        #[serde(default)]
        workspace: bool,
    },
}

/// One dependency entry of one manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The table key.
    pub key: String,
    /// The package name, when the entry itself says it (`package = "..."`).
    pub package: Option<String>,
    /// Whether the entry has `path`.
    pub path: bool,
    /// Whether the entry is `workspace = true`.
    pub workspace: bool,
    /// Where it was found, such as `crates/proto/Cargo.toml [dependencies]`.
    pub location: String,
}

/// Lists every dependency entry of the manifest `text`, found at `path`.
pub fn declared(path: &str, text: &str) -> Result<Vec<Declared>, Error> {
    let manifest: Manifest = toml::from_str(text).map_err(|err| Error::Manifest {
        path: path.to_owned(),
        detail: err.to_string(),
    })?;
    let mut out = Vec::new();
    let mut push = |table: &DepTable, section: String| {
        for (key, spec) in table {
            let (package, has_path, workspace) = match spec {
                DepSpec::Version(_) => (None, false, false),
                DepSpec::Detailed {
                    package,
                    path,
                    workspace,
                } => (package.clone(), path.is_some(), *workspace),
            };
            out.push(Declared {
                key: key.clone(),
                package,
                path: has_path,
                workspace,
                location: format!("{path} [{section}]"),
            });
        }
    };
    push(&manifest.dependencies, "dependencies".to_owned());
    push(&manifest.dev_dependencies, "dev-dependencies".to_owned());
    push(
        &manifest.build_dependencies,
        "build-dependencies".to_owned(),
    );
    for (cfg, tables) in &manifest.target {
        push(&tables.dependencies, format!("target.'{cfg}'.dependencies"));
        push(
            &tables.dev_dependencies,
            format!("target.'{cfg}'.dev-dependencies"),
        );
        push(
            &tables.build_dependencies,
            format!("target.'{cfg}'.build-dependencies"),
        );
    }
    if let Some(workspace) = &manifest.workspace {
        push(&workspace.dependencies, "workspace.dependencies".to_owned());
    }
    Ok(out)
}

/// Reads every `Cargo.toml` among `files` (relative to `root`) as (path, text) pairs.
pub fn read_manifests(root: &Path, files: &[String]) -> Result<Vec<(String, String)>, Error> {
    let mut manifests = Vec::new();
    for rel in files {
        let is_manifest = rel == "Cargo.toml" || rel.ends_with("/Cargo.toml");
        if !is_manifest || rel.starts_with("target/") {
            continue;
        }
        let path = root.join(rel);
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io { path, source })?;
        manifests.push((rel.clone(), text));
    }
    Ok(manifests)
}

/// Checks that every non-path dependency of `manifests` ((path, text) pairs) is documented in
/// `doc_text`, the contents of `docs/dependencies.md` (`None` when the file does not exist).
pub fn check(manifests: &[(String, String)], doc_text: Option<&str>) -> Result<Outcome, Error> {
    let mut all = Vec::new();
    for (path, text) in manifests {
        all.extend(declared(path, text)?);
    }
    // `workspace = true` entries resolve through the [workspace.dependencies] entries.
    let workspace_entries: BTreeMap<&str, &Declared> = all
        .iter()
        .filter(|d| d.location.ends_with("[workspace.dependencies]"))
        .map(|d| (d.key.as_str(), d))
        .collect();

    // Package name -> where it is used.
    let mut needed: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    let mut checked = 0;
    for dep in &all {
        let source = match (dep.workspace, workspace_entries.get(dep.key.as_str())) {
            (true, Some(entry)) => *entry,
            _ => dep,
        };
        if dep.path || source.path {
            continue;
        }
        checked += 1;
        let name = dep
            .package
            .clone()
            .or_else(|| source.package.clone())
            .unwrap_or_else(|| dep.key.clone());
        needed.entry(name).or_default().push(&dep.location);
    }

    let mut problems = Vec::new();
    let documented = match doc_text {
        Some(text) => {
            let parsed = doc::parse(text);
            if parsed.tables == 0 {
                problems.push(format!(
                    "{DOC_PATH} has no dependency table (a markdown table whose header is \
                     `| crate | used by | reason |`)"
                ));
            }
            problems.extend(parsed.problems);
            parsed.entries.into_keys().collect()
        }
        None => {
            problems.push(format!("{DOC_PATH} does not exist"));
            BTreeSet::new()
        }
    };
    for (name, locations) in &needed {
        if !documented.contains(name) {
            problems.push(format!(
                "`{name}` is not documented in {DOC_PATH} (declared in {})",
                locations.join(", ")
            ));
        }
    }
    Ok(Outcome {
        check: Check::Deps,
        checked,
        problems,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    const ROOT: &str = r#"
[workspace]
members = ["crates/*"]

[workspace.dependencies]
proto = { path = "crates/proto" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
json5 = { version = "0.4", package = "json5-renamed" }
"#;

    const MEMBER: &str = r#"
[package]
name = "loopd"
version.workspace = true

[dependencies]
proto.workspace = true
serde.workspace = true
json5.workspace = true

[dev-dependencies]
serde_json = { workspace = true }

[target.'cfg(unix)'.dependencies]
rustix = "1"

[build-dependencies]
helper = { path = "../helper" }
"#;

    const DOC: &str = "\
| crate | used by | reason |
|---|---|---|
| `serde` | all | derive |
| `serde_json` | all | JSON |
| `json5-renamed` | loopd | renamed in the workspace table |
| `rustix` | loopd | unix calls |
";

    fn manifests() -> Vec<(String, String)> {
        vec![
            ("Cargo.toml".to_owned(), ROOT.to_owned()),
            ("crates/loopd/Cargo.toml".to_owned(), MEMBER.to_owned()),
        ]
    }

    #[test]
    fn lists_every_table_including_target_specific_ones() {
        let found = declared("crates/loopd/Cargo.toml", MEMBER).expect("manifest parses");
        let locations: Vec<String> = found
            .iter()
            .map(|d| format!("{} {}", d.key, d.location))
            .collect();
        assert!(locations.contains(
            &"rustix crates/loopd/Cargo.toml [target.'cfg(unix)'.dependencies]".to_owned()
        ));
        assert!(
            locations.contains(&"helper crates/loopd/Cargo.toml [build-dependencies]".to_owned())
        );
        assert!(
            locations.contains(&"serde_json crates/loopd/Cargo.toml [dev-dependencies]".to_owned())
        );
        assert_eq!(found.len(), 6);
    }

    #[test]
    fn passes_when_every_dependency_is_documented() {
        let outcome = check(&manifests(), Some(DOC)).expect("check runs");
        assert!(outcome.passed(), "{outcome}");
        // serde, serde_json, json5 (root); serde, json5, serde_json, rustix (member).
        assert_eq!(outcome.checked, 7);
    }

    #[test]
    fn flags_an_undocumented_dependency_with_where_it_is_declared() {
        let doc = DOC.replace("| `rustix` | loopd | unix calls |\n", "");
        let outcome = check(&manifests(), Some(&doc)).expect("check runs");
        assert_eq!(
            outcome.problems,
            vec![
                "`rustix` is not documented in docs/dependencies.md (declared in \
                 crates/loopd/Cargo.toml [target.'cfg(unix)'.dependencies])"
                    .to_owned()
            ]
        );

        let doc = DOC.replace("| `serde` | all | derive |\n", "");
        let outcome = check(&manifests(), Some(&doc)).expect("check runs");
        assert_eq!(outcome.problems.len(), 1);
        assert!(outcome.problems[0].contains(
            "(declared in Cargo.toml [workspace.dependencies], crates/loopd/Cargo.toml [dependencies])"
        ));
    }

    #[test]
    fn fuzz_manifests_and_bad_rows_are_checked_too() {
        let mut all = manifests();
        all.push((
            "fuzz/Cargo.toml".to_owned(),
            "[package]\nname = \"fuzz\"\n[dependencies]\nlibfuzzer-sys = \"0.4\"\n\
             proto = { path = \"../crates/proto\" }\n[workspace]\nmembers = [\".\"]\n"
                .to_owned(),
        ));
        let doc = DOC.replace("| unix calls |", "|  |");
        let outcome = check(&all, Some(&doc)).expect("check runs");
        assert_eq!(outcome.problems.len(), 3, "{outcome}");
        assert!(outcome.problems[0].contains("line 6: `rustix` has no reason"));
        assert!(outcome.problems[1].contains("`libfuzzer-sys` is not documented"));
        assert!(outcome.problems[2].contains("`rustix` is not documented"));
    }

    #[test]
    fn a_missing_or_tableless_doc_fails() {
        let outcome = check(&manifests(), None).expect("check runs");
        assert_eq!(outcome.problems[0], "docs/dependencies.md does not exist");
        assert_eq!(outcome.problems.len(), 5);

        let outcome =
            check(&manifests(), Some("# Dependencies\n\nserde, serde_json\n")).expect("check runs");
        assert!(outcome.problems[0].contains("has no dependency table"));
    }

    #[test]
    fn a_broken_manifest_is_an_error() {
        let bad = vec![("Cargo.toml".to_owned(), "[dependencies\n".to_owned())];
        assert!(matches!(
            check(&bad, Some(DOC)),
            Err(Error::Manifest { .. })
        ));
        let odd = vec![(
            "Cargo.toml".to_owned(),
            "[dependencies]\nx = 3\n".to_owned(),
        )];
        assert!(matches!(
            check(&odd, Some(DOC)),
            Err(Error::Manifest { .. })
        ));
    }

    #[test]
    fn reads_only_manifests_from_the_listing() {
        let dir = TempDir::new("deps");
        dir.write("Cargo.toml", ROOT);
        dir.write("crates/loopd/Cargo.toml", MEMBER);
        dir.write("crates/loopd/src/lib.rs", "");
        let files = [
            "Cargo.toml",
            "crates/gone/Cargo.toml",
            "crates/loopd/Cargo.toml",
            "crates/loopd/src/lib.rs",
            "target/x/Cargo.toml",
        ]
        .map(str::to_owned);
        let found = read_manifests(dir.path(), &files).expect("reads");
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["Cargo.toml", "crates/loopd/Cargo.toml"]);
    }
}
