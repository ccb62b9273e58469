//! Job sessions: the runs in progress, each with the session brokerd minted for it.
//!
//! A scheduled job's runner registers its run on `jobs.sock`
//! (`crate::sockets::jobs`) and brokerd mints the run's session, bound to the job it took
//! from the runner's user (SO_PEERCRED), never from what the runner or loopd says. A job
//! session gets only its job's grants, and only while its run lasts; `check` refuses a
//! configuration whose job grants could not work; `note` says which note a job delivers to
//! (a new kind of delivery goes beside it).
//!
//! Job session ids are `job-<name>-<128 random bits>`, a prefix loopd never mints (its ids
//! are `s-…`): any session id of that shape that is not a run in progress — finished, from
//! before a restart, or made up — gets every call denied (`job_not_running`), so a job
//! session can never fall back to the ordinary grants.

mod check;
pub mod note;

use std::collections::HashMap;
use std::sync::Mutex;

use daemon::lock;
use proto::{JobName, SessionId};

pub use check::{JobGrantError, check};

use proto::job::SESSION_PREFIX;

/// Whose grants a session's calls are decided by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// An ordinary session (the owner's chats): the grants that name no job.
    Ordinary,
    /// A run of this job in progress: that job's grants only.
    Job(JobName),
    /// A job session whose run is not in progress: nothing.
    NotRunning,
}

/// The runs in progress, by session. At most one run per job at a time.
#[derive(Debug, Default)]
pub struct Runs {
    live: Mutex<HashMap<SessionId, JobName>>,
}

/// Why a run could not begin.
#[derive(Debug)]
pub(crate) enum NotStarted {
    /// A run of this job is in progress already.
    Overlap,
    Rng(getrandom::Error),
}

impl Runs {
    /// The scope `session`'s calls are decided in.
    pub fn scope(&self, session: &SessionId) -> Scope {
        if !session.as_str().starts_with(SESSION_PREFIX) {
            return Scope::Ordinary;
        }
        match lock(&self.live).get(session) {
            Some(job) => Scope::Job(job.clone()),
            None => Scope::NotRunning,
        }
    }

    /// Begins a run of `job` with a fresh session, unless one is in progress.
    pub(crate) fn start(&self, job: &JobName) -> Result<SessionId, NotStarted> {
        let mut live = lock(&self.live);
        if live.values().any(|j| j == job) {
            return Err(NotStarted::Overlap);
        }
        let id = crate::ask::approvals::new_id().map_err(NotStarted::Rng)?;
        let session = SessionId::new(format!("{SESSION_PREFIX}{job}-{id}"))
            .expect("a job name and hex always form a session id");
        live.insert(session.clone(), job.clone());
        Ok(session)
    }

    /// Ends the run of `session`: from now on its calls are denied.
    pub(crate) fn end(&self, session: &SessionId) {
        lock(&self.live).remove(session);
    }

    /// The jobs with a run in progress.
    pub fn running(&self) -> Vec<JobName> {
        let mut jobs: Vec<JobName> = lock(&self.live).values().cloned().collect();
        jobs.sort();
        jobs
    }
}
