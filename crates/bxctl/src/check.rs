//! `bxctl grants check`: a grants directory through brokerd's own loader, without starting
//! anything (so a `run` grant naming a shell without `shell = true` is refused here as
//! there), with what a loader cannot say: every file that does not load (the loader stops
//! at the first), the word a misspelt key, mode or tool was probably meant to be, grants
//! already expired, `run` grants that pass any argument, a granted path that is not there,
//! a directory with no grant at all, and why a TOML date given for `expires` is refused.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use grants::{GrantsError, Snapshot};
use proto::Timestamp;
use serde_json::json;

use crate::Error;
use crate::output::print_json;

/// Exit 0 when the directory loads (warnings or not), 1 when it does not, 2 when it is not
/// a directory bxctl can read.
pub fn grants(
    dir: &Path,
    from: &'static str,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    if let Err(source) = std::fs::read_dir(dir) {
        return Err(Error::GrantsDir {
            path: dir.to_owned(),
            from,
            error: source,
        });
    }
    match Snapshot::load(dir) {
        Ok(s) => good(dir, &s, json, out),
        Err(first) => {
            // Every file's reason, not the first alone.
            let mut all = Snapshot::problems(dir);
            if all.is_empty() {
                all.push(first);
            }
            bad(dir, &all, json, out)
        }
    }
}

fn good(dir: &Path, s: &Snapshot, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let mut warnings = expired(s, Timestamp::now());
    warnings.extend(missing_paths(s));
    warnings.extend(any_argument(s));
    if s.ids().is_empty() {
        warnings.push(format!(
            "{} holds no grant: every tool call is denied (no_grant); a grant is a file \
             <id>.toml (docs/grants.md)",
            dir.display()
        ));
    }
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
        writeln!(out, "  {id}: job {}", job.as_str().unwrap_or_default()).map_err(Error::Output)?;
    }
    for w in &warnings {
        writeln!(out, "warning: {w}").map_err(Error::Output)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn bad(
    dir: &Path,
    all: &[GrantsError],
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    if json {
        let errors: Vec<serde_json::Value> = all
            .iter()
            .map(|e| {
                json!({
                    "file": e.file.display().to_string(),
                    "line": e.line,
                    "column": e.column,
                    "reason": e.reason,
                    "help": help(e),
                })
            })
            .collect();
        // `error` and `help` are the first file's, as before `errors` listed them all.
        let first = &errors[0];
        print_json(
            &json!({
                "dir": dir.display().to_string(),
                "good": false,
                "error": {
                    "file": first["file"],
                    "line": first["line"],
                    "column": first["column"],
                    "reason": first["reason"],
                },
                "help": first["help"],
                "errors": errors,
            }),
            out,
        )?;
    } else {
        for e in all {
            writeln!(out, "{e}").map_err(Error::Output)?;
            if let Some(help) = help(e) {
                writeln!(out, "help: {help}").map_err(Error::Output)?;
            }
        }
        if all.len() > 1 {
            writeln!(
                out,
                "{}: {} files do not load; brokerd loads none of the directory until all do",
                dir.display(),
                all.len()
            )
            .map_err(Error::Output)?;
        }
    }
    Ok(ExitCode::from(1))
}

/// What to do about `e`: the word meant, or the date form to write.
fn help(e: &GrantsError) -> Option<String> {
    did_you_mean(&e.reason)
        .map(|word| format!("did you mean `{word}`?"))
        .or_else(|| date_help(e))
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

/// A warning for each granted path that is not there (yet): a call under it fails until it
/// is, and a typing mistake in it grants nothing.
fn missing_paths(s: &Snapshot) -> Vec<String> {
    s.iter()
        .flat_map(|(id, g)| {
            g.constraints
                .paths
                .iter()
                .filter(|p| std::fs::symlink_metadata(p).is_err())
                .map(move |p| {
                    format!(
                        "grant {id}: the path {} does not exist: calls under it fail until it \
                         does",
                        inert::line(p)
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

/// The closest of the words a refusal offers (`expected one of `a`, `b``, `the tools are
/// a, b`) to the word it refused, when one is close enough to be a typing mistake.
fn did_you_mean(reason: &str) -> Option<String> {
    let (bad, offered): (&str, Vec<&str>) =
        if let Some((head, list)) = reason.split_once("expected one of ") {
            let bad = head.split('`').nth(1)?;
            (bad, list.split('`').skip(1).step_by(2).collect())
        } else if let Some((head, list)) = reason.split_once("(the tools are ") {
            let bad = head.split('"').nth(1)?;
            let list = list.trim_end_matches(')');
            (bad, list.split(", ").collect())
        } else {
            return None;
        };
    offered
        .into_iter()
        .map(|w| (distance(bad, w), w))
        .filter(|(d, w)| *d > 0 && *d <= 2.max(w.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, w)| w.to_owned())
}

/// Optimal string alignment distance: edits, a swap of two neighbours counting as one.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_word_is_matched_to_the_one_offered() {
        assert_eq!(
            did_you_mean(
                "unknown field `mdoe`, expected one of `tool`, `mode`, `max_taint`, `expires`"
            )
            .as_deref(),
            Some("mode")
        );
        assert_eq!(
            did_you_mean("unknown variant `aks`, expected one of `auto`, `ask`, `deny`").as_deref(),
            Some("ask")
        );
        assert_eq!(
            did_you_mean(
                "no tool is named \"read_flie\" (the tools are read_file, list_dir, note_read)"
            )
            .as_deref(),
            Some("read_file")
        );
        // Nothing close: no guess.
        assert_eq!(
            did_you_mean("unknown field `colour`, expected one of `tool`, `mode`"),
            None
        );
        assert_eq!(did_you_mean("larger than 65536 bytes"), None);
        assert_eq!(distance("mdoe", "mode"), 1);
        assert_eq!(distance("", "ab"), 2);
    }
}
