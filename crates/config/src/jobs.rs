//! Scheduled jobs, `[[jobs]]`: what runs unattended, when, and where its result goes. The
//! same entries drive `bxctl dev`, the container tier and NixOS (which renders them from
//! `services.boxmaker.jobs`); each job's grants are the grant files that name it
//! (`job = "<name>"`, docs/jobs.md). Checked here so that `--check-config` (and the NixOS
//! build, which runs it) refuses a job that could not run.

use std::collections::BTreeSet;
use std::time::Duration;

use proto::JobName;
use serde::Deserialize;

use super::duration::duration;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// The unit and its DynamicUser are `boxmaker-job-<name>`.
    pub name: JobName,
    /// A systemd calendar expression (`OnCalendar=`), for example `*-*-* 07:00:00`.
    pub schedule: String,
    /// What the agent is asked, as the owner's message of the run's session.
    pub prompt: String,
    /// Where the result (or the failure) goes.
    pub deliver: Deliver,
    /// A random delay of up to this much before each run (`RandomizedDelaySec=`).
    #[serde(default, deserialize_with = "duration")]
    pub randomized_delay: Duration,
    /// How long one run may take in all (`RuntimeMaxSec=`). It must be longer than
    /// `broker.approval_ttl`, so that an `ask` can expire inside the run.
    #[serde(default = "default_time_limit", deserialize_with = "duration")]
    pub time_limit: Duration,
}

fn default_time_limit() -> Duration {
    Duration::from_secs(30 * 60)
}

/// Where a job's result is delivered: `"mattermost"` or `"note:NAME"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deliver {
    /// A post in the job's own thread in the gateway's channel, through gatewayd.
    Mattermost,
    /// The note `NAME`, replaced at each run by brokerd as the run's session's
    /// `note_write` would be (so labelled as that session was at the run's end). The name
    /// is checked by `validate` (a note name, docs/memory.md).
    Note(String),
}

/// What `deliver = "note:NAME"` starts with.
pub const NOTE_PREFIX: &str = "note:";

impl<'de> Deserialize<'de> for Deliver {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.strip_prefix(NOTE_PREFIX) {
            Some(note) => Ok(Self::Note(note.to_owned())),
            None if text == "mattermost" => Ok(Self::Mattermost),
            None => Err(serde::de::Error::custom(format!(
                "deliver {text:?}: use \"mattermost\" (a post in the job's thread) or \
                 \"note:NAME\" (the note NAME, written with the run's label)"
            ))),
        }
    }
}

/// What is wrong with a `[[jobs]]` entry, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobInvalid {
    #[error("two jobs are named {name}: give each [[jobs]] entry a name of its own")]
    Duplicate { name: JobName },
    #[error(
        "job {name}: schedule {schedule:?} must be one systemd calendar expression on \
         one line, for example \"*-*-* 07:00:00\" (try it with `systemd-analyze \
         calendar`)"
    )]
    Schedule { name: JobName, schedule: String },
    #[error("job {name}: the prompt is empty")]
    EmptyPrompt { name: JobName },
    #[error(
        "job {name}: the prompt is {bytes} bytes, more than the {most} one frame \
         carries: shorten it, or put the material in a file the job's grants let it read"
    )]
    PromptTooLong {
        name: JobName,
        bytes: usize,
        most: usize,
    },
    /// `deliver = "mattermost"` without the gateway.
    #[error(
        "job {name}: deliver = \"mattermost\" needs the gateway: add a [gateway] \
         section (services.boxmaker.gateway), or deliver to a note (\"note:NAME\")"
    )]
    DeliverNotConfigured { name: JobName },
    /// `deliver = "note:NAME"` with a NAME that is no note name.
    #[error(
        "job {name}: deliver = \"note:{note}\": {why}; name the note with 1 to 100 \
         letters, digits, '.', '_' and '-' (not starting with '.', no \"..\"), for \
         example \"note:{name}\""
    )]
    DeliverNote {
        name: JobName,
        note: String,
        why: proto::notes::NameError,
    },
    #[error(
        "job {name}: time_limit {} must be longer than broker.approval_ttl {}, so that \
         an approval can expire inside the run: raise time_limit or lower approval_ttl",
        humantime::format_duration(*time_limit),
        humantime::format_duration(*approval_ttl)
    )]
    TimeLimit {
        name: JobName,
        time_limit: Duration,
        approval_ttl: Duration,
    },
}

/// A file of `[[jobs]]` entries and nothing else (`bxctl dev`'s `jobs.toml`), parsed as the
/// configuration's own; what they mean is checked with the configuration they join.
pub fn jobs_file(text: &str) -> Result<Vec<Job>, proto::TomlError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct JobsFile {
        #[serde(default)]
        jobs: Vec<Job>,
    }
    proto::from_toml::<JobsFile>(text).map(|f| f.jobs)
}

/// The longest prompt: it travels in one `chat_send` frame, where JSON escaping can grow
/// text six-fold.
pub const MAX_PROMPT: usize = (proto::MAX_FRAME - 4096) / 6;

/// Checks every job: names unique, a schedule on one line, a prompt that fits a frame, a
/// configured target, and room for an approval to expire inside the run.
pub(super) fn validate(
    jobs: &[Job],
    gateway: bool,
    approval_ttl: Duration,
) -> Result<(), JobInvalid> {
    let mut names = BTreeSet::new();
    for job in jobs {
        let name = job.name.clone();
        if !names.insert(&job.name) {
            return Err(JobInvalid::Duplicate { name });
        }
        let s = job.schedule.trim();
        if s.is_empty() || job.schedule.chars().any(char::is_control) {
            return Err(JobInvalid::Schedule {
                name,
                schedule: job.schedule.clone(),
            });
        }
        if job.prompt.trim().is_empty() {
            return Err(JobInvalid::EmptyPrompt { name });
        }
        if job.prompt.len() > MAX_PROMPT {
            return Err(JobInvalid::PromptTooLong {
                name,
                bytes: job.prompt.len(),
                most: MAX_PROMPT,
            });
        }
        match &job.deliver {
            Deliver::Mattermost if !gateway => {
                return Err(JobInvalid::DeliverNotConfigured { name });
            }
            Deliver::Note(note) => {
                if let Err(why) = proto::notes::check_name(note) {
                    return Err(JobInvalid::DeliverNote {
                        name,
                        note: note.clone(),
                        why,
                    });
                }
            }
            Deliver::Mattermost => {}
        }
        if job.time_limit <= approval_ttl {
            return Err(JobInvalid::TimeLimit {
                name,
                time_limit: job.time_limit,
                approval_ttl,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
