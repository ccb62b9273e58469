//! One check's outcome and how the owner reads it: a line `ok`, `warn` or `FAIL` with the
//! part and what was checked, what was found, and on the next line what to do. Everything
//! is shown by `inert`'s single-line rule: a finding may quote a peer (a version, a
//! refusal, a unit's property a drop-in wrote), which must never draw a line of its own.

use std::io::Write;

use serde::Serialize;
use serde_json::json;

use crate::Error;
use crate::output::print_json;

/// The parts of the verification, in the order they run and print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    Model,
    Units,
    State,
    Flows,
    /// The live hostile self-test: only with `--hostile`, never by default (it starts a
    /// shadow stack).
    #[value(skip)]
    Hostile,
}

impl Part {
    pub fn name(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Units => "units",
            Self::State => "state",
            Self::Flows => "flows",
            Self::Hostile => "hostile",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Checked, and as it should be.
    Ok,
    /// Not wrong as far as bxctl can tell, but not shown right either: a setting the server
    /// does not report, something bxctl may not look at as this user, a finding to look at.
    Warn,
    /// Checked, and not as it should be.
    Fail,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warn => "warn",
            Self::Fail => "FAIL",
        }
    }

    /// The syslog priority journald reads from a `<N>` line prefix: err, warning, info.
    fn priority(self) -> u8 {
        match self {
            Self::Ok => 6,
            Self::Warn => 4,
            Self::Fail => 3,
        }
    }
}

/// Whether `fd` (standard output, or error) is the journal (systemd says so in
/// `JOURNAL_STREAM`, the device and inode of the stream it connected): then each line
/// carries its priority, so `journalctl -u boxmaker-verify -p err` shows the failures.
fn to_journal(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(stream) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Some(meta) = fd
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| std::fs::File::from(fd).metadata().ok())
    else {
        return false;
    };
    stream.to_string_lossy() == format!("{}:{}", meta.dev(), meta.ino())
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub part: Part,
    /// What was checked: a short stable name (`props`, `replay`, a unit's name, `audit`).
    pub check: String,
    pub level: Level,
    /// What was found.
    pub said: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// Not made because this user may not (a socket closed to it): bxctl verified less
    /// than was asked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unreached: bool,
}

impl Check {
    pub fn new(
        part: Part,
        check: impl Into<String>,
        level: Level,
        said: impl Into<String>,
    ) -> Self {
        Self {
            part,
            check: check.into(),
            level,
            said: said.into(),
            help: None,
            unreached: false,
        }
    }

    pub fn ok(part: Part, check: impl Into<String>, said: impl Into<String>) -> Self {
        Self::new(part, check, Level::Ok, said)
    }

    pub fn warn(part: Part, check: impl Into<String>, said: impl Into<String>) -> Self {
        Self::new(part, check, Level::Warn, said)
    }

    pub fn fail(part: Part, check: impl Into<String>, said: impl Into<String>) -> Self {
        Self::new(part, check, Level::Fail, said)
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// A check this user could not make: a `warn` that makes the run exit 2.
    pub fn unreached(part: Part, check: impl Into<String>, said: impl Into<String>) -> Self {
        let mut c = Self::warn(part, check, said);
        c.unreached = true;
        c
    }
}

/// 1 when a check failed; else 2 when a check could not be made by this user; else 0.
pub fn exit_code(checks: &[Check]) -> u8 {
    if checks.iter().any(|c| c.level == Level::Fail) {
        1
    } else if checks.iter().any(|c| c.unreached) {
        2
    } else {
        0
    }
}

/// A check's line as printed (without its help): inert, one line.
pub fn line(c: &Check) -> String {
    inert::line(&format!(
        "{:<4}  {:<5}  {}: {}",
        c.level.word(),
        c.part.name(),
        c.check,
        c.said
    ))
}

/// `text` on standard error, with `level`'s priority when that is the journal.
pub fn say(level: Level, text: &str) {
    let stderr = std::io::stderr();
    let p = if to_journal(std::os::fd::AsFd::as_fd(&stderr)) {
        format!("<{}>", level.priority())
    } else {
        String::new()
    };
    let _ = writeln!(stderr.lock(), "{p}{}", inert::line(text));
}

fn count(checks: &[Check], level: Level) -> usize {
    checks.iter().filter(|c| c.level == level).count()
}

pub fn print(checks: &[Check], json: bool, out: &mut dyn Write) -> Result<(), Error> {
    let (ok, warn, fail) = (
        count(checks, Level::Ok),
        count(checks, Level::Warn),
        count(checks, Level::Fail),
    );
    if json {
        print_json(
            &json!({ "good": fail == 0, "ok": ok, "warn": warn, "fail": fail, "checks": checks }),
            out,
        )?;
        return Ok(());
    }
    let journal = to_journal(std::os::fd::AsFd::as_fd(&std::io::stdout()));
    let prefix = |level: Level| {
        if journal {
            format!("<{}>", level.priority())
        } else {
            String::new()
        }
    };
    for c in checks {
        let p = prefix(c.level);
        writeln!(out, "{p}{}", line(c)).map_err(Error::Output)?;
        if let Some(help) = &c.help {
            writeln!(out, "{p}            help: {}", inert::line(help)).map_err(Error::Output)?;
        }
    }
    let last = if fail > 0 { Level::Fail } else { Level::Ok };
    writeln!(
        out,
        "{}verify: {ok} ok, {warn} warn, {fail} FAIL{}",
        prefix(last),
        if checks.iter().any(|c| c.unreached) && fail == 0 {
            " (some checks could not be made by this user: see the warn lines)"
        } else {
            ""
        }
    )
    .map_err(Error::Output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_wins_over_a_check_not_made_which_wins_over_warnings() {
        let ok = Check::ok(Part::State, "audit", "good");
        let warn = Check::warn(Part::Model, "cache-reuse", "not reported");
        let unreached = Check::unreached(Part::State, "grants", "closed");
        let fail = Check::fail(Part::Units, "boxmaker-loopd.service", "loosened");
        assert_eq!(exit_code(&[ok.clone(), warn.clone()]), 0);
        assert_eq!(exit_code(&[ok.clone(), unreached.clone()]), 2);
        assert_eq!(exit_code(&[unreached, fail, ok, warn]), 1);
    }

    /// A finding quoting a unit file or a peer stays one line, whatever it holds.
    #[test]
    fn a_finding_with_a_newline_prints_as_one_inert_line() {
        let c = Check::fail(
            Part::Units,
            "x.service",
            "Environment=A\nok    state  audit: good",
        )
        .help("see\u{1b}[2J");
        let mut out = Vec::new();
        print(&[c], false, &mut out).expect("print");
        let text = String::from_utf8(out).expect("utf-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("FAIL  units  x.service: "), "{text}");
        assert!(!lines[1].contains('\u{1b}'), "{text}");
        assert_eq!(lines[2], "verify: 0 ok, 0 warn, 1 FAIL");
    }
}
