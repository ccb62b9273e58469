//! The `units` part: under systemd, each unit the module generated, as systemd runs it.
//!
//! What "generated" means is the module's own file, `units.json` beside the configuration
//! (`/etc/boxmaker/units.json`), rendered from the unit core (`nix/expected.nix`): for
//! each unit its section's assignments and, for a service, its exposure limit (in tenths,
//! as `systemd-analyze security --threshold` counts; the one source `tests/units/check.sh`
//! reads too). Per unit, one line: its `systemd-analyze security` exposure within its limit
//! and its effective properties (`props.rs`) as generated, so that a drop-in, a runtime
//! change or an edited unit file that loosens it is found; the line names the drop-ins.
//! A `boxmaker-*` unit systemd knows that the module did not generate is a `warn` (brokerd's
//! transient tool units and bxctl's own probe excepted).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use config::{Config, RunnerKind};
use serde::Deserialize;

use super::props::{self, Kind};
use super::report::{Check, Part};
use super::systemd;

const P: Part = Part::Units;

/// Units that come and go at run time and are nobody's to generate: brokerd's tool runs,
/// and the transient unit `bxctl verify` probes inferproxy from as root.
const TRANSIENT: [&str; 2] = ["boxmaker-tool-", "boxmaker-verify-probe-"];

/// Where the module's `units.json` is for the configuration at `config`.
pub fn beside(config: &Path) -> PathBuf {
    config
        .parent()
        .unwrap_or_else(|| Path::new("/"))
        .join("units.json")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub version: u32,
    pub units: BTreeMap<String, Unit>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unit {
    /// The most `systemd-analyze security` exposure allowed, in tenths (services only).
    #[serde(default)]
    pub max_exposure: Option<u32>,
    /// The unit's own section: each key's assignments, in order.
    pub set: BTreeMap<String, Vec<String>>,
}

pub fn read(path: &Path) -> Result<Expected, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let e: Expected =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if e.version != 1 {
        return Err(format!(
            "{}: version {}, and this bxctl reads version 1",
            path.display(),
            e.version
        ));
    }
    Ok(e)
}

fn tenths(t: u32) -> String {
    format!("{}.{}", t / 10, t % 10)
}

pub fn checks(config: &Config, path: &Path) -> Vec<Check> {
    // The module always runs tools as systemd units; `bxctl dev` and the stack tests run
    // them (and every role) as plain children, whatever the host runs.
    if config.broker.runner == RunnerKind::Direct {
        return vec![Check::ok(
            P,
            "units",
            "this configuration runs the roles and tools as plain processes (broker.runner = \
             direct, as `bxctl dev` does): no unit to check",
        )];
    }
    if !systemd::running() {
        return vec![Check::warn(
            P,
            "units",
            "this configuration runs tools as systemd units, but systemd does not run this \
             system: not checked",
        )];
    }
    let expected = match read(path) {
        Ok(e) => e,
        Err(why) => {
            return vec![
                Check::fail(
                    P,
                    "units",
                    format!("cannot read what the module generated: {why}"),
                )
                .help(
                    "the NixOS module installs it as /etc/boxmaker/units.json beside \
                     config.toml; give another with --units PATH",
                ),
            ];
        }
    };
    let mut checks: Vec<Check> = expected
        .units
        .iter()
        .map(|(name, unit)| one(name, unit))
        .collect();
    match systemd::installed() {
        Ok(found) => {
            for name in found {
                if !expected.units.contains_key(&name)
                    && !TRANSIENT.iter().any(|t| name.starts_with(t))
                {
                    checks.push(
                        Check::warn(
                            P,
                            name.clone(),
                            "a boxmaker unit the module did not generate",
                        )
                        .help(format!(
                            "if you did not add it, find out who did: `systemctl cat {name}`"
                        )),
                    );
                }
            }
        }
        Err(why) => checks.push(Check::fail(P, "units", why)),
    }
    checks
}

/// The line of one generated unit.
fn one(name: &str, unit: &Unit) -> Check {
    let table = props::table(name);
    let mut asked: Vec<&str> = table
        .iter()
        .filter(|p| !matches!(p.kind, Kind::Credentials | Kind::CredentialIds))
        .map(|p| p.shown)
        .collect();
    asked.extend(["LoadState", "DropInPaths"]);
    let mut live = match systemd::show(name, &asked) {
        Ok(l) => l,
        Err(why) => return Check::fail(P, name, why),
    };
    if live.get("LoadState").map(String::as_str) != Some("loaded") {
        return Check::fail(
            P,
            name,
            format!(
                "generated by the module, but systemd has not loaded it (LoadState={})",
                live.get("LoadState").map_or("?", String::as_str)
            ),
        )
        .help("`nixos-rebuild switch` installs what the module generates; then `systemctl daemon-reload`");
    }
    // What `systemctl show` left out, if the bus says it is there and empty, is empty.
    let missing: Vec<&str> = table
        .iter()
        .filter(|p| p.empty_default && !live.contains_key(p.shown))
        .filter(|p| !matches!(p.kind, Kind::Credentials | Kind::CredentialIds))
        .map(|p| p.shown)
        .collect();
    for empty in systemd::empty_on_bus(name, &missing) {
        live.insert(empty.to_owned(), String::new());
    }
    if name.ends_with(".service") {
        match systemd::credentials(name) {
            Ok(c) => live.extend(c),
            Err(why) => return Check::fail(P, name, why),
        }
    }
    let props::Compared {
        differ,
        unread,
        count,
    } = props::compare(name, &unit.set, &live);
    let exposure = match unit.max_exposure {
        Some(max) => match systemd::exposure(name) {
            Ok(e) => Some((e, max)),
            Err(why) => return Check::fail(P, name, why),
        },
        None => None,
    };
    let mut wrong = Vec::new();
    if let Some((e, max)) = exposure
        && e > max
    {
        wrong.push(format!(
            "exposure {} is above its limit {}",
            tenths(e),
            tenths(max)
        ));
    }
    for d in &differ {
        wrong.push(format!(
            "{}={} where the module generated {}={}",
            d.property, d.live, d.property, d.generated
        ));
    }
    let dropins = live
        .get("DropInPaths")
        .filter(|d| !d.is_empty())
        .map(|d| format!(" (drop-ins: {d})"))
        .unwrap_or_default();
    if !wrong.is_empty() {
        return Check::fail(P, name, format!("{}{dropins}", wrong.join("; "))).help(format!(
            "`systemctl cat {name}` shows where each setting comes from; remove what loosens \
             it (a drop-in, or a runtime change under /run/systemd/system.control), then \
             `systemctl daemon-reload` and restart it"
        ));
    }
    let compared = match count {
        1 => "its 1 compared property as generated".to_owned(),
        n => format!("its {n} compared properties as generated"),
    };
    let mut said = match exposure {
        Some((e, max)) => format!("exposure {} (limit {}); {compared}", tenths(e), tenths(max)),
        None => compared,
    };
    said.push_str(&dropins);
    if !unread.is_empty() {
        return Check::warn(
            P,
            name,
            format!(
                "{said}; this systemd does not report {}, not compared",
                unread.join(", ")
            ),
        );
    }
    Check::ok(P, name, said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_json_sits_beside_the_configuration() {
        assert_eq!(
            beside(Path::new("/etc/boxmaker/config.toml")),
            PathBuf::from("/etc/boxmaker/units.json")
        );
    }
}
