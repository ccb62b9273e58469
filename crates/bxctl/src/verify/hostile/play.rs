//! The chains played in the running shadow, each in its sessions, in the order that keeps a
//! source's live label the analysis's: the searches of the chains' own words first, the
//! lower-labelled tool's first, while the index holds only what they planted and what the
//! searches before them left (`search_source`, decisions V60); then the listings of the
//! notes, while the notes are only those planted public and trusted (`note_source`, V59);
//! then what the caller plays there (the job runs listing the notes, V61); then every other
//! chain in its order.

use std::collections::{BTreeMap, BTreeSet};

use config::Config;

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

/// Plays every chain in `shadow` (`config`, its configuration), in the order above, calling
/// `after_listings` once, after the listings of the notes and before the rest.
pub fn chains(
    shadow: &mut Shadow,
    config: &Config,
    r: &Rewritten,
    chains: &[Chain],
    after_listings: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Outcome, String> {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    let mut played = BTreeMap::new();
    let mut unobserved = BTreeMap::new();
    let mut prepared = BTreeSet::new();
    // Whether the indexer is stopped (`search_source::prepare` leaves it so).
    let mut paused = false;
    let mut listed = false;
    for (i, c) in order(r, chains) {
        if !listed && !search_source::is(c) && !note_source::is_list(c) {
            listed = true;
            if paused {
                shadow.resume_indexer().map_err(|e| text(&e))?;
                paused = false;
            }
            after_listings()?;
        }
        // A search's words are indexed before the first of its chains plays, and nothing
        // while they play; every other chain with the indexer watching.
        if search_source::is(c) && prepared.insert(c.source.tool) {
            let late = search_source::prepare(shadow, config, c.source.tool, chains);
            unobserved.extend(late.map_err(|e| text(&e))?);
            paused = true;
        } else if !search_source::is(c) && paused {
            shadow.resume_indexer().map_err(|e| text(&e))?;
            paused = false;
        }
        let first = session::play(config, &c.message()).map_err(|e| text(&e))?;
        let back = match (&c.note, c.restart) {
            (Some(_), _) => {
                // A search chain's new session starts once the indexer indexed what the
                // first left (`search`); never indexed, it is not observed.
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
            // The second turn only once the read's result holds the canary: the send must
            // carry what was read, never what the script knows.
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
        played.insert(i, (first, back));
    }
    if paused {
        shadow.resume_indexer().map_err(|e| text(&e))?;
    }
    if !listed {
        after_listings()?;
    }
    Ok((played.into_values().collect(), unobserved))
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
/// configuration at `config_path`): the runs listing the notes after the ordinary listings,
/// before any chain or other run writes a note, the note a listing run delivers to
/// (`delivered`, by job) relabelled public and trusted after it, so that the next listing is
/// not raised by it; every other run after the ordinary chains. The runs come back in the
/// order of `jobs`.
pub fn with_jobs(
    shadow: &mut Shadow,
    config: &Config,
    config_path: &std::path::Path,
    r: &Rewritten,
    ordinary: &[Chain],
    (jobs, delivered): (&[JobChain], &BTreeMap<String, String>),
) -> Result<(Outcome, Vec<Run>), String> {
    let (listing, rest): (Vec<JobChain>, Vec<JobChain>) = jobs
        .iter()
        .cloned()
        .partition(|j| note_source::is_list(&j.chain));
    let mut listed = Vec::new();
    let played = chains(shadow, config, r, ordinary, &mut || {
        for j in &listing {
            listed.extend(jobs_run::play(
                config,
                config_path,
                std::slice::from_ref(j),
            )?);
            // A run that could not deliver (none is delivered before brokerd ends it) left
            // no note.
            let note = delivered.get(j.job.as_str());
            if let Some(note) = note.filter(|n| config.notes_dir().join(format!("{n}.md")).exists())
            {
                note_source::relabel(config, note)?;
            }
        }
        Ok(())
    })?;
    let mut rest = jobs_run::play(config, config_path, &rest)?.into_iter();
    let mut listed = listed.into_iter();
    let runs = jobs
        .iter()
        .filter_map(|j| {
            if note_source::is_list(&j.chain) {
                listed.next()
            } else {
                rest.next()
            }
        })
        .collect();
    Ok((played, runs))
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
