//! The checks that need both the configuration and the grants: run by `--check-config`
//! (and so by the NixOS build), at start and at every reload.

use config::Config;
use grants::Snapshot;
use proto::{IfUntrusted, JobName, Mode};

/// A job grant that could not work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobGrantError {
    /// The grant names a job that `[[jobs]]` does not define.
    #[error(
        "grant {grant} names job {job}, which no [[jobs]] entry defines: add the job, or \
         correct the grant's job"
    )]
    UnknownJob { grant: String, job: JobName },
    /// The grant may ask the owner, and no gateway is there to ask through: a job runs
    /// unattended and never waits on a terminal.
    #[error(
        "grant {grant} of job {job} can ask the owner, but no [gateway] is configured to ask \
         through (a job never waits on a terminal): configure the gateway, or make the grant \
         auto or deny"
    )]
    AskWithoutGateway { grant: String, job: JobName },
}

/// Every job grant names a configured job, and asks only where the gateway can carry it.
pub fn check(config: &Config, snapshot: &Snapshot) -> Result<(), JobGrantError> {
    for (id, g) in snapshot.iter() {
        let Some(job) = &g.job else { continue };
        let grant = id.to_owned();
        if !config.jobs.iter().any(|j| &j.name == job) {
            return Err(JobGrantError::UnknownJob {
                grant,
                job: job.clone(),
            });
        }
        let asks = g.mode == Mode::Ask || g.if_untrusted == Some(IfUntrusted::Ask);
        if asks && config.gateway.is_none() {
            return Err(JobGrantError::AskWithoutGateway {
                grant,
                job: job.clone(),
            });
        }
    }
    Ok(())
}
