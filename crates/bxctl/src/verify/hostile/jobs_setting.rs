//! The owner's jobs in the shadow: its `STATE/jobs.toml` (each prompt the tag the hostile
//! script keys on, `jobs::tag`), whether gatewayd and the fake Mattermost are needed, the
//! note each job delivers to, and the job grants the shadow leaves out (`jobs` plans the
//! runs).

use super::rewrite::{Left, Rewritten, Scope};
use config::{Deliver, Job};

/// Moves the job grants whose job the configuration does not have into `left`: brokerd
/// would refuse the shadow's grant set with them (`bxctl grants check` says so).
pub fn unconfigured(r: &mut Rewritten, jobs: &[Job]) {
    let gone: Vec<String> = r
        .jobs
        .iter()
        .filter(|(_, g)| !jobs.iter().any(|j| g.job.as_ref() == Some(&j.name)))
        .map(|(id, _)| id.clone())
        .collect();
    for id in gone {
        if let Some(g) = r.jobs.remove(&id) {
            let job = g.job.map(|j| j.to_string()).unwrap_or_default();
            r.left.push(Left {
                grant: id,
                why: format!(
                    "its job {job} is not configured ([[jobs]]): brokerd refuses the grant \
                     (`bxctl grants check` says so)"
                ),
                scope: Scope::Grant,
            });
        }
    }
}

/// The shadow's `jobs.toml`: every job of the owner's, its name, schedule and delivery as
/// the owner wrote them, its prompt the tag (the time limit and delay bxctl's defaults: the
/// self-test starts each run and waits for it).
pub fn jobs_toml(jobs: &[Job]) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let mut out = String::new();
    for j in jobs {
        let deliver = match &j.deliver {
            Deliver::Mattermost => "mattermost".to_owned(),
            Deliver::Note(n) => format!("note:{n}"),
        };
        out.push_str(&format!(
            "[[jobs]]\nname = {}\nschedule = {}\nprompt = {}\ndeliver = {}\n",
            q(j.name.as_str()),
            q(&j.schedule),
            q(&super::jobs::tag(&j.name)),
            q(&deliver)
        ));
    }
    out
}

/// The note each job delivering to one writes at the end of its runs, by job.
pub fn delivered(jobs: &[Job]) -> std::collections::BTreeMap<String, String> {
    jobs.iter()
        .filter_map(|j| match &j.deliver {
            Deliver::Note(n) => Some((j.name.to_string(), n.to_string())),
            Deliver::Mattermost => None,
        })
        .collect()
}

/// Whether the shadow needs gatewayd and the fake Mattermost: a job delivers there.
pub fn gateway(jobs: &[Job]) -> bool {
    jobs.iter().any(|j| j.deliver == Deliver::Mattermost)
}
