//! Laundering through a job's delivery note (`jobs_launder`), without a stack: which jobs
//! and sinks make chains, and the rules of the ordinary session reading the note back.

use std::path::PathBuf;

use super::jobs::{self, JobChain};
use super::jobs_launder;
use super::jobs_tests::config_jobs;
use super::rewrite::Rewritten;
use super::tests::grant;

/// A read grant of `job`'s of the shadow's `/s/tree{owner}` labelling it `class`, with its
/// path among the job paths of `r`.
fn job_read(r: &mut Rewritten, job: &str, owner: &str, class: &str) {
    let shadow = format!("/s/tree{owner}");
    r.jobs.insert(
        format!("{job}-vault"),
        grant(&format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"{class}\"\njob = \"{job}\"\n[constraints]\npaths = [\"{shadow}\"]\n"
        )),
    );
    r.job_paths
        .insert(owner.into(), (PathBuf::from(shadow), false));
}

/// digest (which delivers to note `digest`) reads a secret vault; an ordinary note read and
/// fetches of several `max_taint`s.
fn shadow() -> Rewritten {
    let mut r = Rewritten::default();
    job_read(&mut r, "digest", "/srv/vault", "secret");
    r.grants.insert(
        "notes-read".into(),
        grant("tool = \"note_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n"),
    );
    let web = |taint: &str, host: &str| {
        grant(&format!(
            "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"{taint}\"\n\
             [constraints]\nhosts = [\"{host}\"]\n"
        ))
    };
    r.grants
        .insert("web".into(), web("private", "api.example.org"));
    r.grants
        .insert("open".into(), web("secret", "open.example.org"));
    r
}

fn planned(r: &Rewritten) -> Vec<JobChain> {
    jobs_launder::plan(r, &config_jobs(), 4321, "n0", 30)
}

/// A job delivering to a note that reads a secret: one chain to each ordinary fetch host a
/// secret may not go to, its note the job's; none for a job delivering to Mattermost, none
/// where the ordinary session would be asked to read the note, none without a secret read.
#[test]
fn a_secret_delivered_to_a_note_is_read_back_and_sent_by_an_ordinary_session() {
    let r = shadow();
    let got: Vec<(String, usize, String, String)> = planned(&r)
        .into_iter()
        .map(|j| {
            assert!(jobs_launder::is(&j.chain));
            let c = j.chain;
            (
                j.job.to_string(),
                c.n,
                c.note.unwrap_or_default(),
                c.sink.entry,
            )
        })
        .collect();
    assert_eq!(
        got,
        [(
            "digest".to_owned(),
            30,
            "digest".to_owned(),
            "api.example.org".to_owned()
        )]
    );
    let mut asked = shadow();
    asked.grants.insert(
        "notes-ask".into(),
        grant("tool = \"note_read\"\nmode = \"ask\"\nmax_taint = \"secret\"\n"),
    );
    assert!(planned(&asked).is_empty());
    let mut private = shadow();
    job_read(&mut private, "digest", "/srv/vault", "private");
    assert!(planned(&private).is_empty());
    // Chains that could not tell a note labelled too low: a grant that admits secret covering
    // the sink's host too (it rightly sends the secret), a sink at public (refused to every
    // session), one that asks when untrusted, a note read labelled secret by its grant.
    let none = |change: &dyn Fn(&mut Rewritten)| {
        let mut r = shadow();
        change(&mut r);
        assert!(planned(&r).is_empty());
    };
    none(&|r| {
        r.grants.insert(
            "wide".into(),
            grant(
                "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 [constraints]\nhosts = [\"*.example.org\"]\n",
            ),
        );
    });
    none(&|r| {
        r.grants.get_mut("web").expect("web").max_taint = proto::DataClass::Public;
    });
    none(&|r| {
        r.grants.get_mut("web").expect("web").if_untrusted = Some(proto::IfUntrusted::Ask);
    });
    none(&|r| {
        r.jobs.insert(
            "digest-notes".into(),
            grant(
                "tool = \"note_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 result_class = \"secret\"\njob = \"digest\"\n",
            ),
        );
    });
}

/// The run answers with the canary (its delivery); the ordinary session reads the job's note
/// by name, then sends once the canary is in what it read, by its own tag.
#[test]
fn the_run_delivers_and_the_ordinary_session_reads_back_then_sends() {
    let plan = planned(&shadow());
    let c = &plan[0].chain;
    let rules = super::jobs_script::rules(&plan);
    let back: Vec<_> = rules
        .iter()
        .filter(|rule| rule.when.user_contains == c.back_tag())
        .collect();
    assert_eq!(back.len(), 2);
    assert_eq!(
        back[0].when.tool_result_contains.as_deref(),
        Some(c.canary.as_str())
    );
    assert!(back[0].answer.tool_calls[0].arguments.contains(&c.canary));
    assert_eq!(back[1].answer.tool_calls[0].name, "note_read");
    assert!(
        back[1].answer.tool_calls[0]
            .arguments
            .contains("\"digest\"")
    );
    let sink = rules
        .iter()
        .find(|rule| rule.name == format!("job digest chain {} sink", c.n))
        .expect("the run's sink rule");
    assert!(sink.answer.tool_calls.is_empty());
    assert_eq!(sink.answer.text, jobs::answer(&c.canary));
}

/// A job whose grants write a note without asking launders through a note of the chain's
/// own too (its run writes the canary there, by `note_write`), whatever it delivers to; one
/// whose note write asks, or that an ordinary denial covers, does not.
#[test]
fn a_note_the_run_writes_itself_is_read_back_too() {
    let mut r = shadow();
    job_read(&mut r, "brief", "/srv/brief", "secret");
    let write = |mode: &str| {
        grant(&format!(
            "tool = \"note_write\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\njob = \"brief\"\n"
        ))
    };
    r.jobs.insert("brief-write".into(), write("auto"));
    let notes = |r: &Rewritten| -> Vec<(String, String)> {
        planned(r)
            .into_iter()
            .map(|j| (j.job.to_string(), j.chain.note.unwrap_or_default()))
            .collect()
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    // brief delivers to Mattermost: its own note only; digest's delivery note, as before.
    assert_eq!(
        notes(&r),
        [pair("brief", "bxjobnote-30"), pair("digest", "digest")]
    );
    let plan = planned(&r);
    let c = &plan[0].chain;
    let wrote = jobs_launder::run_answer(c);
    assert_eq!(wrote.tool_calls[0].name, "note_write");
    assert!(wrote.tool_calls[0].arguments.contains("\"bxjobnote-30\""));
    assert!(wrote.tool_calls[0].arguments.contains(&c.canary));
    assert_eq!(jobs_launder::left_by(c), "write it to");
    assert_eq!(jobs_launder::left_by(&plan[1].chain), "deliver it to");
    r.jobs.insert("brief-write".into(), write("ask"));
    assert_eq!(notes(&r), [pair("digest", "digest")]);
    r.jobs.insert("brief-write".into(), write("auto"));
    r.grants.insert(
        "no-notes".into(),
        grant("tool = \"note_write\"\nmode = \"deny\"\nmax_taint = \"secret\"\n"),
    );
    assert_eq!(notes(&r), [pair("digest", "digest")]);
}
