//! The fake model's rules for the job runs (`jobs`): a job's prompt is one tag for all its
//! runs, so each chain's source rule answers once, in plan order, its sink rule once the
//! source's result holds what it awaits, and every other tool result ends the turn.

use proto::JobName;

use super::jobs::{DELIVER, JobChain, tag};
use super::script::{self, Rule};

/// The fake model's rules for the job runs: the ordinary sessions reading a delivery note
/// back, then, per job, each chain's sink (once its canary is in the last tool result), then
/// the end of the turn at any other tool result, then the runs saying the words of its
/// searches of the logs and each chain's read, once, in plan order (one per run).
pub fn rules(chains: &[JobChain]) -> Vec<Rule> {
    // Each job once, in the order of its first chain (its look-alike chains come after every
    // job's other chains).
    let mut seen = std::collections::BTreeSet::new();
    let jobs: Vec<&JobName> = chains
        .iter()
        .map(|c| &c.job)
        .filter(|j| seen.insert(*j))
        .collect();
    // The ordinary sessions reading a delivery note back (`jobs_launder`).
    let mut out: Vec<Rule> = chains
        .iter()
        .flat_map(|c| super::jobs_launder::back_rules(&c.chain))
        .collect();
    for job in jobs {
        let mine = || {
            chains
                .iter()
                .filter(move |c| c.job == *job)
                .map(|c| &c.chain)
        };
        for c in mine() {
            // A chain laundering through a note its run leaves answers with the canary (its
            // delivery) or writes it; its send is an ordinary session's (`jobs_launder`).
            let send = match c.sink.tool {
                DELIVER => script::say(&c.url),
                _ if c.note.is_some() => super::jobs_launder::run_answer(c),
                _ => script::send(c),
            };
            out.push(script::rule(
                format!("job {job} chain {} sink", c.n),
                1,
                tag(job),
                Some(c.awaited().to_owned()),
                send,
            ));
        }
        out.push(script::rule(
            format!("job {job} end of turn"),
            u32::MAX,
            tag(job),
            Some(String::new()),
            script::say("done"),
        ));
        // The runs saying the words of the job's searches of the logs, played right before
        // the first of them (`search_source::prepare`): before its read, after those of the
        // searches played before (`search_source::order`, the job's plan order).
        let mut words: Vec<Rule> = mine()
            .filter_map(|c| super::search_source::job_rules(c, job, &tag(job)))
            .collect();
        for c in mine() {
            if super::search_source::is(c) && c.source.tool == "session_search" {
                out.append(&mut words);
            }
            out.push(script::rule(
                format!("job {job} chain {} source", c.n),
                1,
                tag(job),
                None,
                script::source_answer(c),
            ));
        }
    }
    out
}
