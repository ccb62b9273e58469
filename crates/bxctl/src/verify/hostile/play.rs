//! The chains played in the running shadow, each in its sessions, in the order that keeps a
//! source's live label the analysis's: the searches of the chains' own words first, the
//! lower-labelled tool's first, while the index holds only what they planted and what the
//! searches before them left (`search_source`, decisions V60); then the listings of the
//! notes, while the notes are only those planted public and trusted (`note_source`, V59);
//! then what the caller plays there (the job runs listing the notes, V61; its runs searching
//! with the ordinary searches of the same tool, V62); then every other chain in its order.

use std::collections::BTreeMap;

use config::Config;
use proto::SessionId;

use super::chains::Chain;
use super::jobs::JobChain;
use super::jobs_run::{self, Run};
use super::rewrite::Rewritten;
use super::session::{self, Played};
use super::{launder, note_source, search, search_source};
use crate::dev::shadow::Shadow;

/// Each chain's sessions (its first, and its second when it has one), in the order of
/// `chains`, and, by chain number, why a chain was not observed: a compaction loopd's log
/// does not show (`launder`), words the indexer never indexed (`search`, `search_source`).
pub type Outcome = (Vec<(Played, Option<Played>)>, BTreeMap<usize, String>);

/// Where the caller's runs are played among the chains: after the searches of one tool
/// (with the indexer still stopped, `search_source::prepare`), or after the listings of the
/// notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    Searched(&'static str),
    Listed,
}

/// Plays every chain in `shadow` (`config`, its configuration), in the order above, calling
/// `then` after each search tool's chains (whose words are planted with `jobs`', the job
/// chains', each job run's words of a search of the logs said by `say`) and once after the
/// listings of the notes, before the rest.
pub fn chains(
    shadow: &mut Shadow,
    config: &Config,
    r: &Rewritten,
    (chains, jobs): (&[Chain], &[Chain]),
    then: &mut dyn FnMut(Then) -> Result<(), String>,
    say: &mut search_source::Say<'_>,
) -> Result<Outcome, String> {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    let mut played = BTreeMap::new();
    let mut unobserved = BTreeMap::new();
    // A search's words are indexed before the first of its chains plays (the job runs'
    // with the ordinary chains'), and nothing while they play.
    let searching: Vec<Chain> = chains
        .iter()
        .chain(jobs)
        .filter(|c| search_source::is(c))
        .cloned()
        .collect();
    let order = order(r, chains);
    let mut paused = false;
    for tool in search_source::order(r) {
        if !searching.iter().any(|c| c.source.tool == tool) {
            continue;
        }
        unobserved.extend(search_source::prepare(
            shadow, config, tool, &searching, say,
        )?);
        paused = true;
        let mine = order
            .iter()
            .filter(|(_, c)| search_source::is(c) && c.source.tool == tool);
        for (i, c) in mine {
            played.insert(*i, one(shadow, config, c, &mut unobserved)?);
        }
        then(Then::Searched(tool))?;
    }
    // Every other chain with the indexer watching.
    if paused {
        shadow.resume_indexer().map_err(|e| text(&e))?;
    }
    let (listings, rest): (Vec<_>, Vec<_>) = order
        .into_iter()
        .filter(|(_, c)| !search_source::is(c))
        .partition(|(_, c)| note_source::is_list(c));
    for (i, c) in listings {
        played.insert(i, one(shadow, config, c, &mut unobserved)?);
    }
    then(Then::Listed)?;
    for (i, c) in rest {
        played.insert(i, one(shadow, config, c, &mut unobserved)?);
    }
    Ok((played.into_values().collect(), unobserved))
}

/// Plays chain `c`: its first session, and its second when it has one (`unobserved` gets
/// why, when it is not observed).
fn one(
    shadow: &mut Shadow,
    config: &Config,
    c: &Chain,
    unobserved: &mut BTreeMap<usize, String>,
) -> Result<(Played, Option<Played>), String> {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    let first = session::play(config, &c.message()).map_err(|e| text(&e))?;
    let back = match (&c.note, c.restart) {
        (Some(_), _) => {
            // A search chain's new session starts once the indexer indexed what the first
            // left (`search`); never indexed, it is not observed.
            if search::left_it(c, &first) {
                let why = search::indexed(config, c, first.session.as_ref());
                unobserved.extend(why.map_err(|e| text(&e))?.map(|why| (c.n, why)));
            }
            if unobserved.contains_key(&c.n) {
                None
            } else {
                Some(session::play(config, &c.back_message()).map_err(|e| text(&e))?)
            }
        }
        // The second turn only once the read's result holds the canary: the send must carry
        // what was read, never what the script knows.
        (None, Some(daemon)) if read_it(&first, c) => {
            let compaction = launder::is_compaction(c);
            let next = if compaction {
                launder::after_message(c)
            } else {
                shadow.restart(daemon).map_err(|e| text(&e))?;
                c.after_message()
            };
            let again = session::play_in(config, first.session.clone(), &next);
            let again = again.map_err(|e| text(&e))?;
            if let (true, Some(id)) = (compaction, &first.session) {
                let why = launder::unobserved(config, id, c).map_err(|e| text(&e))?;
                unobserved.extend(why.map(|why| (c.n, why)));
            }
            Some(again)
        }
        _ => None,
    };
    Ok((first, back))
}

/// The chains with their places in `chains`, in the order they are played.
fn order<'a>(r: &Rewritten, chains: &'a [Chain]) -> Vec<(usize, &'a Chain)> {
    let searches = search_source::order(r);
    let phase = |c: &Chain| {
        let searched =
            search_source::is(c).then(|| searches.iter().position(|t| *t == c.source.tool));
        match searched.flatten() {
            Some(p) => p,
            None if note_source::is_list(c) => searches.len(),
            None => searches.len() + 1,
        }
    };
    let mut order: Vec<(usize, &Chain)> = chains.iter().enumerate().collect();
    order.sort_by_key(|(i, c)| (phase(c), *i));
    order
}

/// Plays the ordinary chains ([`chains`]) and the job runs (`jobs_run`, the runner's
/// configuration at `config_path`): the runs searching the notes or the logs after the
/// ordinary searches of the same tool, with the indexer still stopped; the runs listing the
/// notes after the ordinary listings, before any other chain or run writes a note (the note
/// each search or listing run delivers to is relabelled public and trusted after it, so that
/// no later listing or search is raised by it); every other run after the ordinary chains.
/// The runs come back in the order of `jobs`.
pub fn with_jobs(
    shadow: &mut Shadow,
    config: &Config,
    config_path: &std::path::Path,
    r: &Rewritten,
    ordinary: &[Chain],
    (jobs, delivered): (&[JobChain], &BTreeMap<String, String>),
) -> Result<(Outcome, Vec<Run>), String> {
    // The job runs' searches, whose words are planted with the ordinary searches'.
    let searching: Vec<Chain> = jobs
        .iter()
        .map(|j| j.chain.clone())
        .filter(search_source::is)
        .collect();
    let mut runs = BTreeMap::new();
    // A run played among the ordinary chains, the note it delivers to (`delivered`, by
    // job) relabelled public and trusted after it, so that no listing or search after it
    // is raised by it (a run that could not deliver left no note).
    let play = |i: usize, runs: &mut BTreeMap<usize, Run>| -> Result<(), String> {
        let j = &jobs[i];
        let run = jobs_run::play(config, config_path, std::slice::from_ref(j))?;
        runs.extend(run.into_iter().map(|run| (i, run)));
        relabel(config, delivered, j)
    };
    // The words a job run's search of the logs finds: said by a run of its job (its
    // delivery note relabelled after it as a played run's), the run's session labelled by
    // the job's own search (`search_source::job_rules`, decisions V71).
    let mut say = |c: &Chain| -> Result<Option<Option<SessionId>>, String> {
        let Some(j) = jobs.iter().find(|j| j.chain.n == c.n) else {
            return Ok(None);
        };
        let run = jobs_run::play(config, config_path, std::slice::from_ref(j))?;
        relabel(config, delivered, j)?;
        Ok(Some(
            run.into_iter().next().and_then(|run| run.played.session),
        ))
    };
    let played = chains(
        shadow,
        config,
        r,
        (ordinary, &searching),
        &mut |then| {
            let now = |j: &JobChain| match then {
                Then::Searched(tool) => search_source::is(&j.chain) && j.chain.source.tool == tool,
                Then::Listed => note_source::is_list(&j.chain),
            };
            for (i, _) in jobs.iter().enumerate().filter(|(_, j)| now(j)) {
                play(i, &mut runs)?;
            }
            Ok(())
        },
        &mut say,
    )?;
    let rest: Vec<usize> = (0..jobs.len()).filter(|i| !runs.contains_key(i)).collect();
    let rest_chains: Vec<JobChain> = rest.iter().map(|i| jobs[*i].clone()).collect();
    let played_rest = jobs_run::play(config, config_path, &rest_chains)?;
    runs.extend(rest.into_iter().zip(played_rest));
    Ok((played, runs.into_values().collect()))
}

/// Relabels public and trusted the note `j`'s job delivers to (`delivered`, by job), after a
/// run of it: a run that could not deliver left no note.
fn relabel(
    config: &Config,
    delivered: &BTreeMap<String, String>,
    j: &JobChain,
) -> Result<(), String> {
    let note = delivered.get(j.job.as_str());
    let notes = config.notes_dir();
    match note.filter(|n| notes.join(format!("{n}.md")).exists()) {
        Some(note) => note_source::relabel(config, note),
        None => Ok(()),
    }
}

/// Whether `p`'s read returned the chain's canary.
fn read_it(p: &Played, c: &Chain) -> bool {
    p.calls.iter().any(|s| {
        s.tool == super::mcp::source_called(&c.source)
            && matches!(&s.response, Some(proto::ToolResponse::Result { content, .. }) if content.contains(c.awaited()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The searches of the chains' own words first (the lower-labelled tool's first), then
    /// the listings of the notes, then every other chain; each group in its own order.
    #[test]
    fn searches_then_listings_then_the_rest() {
        let mut r = super::super::tests::rewritten();
        let grant = |tool: &str, class: &str| {
            super::super::tests::grant(&format!(
                "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 result_class = \"{class}\"\n"
            ))
        };
        r.grants
            .insert("list".into(), grant("note_list", "private"));
        r.grants
            .insert("notes".into(), grant("note_search", "secret"));
        r.grants
            .insert("logs".into(), grant("session_search", "private"));
        let plan = super::super::chains::plan(&r, 4321, "n0", false);
        let played: Vec<(&str, usize)> = order(&r, &plan)
            .into_iter()
            .map(|(i, c)| {
                assert_eq!(c.n, i + 1);
                (c.source.tool, c.n)
            })
            .collect();
        let group = |t: &str| match t {
            "session_search" => 0,
            "note_search" => 1,
            "note_list" => 2,
            _ => 3,
        };
        let groups: Vec<u8> = played.iter().map(|(t, _)| group(t)).collect();
        let mut sorted = groups.clone();
        sorted.sort_unstable();
        assert_eq!(groups, sorted, "{played:?}");
        for g in 0..4 {
            assert!(groups.contains(&g), "group {g}: {played:?}");
            let ns: Vec<usize> = played
                .iter()
                .filter(|(t, _)| group(t) == g)
                .map(|(_, n)| *n)
                .collect();
            assert!(ns.windows(2).all(|w| w[0] < w[1]), "{played:?}");
        }
        assert_eq!(played.len(), plan.len());
    }
}
