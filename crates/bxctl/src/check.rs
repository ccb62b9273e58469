//! `bxctl grants check`: a grants directory through brokerd's own loader, without starting
//! anything (so a `run` grant naming a shell without `shell = true` is refused here as
//! there), with what a loader cannot say: grants already expired, `run` grants that pass any
//! argument, and why a TOML date given for `expires` is refused.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use grants::{GrantsError, Snapshot};
use proto::Timestamp;
use serde_json::json;

use crate::Error;
use crate::admin::print_json;

/// Exit 0 when the directory loads (warnings or not), 1 when it does not.
pub fn grants(dir: &Path, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    match Snapshot::load(dir) {
        Ok(s) => {
            let mut warnings = expired(&s, Timestamp::now());
            warnings.extend(any_argument(&s));
            // Which grants belong to a scheduled job (and apply to its runs only).
            let jobs: serde_json::Map<String, serde_json::Value> = s
                .iter()
                .filter_map(|(id, g)| Some((id.to_owned(), json!(g.job.as_ref()?.as_str()))))
                .collect();
            if json {
                return print_json(
                    &json!({
                        "dir": dir.display().to_string(),
                        "good": true,
                        "snapshot": s.hash(),
                        "grants": s.ids(),
                        "jobs": jobs,
                        "warnings": warnings,
                    }),
                    out,
                );
            }
            writeln!(
                out,
                "{}: {} grants good ({}), snapshot {}",
                dir.display(),
                s.ids().len(),
                s.ids().join(", "),
                s.hash()
            )
            .map_err(Error::Output)?;
            for (id, job) in &jobs {
                writeln!(out, "  {id}: job {}", job.as_str().unwrap_or_default())
                    .map_err(Error::Output)?;
            }
            for w in &warnings {
                writeln!(out, "warning: {w}").map_err(Error::Output)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let help = date_help(&e);
            if json {
                print_json(
                    &json!({
                        "dir": dir.display().to_string(),
                        "good": false,
                        "error": {
                            "file": e.file.display().to_string(),
                            "line": e.line,
                            "column": e.column,
                            "reason": e.reason,
                        },
                        "help": help,
                    }),
                    out,
                )?;
            } else {
                writeln!(out, "{e}").map_err(Error::Output)?;
                if let Some(help) = help {
                    writeln!(out, "help: {help}").map_err(Error::Output)?;
                }
            }
            Ok(ExitCode::from(1))
        }
    }
}

/// A warning for each grant whose `expires` is past at `now`.
fn expired(s: &Snapshot, now: Timestamp) -> Vec<String> {
    s.iter()
        .filter_map(|(id, g)| {
            let at = g.expires?;
            (at <= now).then(|| {
                format!(
                    "grant {id} expired at {at}: the calls it covers are denied (grant_expired) \
                     until you change or remove it"
                )
            })
        })
        .collect()
}

/// A warning for each allowing `run` grant whose patterns let any argument through: the
/// program then runs whatever its arguments say (`python3 -c …`).
fn any_argument(s: &Snapshot) -> Vec<String> {
    s.iter()
        .filter(|(_, g)| g.tool == "run" && g.mode != proto::Mode::Deny)
        .filter(|(_, g)| g.constraints.patterns.iter().any(|p| p == "*"))
        .map(|(id, g)| {
            format!(
                "grant {id} passes any argument to {}: each runs whatever its arguments tell \
                 it to (python3 -c, say); narrow constraints.patterns to what you mean",
                g.constraints.programs.join(", ")
            )
        })
        .collect()
}

/// When the refused file gives `expires` as a bare TOML date (`expires = 2026-12-31`), what
/// to write instead: TOML's own dates carry no fixed precision or zone, so grants take the
/// one timestamp form the audit writes back.
fn date_help(e: &GrantsError) -> Option<String> {
    let text = std::fs::read_to_string(&e.file).ok()?;
    let bare = text.lines().any(|l| {
        l.trim_start()
            .strip_prefix("expires")
            .and_then(|rest| rest.trim_start().strip_prefix('='))
            .is_some_and(|v| v.trim_start().starts_with(|c: char| c.is_ascii_digit()))
    });
    bare.then(|| {
        "`expires` is a quoted UTC timestamp with exactly three fraction digits, \
         `expires = \"2026-12-31T23:59:59.000Z\"`, not a bare TOML date"
            .to_owned()
    })
}
