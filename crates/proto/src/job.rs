//! Scheduled jobs: a job's name, and the jobs socket (`jobs.sock`, shared by brokerd and the
//! job runners). A runner registers its run and gets a session bound to its job; the run
//! lasts until it says it has finished or its connection closes.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{InvalidValue, SessionId, Timestamp};

/// The prefix of every job session id brokerd mints (`job-<name>-<128 random bits>`);
/// loopd's own ids are `s-…`.
pub const SESSION_PREFIX: &str = "job-";

/// What a job's unit and user are named after: `boxmaker-job-<name>`.
pub const UNIT_PREFIX: &str = "boxmaker-job-";

/// A job's name: it forms the unit and DynamicUser name `boxmaker-job-<name>`, which
/// useradd-style rules cap at 31 characters, so the name is 1 to 18 characters of
/// `[a-z0-9-]`, starting with a letter and not ending with `-`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobName(String);

impl JobName {
    pub const MAX_LEN: usize = 31 - UNIT_PREFIX.len();

    pub fn new(value: impl Into<String>) -> Result<Self, InvalidValue> {
        let value = value.into();
        let why = if value.is_empty() || value.len() > Self::MAX_LEN {
            Some(format!(
                "{value:?} must be 1 to {} characters, so that the unit and user name \
                 {UNIT_PREFIX}<name> is at most 31",
                Self::MAX_LEN
            ))
        } else if let Some(bad) = value
            .chars()
            .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-'))
        {
            Some(format!(
                "{value:?} has {bad:?}: use lowercase letters, digits and '-' only"
            ))
        } else if !value.starts_with(|c: char| c.is_ascii_lowercase()) || value.ends_with('-') {
            Some(format!(
                "{value:?} must start with a lowercase letter and not end with '-'"
            ))
        } else {
            None
        };
        match why {
            Some(reason) => Err(InvalidValue::new("job name", reason)),
            None => Ok(Self(value)),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The job's unit and user name, `boxmaker-job-<name>`.
    pub fn unit_user(&self) -> String {
        format!("{UNIT_PREFIX}{}", self.0)
    }

    /// The job a `boxmaker-job-<name>` user runs, if `user` is one.
    pub fn of_user(user: &str) -> Option<Self> {
        user.strip_prefix(UNIT_PREFIX)
            .and_then(|name| Self::new(name).ok())
    }
}

impl fmt::Display for JobName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for JobName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for JobName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::error::deserialize_str(d, |text| Self::new(text))
    }
}

/// The runner starts a run of `job`. Under systemd brokerd takes the job from the
/// runner's user (SO_PEERCRED) and refuses a claim that differs; only where every process
/// has one uid (`bxctl dev`) is the claim what names the job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobRegister {
    pub job: JobName,
}

/// The run is registered: `session` is the job session brokerd minted for it. Tool calls
/// in that session get only the job's grants, and only while the run lasts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobRegistered {
    pub job: JobName,
    pub session: SessionId,
}

/// The runner's word that its run is over, and how the run came out (`bxctl jobs` shows
/// it; delivery comes after, and its failure is in the unit's journal).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobFinish {
    pub outcome: JobOutcome,
}

/// The runner's result for a job that delivers to a note (`deliver = "note:NAME"`), sent
/// on its run's connection before `job_finish`. brokerd writes it as a `note_write`
/// (`replace`) from the run's session would be written, at the label the delivery is
/// decided at: the session's own, raised by the label of the answer it carries (the
/// prompt that produced it, docs/decisions.md X9). The note is the one brokerd's own
/// configuration names for the job, never one the runner says. Answered with `job_noted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobNote {
    /// The whole note: the run's name and time, its outcome, what came of it. Besides
    /// `answer`, the runner writes only what it composed from typed data (the outcome,
    /// each call's number, tool and reason), never text loopd gave it.
    pub text: String,
    /// The agent's answer as loopd returned it, which `text` holds: brokerd labels it by
    /// its accounting (the witnessed answer of that text). Absent (a runner from before
    /// it existed, or no answer): the note is labelled at the highest label brokerd has
    /// sent loopd, as any text brokerd cannot account for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// The note is written: its name and the label it took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobNoted {
    pub note: String,
    pub class: crate::DataClass,
    pub untrusted: bool,
}

/// How a job run ended, as the audit records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEnd {
    /// The runner said it had finished (`job_finish`).
    Finished,
    /// The runner's connection closed or idled out first (its unit stopped, say).
    Disconnected,
}

impl RunEnd {
    /// The wire name, as bxctl shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Finished => "finished",
            Self::Disconnected => "disconnected",
        }
    }
}

/// A run's result for the owner, from its runner to gatewayd (`jobs-gateway`), which posts
/// it inert in the job's own thread. Under systemd gatewayd takes the job from the
/// runner's user, as brokerd does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobResult {
    pub job: JobName,
    /// When the run began.
    pub started: Timestamp,
    pub outcome: JobOutcome,
    /// The agent's answer; for a failure, what failed (the model unreachable, a call denied
    /// or not approved, the time limit) and whatever the agent had answered.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobOutcome {
    Done,
    Failed,
}

/// The result is posted: `post` is its Mattermost post id, `root` the job's thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobDelivered {
    pub root: String,
    pub post: String,
}
