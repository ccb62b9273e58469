//! What the `units` part asks systemd, with the tools an owner would use: `systemctl show`
//! and `list-unit-files`/`list-units`, `busctl` for the credentials (which `systemctl show`
//! prints as `[unprintable]`), and `systemd-analyze security`. Each answers over the system
//! bus, so any user may ask; nothing here changes a unit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// Whether systemd runs this system (as `sd_booted` decides).
pub fn running() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{program} {}: {} {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every unit named `boxmaker-*` that systemd has a file for or has loaded.
pub fn installed() -> Result<BTreeSet<String>, String> {
    let mut units = BTreeSet::new();
    for args in [
        &["list-unit-files", "--no-legend", "--plain", "boxmaker-*"][..],
        &[
            "list-units",
            "--all",
            "--no-legend",
            "--plain",
            "boxmaker-*",
        ][..],
    ] {
        for line in run("systemctl", args)?.lines() {
            if let Some(name) = line.split_whitespace().next() {
                units.insert(name.to_owned());
            }
        }
    }
    Ok(units)
}

/// `systemctl show -p …` of one unit: each property as printed (empty ones too).
pub fn show(unit: &str, properties: &[&str]) -> Result<BTreeMap<String, String>, String> {
    let list = properties.join(",");
    let text = run("systemctl", &["show", "-p", &list, "--", unit])?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect())
}

/// A unit's D-Bus object path, as systemd escapes it.
pub fn object_path(unit: &str) -> String {
    let mut path = String::from("/org/freedesktop/systemd1/unit/");
    for (i, b) in unit.bytes().enumerate() {
        if b.is_ascii_alphanumeric() && !(i == 0 && b.is_ascii_digit()) {
            path.push(char::from(b));
        } else {
            path.push_str(&format!("_{b:02x}"));
        }
    }
    path
}

/// The unit type's bus interface (`org.freedesktop.systemd1.Service` and the like).
fn interface(unit: &str) -> String {
    let kind = unit.rsplit('.').next().unwrap_or_default();
    let mut chars = kind.chars();
    let first = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .unwrap_or_default();
    format!("org.freedesktop.systemd1.{first}{}", chars.as_str())
}

/// The bus properties `names` of `unit`, one JSON value each (`{"type", "data"}`).
fn bus_properties(unit: &str, names: &[&str]) -> Result<Vec<Value>, String> {
    let path = object_path(unit);
    let iface = interface(unit);
    let mut args = vec![
        "--json=short",
        "get-property",
        "org.freedesktop.systemd1",
        &path,
        &iface,
    ];
    args.extend_from_slice(names);
    let text = run("busctl", &args)?;
    text.lines()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("busctl {}: {e}", names.join(" "))))
        .collect()
}

fn bus_property(unit: &str, name: &str) -> Result<Value, String> {
    bus_properties(unit, &[name])?
        .pop()
        .ok_or_else(|| format!("busctl {name}: no answer"))
}

/// Of `names`, which properties `unit` has and are empty on the bus: `systemctl show`
/// prints nothing for an empty command list (`ExecStartPreEx=`) or file list, even asked by
/// name, and nothing either for a property this systemd does not have; the bus tells the
/// two apart (it refuses an unknown property).
pub fn empty_on_bus<'a>(unit: &str, names: &[&'a str]) -> Vec<&'a str> {
    names
        .iter()
        .filter(|n| {
            bus_property(unit, n).is_ok_and(|v| v["data"].as_array().is_some_and(Vec::is_empty))
        })
        .copied()
        .collect()
}

/// A service's `LoadCredential` as `ID:PATH` words and its `SetCredential` as ids (never
/// the data, which may be a secret), keyed as `systemctl show` names them.
pub fn credentials(unit: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let load = bus_property(unit, "LoadCredential")?;
    let pairs: Vec<String> = load["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "{}:{}",
                p[0].as_str().unwrap_or_default(),
                p[1].as_str().unwrap_or_default()
            )
        })
        .collect();
    out.insert("LoadCredential".to_owned(), pairs.join(" "));
    let set = bus_property(unit, "SetCredential")?;
    let ids: Vec<&str> = set["data"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p[0].as_str().unwrap_or_default())
        .collect();
    out.insert("SetCredential".to_owned(), ids.join(" "));
    Ok(out)
}

/// `systemd-analyze security UNIT`'s overall exposure, in tenths (what `--threshold`
/// counts in).
pub fn exposure(unit: &str) -> Result<u32, String> {
    let text = run("systemd-analyze", &["security", "--", unit])?;
    exposure_of(&text, unit)
        .ok_or_else(|| format!("systemd-analyze security {unit} printed no overall exposure level"))
}

pub fn exposure_of(text: &str, unit: &str) -> Option<u32> {
    let marker = format!("Overall exposure level for {unit}: ");
    let rest = &text[text.find(&marker)? + marker.len()..];
    let figure = rest.split_whitespace().next()?;
    let (whole, tenth) = figure.split_once('.').unwrap_or((figure, "0"));
    let tenth = tenth.chars().next()?.to_digit(10)?;
    Some(whole.parse::<u32>().ok()? * 10 + tenth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_type_has_its_interface() {
        assert_eq!(interface("a.service"), "org.freedesktop.systemd1.Service");
        assert_eq!(interface("a.socket"), "org.freedesktop.systemd1.Socket");
    }

    #[test]
    fn object_paths_escape_as_systemds() {
        assert_eq!(
            object_path("boxmaker-brokerd.service"),
            "/org/freedesktop/systemd1/unit/boxmaker_2dbrokerd_2eservice"
        );
    }

    #[test]
    fn the_overall_exposure_is_read_in_tenths() {
        let text = "  ✓ UMask= Files created by service are accessible only by service's own\n\n\
                    → Overall exposure level for boxmaker-loopd.service: 3.6 OK 🙂\n";
        assert_eq!(exposure_of(text, "boxmaker-loopd.service"), Some(36));
        assert_eq!(exposure_of(text, "boxmaker-brokerd.service"), None);
        assert_eq!(
            exposure_of(
                "Overall exposure level for a.service: 10.0 UNSAFE",
                "a.service"
            ),
            Some(100)
        );
    }
}
