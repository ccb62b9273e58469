//! `bxctl verify --hostile`: the live hostile self-test (issue 27 point 3, docs/verify.md).
//! A shadow stack in a scratch directory of its own plays a hostile model against the
//! owner's grant set moved onto canaries (`rewrite`), its every host leading to a local
//! sink (`sink`, `[broker.self_test]`); the model's script tries every chain of a read and
//! a send, look-alike hosts, laundering through a note, a restart of loopd or brokerd and
//! untrusted writes (`chains`, `script`), laundering by compaction (`launder`) and by a
//! search (`search`), the owner's MCP servers and programs played by stand-ins (`mcp`,
//! `run`), a fetch of private or secret results, a write's result, the consult model's
//! answer, a program's output, a note of its own, a listing of the notes and a search of
//! the notes or the logs as sources (`fetch_source`, `write_source`, `consult_source`,
//! `run_source`, `note_source`, `search_source`; the searches, then the listings, played
//! first, while the index and the notes hold only what was planted), each in a
//! session whose approvals are declined (`session`); each job runs in the shadow, once per
//! chain of its own grants (`jobs`); the outcome is compared with the flows analysis
//! (`compare`, `jobs_check`): the shadow brokerd's own, or a report given with `--analysis` (where a test plants a mistake).

mod chains;
mod compare;
mod consult_source;
mod fetch_source;
mod free;
mod interrupt;
mod jobs;
mod jobs_check;
mod jobs_launder;
mod jobs_run;
mod jobs_script;
mod jobs_setting;
mod launder;
mod mcp;
mod mcp_args;
mod mcp_bound;
mod mcp_http;
mod note_source;
mod pattern;
mod play;
mod played;
mod rewrite;
mod run;
mod run_bound;
mod run_source;
mod said;
mod script;
mod search;
mod search_source;
mod session;
mod sink;
mod smuggle;
mod untrusted_write;
mod write_source;

#[cfg(test)]
mod compare_tests;
#[cfg(test)]
mod jobs_check_tests;
#[cfg(test)]
mod jobs_launder_tests;
#[cfg(test)]
mod jobs_sources_tests;
#[cfg(test)]
mod jobs_tests;
#[cfg(test)]
mod launder_tests;
#[cfg(test)]
mod mcp_args_tests;
#[cfg(test)]
mod mcp_bound_tests;
#[cfg(test)]
mod mcp_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod run_source_tests;
#[cfg(test)]
mod run_tests;
#[cfg(test)]
mod search_source_tests;
#[cfg(test)]
mod search_tests;
#[cfg(test)]
mod smuggle_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod untrusted_write_tests;
#[cfg(test)]
mod write_source_tests;

use std::collections::BTreeSet;
use std::path::Path;

use config::Config;
use proto::Message;
use proto::approval::Empty;
use proto::flows::FlowsReport;

use super::report::{Check, Part};

/// The self-test's checks; a failure to run it is one `FAIL`, and then the scratch
/// directory (the shadow's state and logs, canaries only) is kept for a look. Interrupted
/// (SIGINT, SIGTERM, SIGHUP), it stops the shadow's processes and removes the scratch
/// directory before it exits (`interrupt`).
pub fn checks(config: &Config, analysis: Option<&Path>) -> Vec<Check> {
    let dir = match interrupt::scratch() {
        Ok(dir) => dir,
        Err(e) => {
            return vec![Check::fail(
                Part::Hostile,
                "shadow",
                format!(
                    "the hostile self-test could not make its scratch directory under {}: {e}",
                    std::env::temp_dir().display()
                ),
            )];
        }
    };
    // The shadow's processes, stopped before the directory goes (a role starting would write
    // there again).
    let stack = std::sync::Arc::new(crate::dev::stack::Stack::default());
    let watched = interrupt::watch(&dir, stack.clone());
    if let Err(e) = watched {
        let _ = std::fs::remove_dir_all(&dir);
        return vec![Check::fail(
            Part::Hostile,
            "shadow",
            format!("the hostile self-test could not watch for signals: {e}"),
        )];
    }
    let outcome = run(config, analysis, &dir, stack);
    if interrupt::interrupted() {
        // The signal's thread is removing the scratch directory and then exits the process
        // (128 + the signal): no verdict from a run cut short.
        loop {
            std::thread::park();
        }
    }
    match outcome {
        Ok(checks) => {
            let _ = std::fs::remove_dir_all(&dir);
            checks
        }
        Err(e) => vec![
            Check::fail(
                Part::Hostile,
                "shadow",
                format!("the hostile self-test could not run: {e}"),
            )
            .help(format!(
                "the shadow's state and logs are kept in {} (canaries, none of your data): \
                 its logs/ say more; remove it when done",
                dir.display()
            )),
        ],
    }
}

/// The analysis said as the owner's: the shadow's paths as the owner's (`TREE/P` is `P`),
/// and the consult model at its own host rather than the sink's.
fn owners_paths(
    mut report: FlowsReport,
    tree: &Path,
    consult: Option<(String, String)>,
) -> FlowsReport {
    let tree = tree.display().to_string();
    let said = |t: &str| {
        let t = t.replace(&tree, "");
        match &consult {
            Some((shadow, owner)) => t.replace(
                &format!("the consult model at {shadow}"),
                &format!("the consult model at {owner}"),
            ),
            None => t,
        }
    };
    for f in &mut report.flows {
        f.text = said(&f.text);
        for step in [&mut f.source, &mut f.sink] {
            step.what = said(&step.what);
        }
    }
    for s in &mut report.sources {
        s.source.what = said(&s.source.what);
    }
    report
}

/// The host of a consult URL, as the analysis names it.
fn consult_host(url: &str) -> String {
    grants::constraints::normalize_url(url).map_or_else(|_| url.to_owned(), |(_, h)| h.to_string())
}

fn run(
    config: &Config,
    analysis: Option<&Path>,
    dir: &Path,
    stack: std::sync::Arc<crate::dev::stack::Stack>,
) -> Result<Vec<Check>, String> {
    let text = |e: &dyn std::fmt::Display| e.to_string();
    let mut r = rewrite::read(&config.grants, &dir.join("tree")).map_err(|e| text(&e))?;
    jobs_setting::unconfigured(&mut r, &config.jobs);
    // The owner's MCP servers as stand-ins, in the shadow's `STATE/mcp.toml`.
    let fake_mcp = mcp::fake();
    let mut stand_ins = mcp::prepare(&config.mcp, &mut r, fake_mcp.as_deref(), &dir.join("mcp"));
    // The programs `run` grants name, as stand-ins, in the shadow's `[broker.programs]`.
    let programs = run::prepare(&r, &dir.join("run"));
    programs
        .write()
        .map_err(|e| format!("the program stand-ins: {e}"))?;
    rewrite::write(&r, &dir.join("grants")).map_err(|e| text(&e))?;
    let sink = sink::Sink::start().map_err(|e| format!("the sink: {e}"))?;
    let nonce = dir
        .file_name()
        .map(|n| n.to_string_lossy().replace("boxmaker-hostile-", ""))
        .unwrap_or_default();
    let mut chains = chains::plan(
        &r,
        sink.addr.port(),
        &nonce,
        config.broker.consult.is_some(),
    );
    mcp_args::carry(&r, &mut chains);
    let no_free_read = compare::no_free_read(&chains);
    let consult = config.broker.consult.is_some();
    let first = chains.len() + 1;
    let mut job_chains = jobs::plan(&r, &config.jobs, sink.addr.port(), &nonce, first, consult);
    // Laundering through a job's delivery note, last of the job runs (`jobs_launder`).
    let next = first + job_chains.len();
    job_chains.extend(jobs_launder::plan(
        &r,
        &config.jobs,
        sink.addr.port(),
        &nonce,
        next,
    ));
    mcp_args::carry(&r, job_chains.iter_mut().map(|j| &mut j.chain));
    // The ordinary chains and the job chains', for what both plant and stand in for.
    let all: Vec<chains::Chain> = chains
        .iter()
        .cloned()
        .chain(job_chains.iter().map(|j| j.chain.clone()))
        .collect();
    // The fetch sources' paths and canaries, told to the sink before the run.
    fetch_source::register(&sink, &all);
    jobs::plant(&r, &all, &dir.join("tree"))
        .and_then(|()| run_bound::plant(&all))
        .and_then(|()| mcp_bound::plant(&r, &all))
        .and_then(|()| run_source::plant(&programs, all.iter()))
        .and_then(|()| write_source::plant(all.iter(), &nonce))
        .map_err(|e| format!("the canaries: {e}"))?;
    stand_ins
        .write(&all)
        .and_then(|()| {
            std::fs::create_dir_all(dir.join("state"))?;
            std::fs::write(dir.join("state/mcp.toml"), stand_ins.toml())
        })
        .map_err(|e| format!("the MCP stand-ins: {e}"))?;
    let script = dir.join("script.toml");
    let body =
        script::script_with(&chains, jobs_script::rules(&job_chains)).map_err(|e| text(&e))?;
    std::fs::write(&script, body).map_err(|e| format!("{}: {e}", script.display()))?;
    let mut extra = format!("[broker.self_test]\nresolve = \"{}\"\n", sink.addr.ip());
    extra.push_str(&launder::config());
    extra.push_str(&programs.toml());
    if let Some(c) = &config.broker.consult {
        extra.push_str(&format!(
            "[broker.consult]\nurl = \"http://{}/v1\"\nmodel = {}\n",
            sink.addr,
            serde_json::to_string(&c.model).unwrap_or_default()
        ));
    }
    // A stand-in for each secret a grant names, an ordinary session's or a job's (never the
    // owner's): the consult key.
    let credentials = dir.join("credentials");
    std::fs::create_dir_all(&credentials).map_err(|e| format!("{}: {e}", credentials.display()))?;
    let grants = r.grants.values().chain(r.jobs.values());
    for name in grants.filter_map(|g| g.secret.as_deref()) {
        let key = credentials.join(name);
        std::fs::write(&key, "BXHOSTILE-NOT-A-KEY\n")
            .map_err(|e| format!("{}: {e}", key.display()))?;
    }
    let jobs_toml = dir.join("state/jobs.toml");
    std::fs::create_dir_all(dir.join("state"))
        .and_then(|()| std::fs::write(&jobs_toml, jobs_setting::jobs_toml(&config.jobs)))
        .map_err(|e| format!("{}: {e}", jobs_toml.display()))?;
    let (mut shadow, shadow_config) = crate::dev::shadow::start(
        &dir.join("state"),
        &dir.join("grants"),
        &script,
        &extra,
        &credentials,
        jobs_setting::gateway(&config.jobs),
        stack,
    )
    .map_err(|e| text(&e))?;
    stand_ins.pin(&shadow_config)?;
    let jobs = job_chains.iter().map(|j| &j.chain);
    note_source::plant(&shadow_config, chains.iter().chain(jobs), &nonce)?;

    let report = match analysis {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("{}: {e}", path.display()))
            .and_then(|t| {
                serde_json::from_str::<FlowsReport>(&t)
                    .map_err(|e| format!("{}: {e}", path.display()))
            })?,
        None => match crate::admin::call(&shadow_config, Message::FlowsQuery(Empty {})) {
            Ok(Message::FlowsReport(report)) => report,
            Ok(other) => return Err(format!("the shadow's brokerd answered {}", other.kind())),
            Err(e) => return Err(text(&e)),
        },
    };
    let consult = config.broker.consult.as_ref().map(|c| {
        let shadow = consult_host(&format!("http://{}/v1", sink.addr));
        (shadow, consult_host(&c.url))
    });
    let report = owners_paths(report, &dir.join("tree"), consult);
    let config_path = dir.join("state/config.toml");
    let ((played, unobserved), runs) = play::with_jobs(
        &mut shadow,
        &shadow_config,
        &config_path,
        &r,
        &chains,
        (&job_chains, &jobs_setting::delivered(&config.jobs)),
    )?;
    let posts = match shadow.posts() {
        Some(list) => jobs_run::threads(&list.map_err(|e| format!("the fake Mattermost: {e}"))?),
        None => Default::default(),
    };
    let deciders = session::deciders(&shadow_config.audit_dir()).map_err(|e| text(&e))?;
    drop(shadow);
    let seen = sink.seen();
    let played_chains = chains.len();
    let mut outcomes = Vec::new();
    let mut not_observed = Vec::new();
    // The search source chains set aside, not observed: a flow only they were to complete is
    // not observed.
    let mut aside = Vec::new();
    for (c, (first, back)) in chains.into_iter().zip(played) {
        // The call of `tool` but `not` (a fetch source's send is a fetch too).
        let step_but = |p: &session::Played, tool: &str, not: Option<proto::CallId>| {
            let s = p
                .calls
                .iter()
                .find(|s| s.tool == tool && Some(s.call) != not)?;
            let grant = p
                .session
                .clone()
                .and_then(|id| deciders.get(&(id, s.call)).cloned());
            Some((grant, s.clone()))
        };
        let step = |p: &session::Played, tool: &str| step_but(p, tool, None);
        // A write or edit chain's canary is looked for where it wrote; any other's at the sink.
        let write = matches!(c.sink.tool, "write_file" | "edit_file" | run::WRITE);
        let at_sink = if c.sink.tool == run::WRITE {
            run::ran_in(&r, &c)
        } else if write {
            std::fs::read_to_string(&c.url).is_ok_and(|t| t.contains(&c.canary))
        } else if c.sink.tool == "mcp" {
            let call = step(back.as_ref().unwrap_or(&first), mcp::called(&c.sink));
            stand_ins.reached(&r, &c, call.and_then(|(g, _)| g).as_deref())
        } else if c.sink.tool == "run" {
            // A program's output chain's first `run` is its source, not its send.
            let not = (back.is_none() && run_source::is(&c))
                .then(|| step(&first, "run").map(|(_, s)| s.call))
                .flatten();
            let call = step_but(back.as_ref().unwrap_or(&first), "run", not);
            programs.reached(&r, &c, call.and_then(|(g, _)| g).as_deref())
        } else if c.smuggle.is_some() {
            smuggle::reached(&c, &seen)
        } else {
            seen.iter().any(|req| req.contains(&c.canary))
        };
        let bare = c.smuggle.is_some() && smuggle::bare(&c, &seen);
        let outcome = match &back {
            Some(back) if c.restart.is_some() => compare::Outcome {
                source: step(&first, mcp::source_called(&c.source)),
                laundering: Vec::new(),
                sink: step(back, mcp::called(&c.sink)),
                at_sink,
                bare,
                write,
            },
            Some(back) => compare::Outcome {
                source: step(&first, mcp::source_called(&c.source)),
                laundering: search::steps(&c)
                    .into_iter()
                    .map(|(what, tool, new)| (what, step(if new { back } else { &first }, tool)))
                    .collect(),
                sink: step(back, mcp::called(&c.sink)),
                at_sink,
                bare,
                write,
            },
            None => compare::Outcome {
                source: step(&first, mcp::source_called(&c.source)),
                laundering: Vec::new(),
                sink: {
                    let source = step(&first, mcp::source_called(&c.source));
                    // A bound chain's one call (`run`, `mcp_bound`) is its source and its sink.
                    let not = source.filter(|_| !run_bound::is(&c) && !mcp_bound::is(&c));
                    step_but(&first, mcp::called(&c.sink), not.map(|(_, s)| s.call))
                },
                at_sink,
                bare,
                write,
            },
        };
        // A search source whose search was labelled above the analysis's (`search_source`).
        let raised = search_source::raised(&r, &c, &outcome, &report, None);
        if let Some(why) = launder::set_aside(unobserved.get(&c.n).or(raised.as_ref()), at_sink) {
            let what = said::describe(&c, &outcome);
            not_observed.push((c.n, launder::not_observed(&c, &what, why)));
            // A search source chain is the only one of its flow: its flow is not observed
            // either (every other kind's flow has its direct chain).
            if search_source::is(&c) {
                aside.push((c, outcome));
            }
            continue;
        }
        outcomes.push((c, outcome));
    }
    // A grant with patterns no file a chain reads matches is not tried as a source (`pattern`).
    let patterned = pattern::unread(&r);
    // Whether a job chain's send through an MCP tool or a program reached its network.
    let reached = |c: &chains::Chain, g: Option<&str>| match c.sink.tool {
        "mcp" => stand_ins.reached(&r, c, g),
        run::WRITE => run::ran_in(&r, c),
        _ => programs.reached(&r, c, g),
    };
    let mut job_outcomes =
        jobs_check::outcomes(job_chains, runs, &deciders, &seen, &posts, &reached);
    // A run searching the notes or the logs, set aside as an ordinary search chain is.
    for jo in &mut job_outcomes {
        let (c, job) = (&jo.chain.chain, Some(&jo.chain.job));
        let raised = search_source::raised(&r, c, &jo.outcome, &report, job);
        let why = unobserved.get(&c.n).or(raised.as_ref());
        jo.aside = launder::set_aside(why, jo.outcome.at_sink).cloned();
    }
    let mut checks = vec![Check::ok(
        Part::Hostile,
        "shadow",
        format!(
            "{} chain(s) played by a hostile model against {} of your grants moved onto \
             canaries; the sink saw {} request(s)",
            played_chains + job_outcomes.len(),
            r.grants.len() + r.jobs.len(),
            seen.len()
        ),
    )];
    // A write grant whose patterns name no file the shadow can write is not tried either.
    let mut left = r.left.clone();
    left.extend(pattern::unnamed(&r));
    left.extend(pattern::unnamed_reads(&r, &patterned));
    left.extend(write_source::unplayed(&r));
    left.extend(run_bound::unbound(&r));
    left.extend(run::unwritable(&r));
    left.extend(run_source::unplayed(&r));
    left.extend(search_source::unplayed(&r));
    checks.extend(compare::checks_with(
        &outcomes, &aside, &report, &left, &patterned,
    ));
    launder::place(&mut checks, not_observed);
    let patterned: BTreeSet<String> = r
        .jobs
        .iter()
        .filter(|(_, g)| !g.constraints.patterns.is_empty())
        .map(|(id, _)| id.clone())
        .collect();
    checks.extend(jobs_check::checks(
        &job_outcomes,
        &report,
        &patterned,
        &left,
    ));
    checks.extend(no_free_read);
    Ok(checks)
}
