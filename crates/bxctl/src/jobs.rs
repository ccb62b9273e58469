//! `bxctl jobs` and `bxctl job run NAME`: the scheduled jobs of the configuration, their
//! schedule, last run and its outcome (from the audit log, which brokerd alone writes), and
//! the next run (from the job's systemd timer, where there is one).
//!
//! `bxctl job run` starts the job's unit (`systemctl start`, which waits for the oneshot),
//! or, where the configuration admits the developer's uid as the runner (`peers.jobs =
//! { uid = … }`, as under `bxctl dev`), the runner itself. It never registers a run: the
//! runner does, and brokerd takes the job from the runner's user.
//!
//! Exit codes, as the rest of bxctl: 0 done; 1 a job's last run failed (`bxctl jobs`) or the
//! run failed (`bxctl job run`); 2 bxctl could not do it (no such job, no audit log, no
//! runner or systemctl to start it).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, ExitCode};

use config::{Config, Deliver, Job, Peer};
use proto::job::JobOutcome;
use proto::{AuditEvent, AuditLine, JobName, Timestamp};
use serde_json::json;

use crate::Error;

/// What the audit log says of one job's last run.
#[derive(Debug, Clone, Default)]
struct Last {
    started: Option<Timestamp>,
    /// `None` while the run lasts, or when its runner went away before reporting.
    outcome: Option<JobOutcome>,
    ended: bool,
}

/// Each job's last run, from the audit log (missing: no run yet).
fn last_runs(config: &Config) -> Result<BTreeMap<JobName, Last>, Error> {
    let mut last: BTreeMap<JobName, Last> = BTreeMap::new();
    let dir = config.audit_dir();
    if !dir.exists() {
        return Ok(last);
    }
    crate::audit::lines(&dir, |_, _, bytes| {
        match AuditLine::from_slice(bytes) {
            Ok(AuditLine::Event(AuditEvent::JobRunStarted { job, time, .. })) => {
                last.insert(
                    job,
                    Last {
                        started: Some(time),
                        ..Last::default()
                    },
                );
            }
            Ok(AuditLine::Event(AuditEvent::JobRunEnded { job, outcome, .. })) => {
                let entry = last.entry(job).or_default();
                entry.outcome = outcome;
                entry.ended = true;
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(last)
}

/// The job's next run, as its systemd timer says; `None` where there is no timer.
fn next_run(job: &JobName) -> Option<String> {
    let out = Command::new("systemctl")
        .args(["show", "-p", "NextElapseUSecRealtime", "--value"])
        .arg(format!("{}.timer", job.unit_user()))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !text.is_empty() && text != "n/a").then_some(text)
}

fn outcome_word(last: &Last) -> &'static str {
    match (last.started, last.ended, last.outcome) {
        (None, ..) => "never run",
        (Some(_), false, _) => "running",
        (Some(_), true, Some(JobOutcome::Done)) => "done",
        (Some(_), true, Some(JobOutcome::Failed)) => "failed",
        (Some(_), true, None) => "failed (the runner went away)",
    }
}

fn failed(last: &Last) -> bool {
    last.ended && last.outcome != Some(JobOutcome::Done)
}

/// `bxctl jobs [--json]`.
pub fn list(config: &Config, json_out: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let last = last_runs(config)?;
    let mut any_failed = false;
    let mut rows = Vec::new();
    for job in &config.jobs {
        let l = last.get(&job.name).cloned().unwrap_or_default();
        any_failed |= failed(&l);
        rows.push((job, l, next_run(&job.name)));
    }
    if json_out {
        let jobs: Vec<_> = rows
            .iter()
            .map(|(job, l, next)| {
                json!({
                    "name": job.name.as_str(),
                    "schedule": job.schedule,
                    "last_run": l.started.map(|t| t.to_string()),
                    "last_outcome": outcome_word(l),
                    "next_run": next,
                })
            })
            .collect();
        writeln!(out, "{}", json!({ "jobs": jobs })).map_err(Error::Output)?;
    } else if rows.is_empty() {
        writeln!(
            out,
            "no jobs are configured ([[jobs]] in the configuration)"
        )
        .map_err(Error::Output)?;
    } else {
        for (job, l, next) in &rows {
            writeln!(
                out,
                "{}  schedule {}  last run {}  {}  next run {}",
                job.name,
                inert::line(&job.schedule),
                l.started.map_or("-".to_owned(), |t| t.to_string()),
                outcome_word(l),
                next.as_deref()
                    .map_or("- (no timer here)".to_owned(), inert::line),
            )
            .map_err(Error::Output)?;
        }
    }
    Ok(if any_failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `bxctl job run NAME`: one run now, waited for.
pub fn run(
    config: &Config,
    config_path: &std::path::Path,
    name: &str,
    json_out: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let Some(job) = config.jobs.iter().find(|j| j.name.as_str() == name) else {
        if json_out {
            writeln!(out, "{}", json!({ "job": name, "outcome": "no_such_job" }))
        } else {
            writeln!(out, "no job {} in the configuration", inert::line(name))
        }
        .map_err(Error::Output)?;
        return Ok(ExitCode::from(2));
    };
    let me = nix::unistd::getuid().as_raw();
    // Development: the runner, as the developer (brokerd takes its claim); its words are
    // kept to say why a run failed. Under systemd: the job's unit, whose journal says why.
    let here = matches!(&config.peers.jobs, Some(Peer::Uid(uid)) if *uid == me);
    let mut cmd = if here {
        let mut c = runner(config_path, job)?;
        c.stderr(std::process::Stdio::piped());
        c
    } else {
        let mut c = Command::new("systemctl");
        c.args(["start", &format!("{}.service", job.name.unit_user())]);
        c
    };
    let done = cmd.output().map_err(|source| Error::File {
        path: cmd.get_program().into(),
        error: source,
    })?;
    let status = done.status;
    let said = String::from_utf8_lossy(&done.stderr);
    let why = || {
        if here {
            format!(": {}", inert::line(&cause(&said, job.name.as_str())))
        } else {
            String::new()
        }
    };
    let (code, outcome, text) = match status.code() {
        Some(0) => (0, "done", "done, result delivered".to_owned()),
        Some(1) => (
            1,
            "failed",
            format!("the run failed{}\nhelp: {}", why(), failed_help(job, here)),
        ),
        _ => (
            2,
            "not_started",
            format!("the run could not be started ({status}){}", why()),
        ),
    };
    if json_out {
        writeln!(
            out,
            "{}",
            json!({ "job": job.name.as_str(), "outcome": outcome })
        )
    } else {
        writeln!(out, "job {}: {text}", job.name)
    }
    .map_err(Error::Output)?;
    Ok(ExitCode::from(code))
}

/// Why the runner said its run failed: its last error line, without the level and the
/// job's name it starts with.
fn cause(said: &str, job: &str) -> String {
    let last = said
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or("the runner said nothing of why");
    let last = last.strip_prefix("boxmaker-job: ").unwrap_or(last);
    let last = last.strip_prefix(&format!("job {job}: ")).unwrap_or(last);
    // "the run failed" is said already.
    last.strip_prefix("failed (delivered): ")
        .unwrap_or(last)
        .to_owned()
}

/// Where to look further at a failed run: the run's turn in its session (`bxctl dev`, where
/// the runner ran here), or the unit's journal (under systemd).
fn failed_help(job: &Job, here: bool) -> String {
    let note = match &job.deliver {
        Deliver::Note(name) => {
            format!("; its result, when delivered, is in note {name} (`bxctl notes show {name}`)")
        }
        Deliver::Mattermost => {
            "; its result, when delivered, is in the job's thread in Mattermost".to_owned()
        }
    };
    if here {
        format!(
            "`bxctl sessions` lists the run's session (job-{}-…) with the turn that failed{note}",
            job.name
        )
    } else {
        format!(
            "`journalctl -u {}.service` shows the runner's log{note}",
            job.name.unit_user()
        )
    }
}

/// The runner next to this bxctl, for `job`.
fn runner(config_path: &std::path::Path, job: &Job) -> Result<Command, Error> {
    let exe = std::env::current_exe().map_err(|source| Error::File {
        path: "/proc/self/exe".into(),
        error: source,
    })?;
    let mut c = Command::new(exe.with_file_name("boxmaker-job"));
    c.arg("--config")
        .arg(config_path)
        .args(["--job", job.name.as_str()]);
    Ok(c)
}
