use std::path::Path;

use super::super::{Config, ConfigError, Invalid, Peer};
use super::*;

const BASE: &str = r#"
[sockets]
loop_broker = "/run/boxmaker/loop-broker"
admin_broker = "/run/boxmaker/admin-broker"
[peers]
loopd = { user = "boxmaker-loopd" }
admin = { group = "boxmaker-admin" }
[gateway]
server = "https://chat.example.com"
owners = ["ownerkp1dx4oy7wqbsm3e9t6ua"]
channel = "channel-id"
"#;

const BRIEF: &str = r#"
[[jobs]]
name = "morning-brief"
schedule = "*-*-* 07:00:00"
prompt = "Summarise today's notes."
deliver = "mattermost"
"#;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(Path::new("c.toml"), text)
}

fn job_refusal(text: &str) -> JobInvalid {
    match parse(text) {
        Err(ConfigError::Invalid {
            reason: Invalid::Job(e),
            ..
        }) => e,
        other => panic!("not a job refusal: {other:?}"),
    }
}

#[test]
fn a_job_takes_its_defaults() {
    let c = parse(&format!("{BASE}{BRIEF}")).expect("valid");
    let job = &c.jobs[0];
    assert_eq!(job.name.as_str(), "morning-brief");
    assert_eq!(job.deliver, Deliver::Mattermost);
    assert_eq!(job.randomized_delay, Duration::ZERO);
    assert_eq!(job.time_limit, Duration::from_secs(1800));
    assert!(parse(BASE).expect("no jobs").jobs.is_empty());
    // Each job's runner is admitted by its own user; `peers.jobs` adds a uid (bxctl dev).
    assert_eq!(
        c.job_runners(),
        [Peer::User("boxmaker-job-morning-brief".into())]
    );
    let dev = format!("{BASE}{BRIEF}").replace("[peers]\n", "[peers]\njobs = { uid = 1000 }\n");
    let c = parse(&dev).expect("dev");
    assert_eq!(c.job_runners().last(), Some(&Peer::Uid(1000)));
}

#[test]
fn each_bad_job_is_refused_with_how_to_fix_it() {
    let two = format!("{BASE}{BRIEF}{BRIEF}");
    assert!(matches!(job_refusal(&two), JobInvalid::Duplicate { .. }));
    assert!(job_refusal(&two).to_string().contains("a name of its own"));

    let schedule = format!(
        "{BASE}{}",
        BRIEF.replace("*-*-* 07:00:00", "daily\\nExecStart=/x")
    );
    let e = job_refusal(&schedule);
    assert!(matches!(e, JobInvalid::Schedule { .. }), "{e}");
    assert!(e.to_string().contains("systemd-analyze calendar"), "{e}");
    let empty = format!("{BASE}{}", BRIEF.replace("*-*-* 07:00:00", " "));
    assert!(matches!(job_refusal(&empty), JobInvalid::Schedule { .. }));

    let long = "x".repeat(MAX_PROMPT + 1);
    let over = format!("{BASE}{}", BRIEF.replace("Summarise today's notes.", &long));
    let e = job_refusal(&over);
    assert_eq!(
        e,
        JobInvalid::PromptTooLong {
            name: JobName::new("morning-brief").expect("name"),
            bytes: MAX_PROMPT + 1,
            most: MAX_PROMPT,
        }
    );
    assert!(e.to_string().contains("shorten it"), "{e}");
    let most = "x".repeat(MAX_PROMPT);
    let fits = format!("{BASE}{}", BRIEF.replace("Summarise today's notes.", &most));
    assert!(parse(&fits).is_ok(), "a prompt of exactly the limit fits");
    let blank = format!("{BASE}{}", BRIEF.replace("Summarise today's notes.", "  "));
    assert!(matches!(
        job_refusal(&blank),
        JobInvalid::EmptyPrompt { .. }
    ));

    let (head, _) = BASE.split_once("[gateway]").expect("gateway");
    let e = job_refusal(&format!("{head}{BRIEF}"));
    assert!(matches!(e, JobInvalid::DeliverNotConfigured { .. }), "{e}");
    assert!(e.to_string().contains("add a [gateway]"), "{e}");

    let short = format!("{BASE}{BRIEF}time_limit = \"10m\"\n");
    let e = job_refusal(&short);
    assert!(matches!(e, JobInvalid::TimeLimit { .. }), "{e}");
    assert!(e.to_string().contains("raise time_limit"), "{e}");
    assert!(parse(&format!("{BASE}{BRIEF}time_limit = \"11m\"\n")).is_ok());
}

#[test]
fn a_name_that_cannot_form_the_unit_name_is_refused_where_it_stands() {
    for bad in ["Morning", "morning_brief", "a-very-long-job-name-1", "7am"] {
        let text = format!("{BASE}{}", BRIEF.replace("morning-brief", bad));
        match parse(&text) {
            Err(ConfigError::Parse { error: source, .. }) => {
                assert!(
                    source.reason.contains("invalid job name"),
                    "{bad}: {source}"
                );
                assert!(source.line > 0, "{bad}: the place is named");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn a_job_may_deliver_to_a_note_without_the_gateway_and_a_bad_note_name_is_refused() {
    let (head, _) = BASE.split_once("[gateway]").expect("gateway");
    let to_note = BRIEF.replace("\"mattermost\"", "\"note:brief.today\"");
    let config = parse(&format!("{head}{to_note}")).expect("a note needs no gateway");
    assert_eq!(config.jobs[0].deliver, Deliver::Note("brief.today".into()));

    for bad in ["note:", "note:../x", "note:.hidden", "note:a/b", "note:a b"] {
        let text = format!("{head}{}", BRIEF.replace("mattermost", bad));
        let e = job_refusal(&text);
        assert!(matches!(e, JobInvalid::DeliverNote { .. }), "{bad}: {e}");
        let shown = e.to_string();
        assert!(
            shown.contains("name the note with 1 to 100") && shown.contains("note:morning-brief"),
            "{bad}: says how to fix it: {shown}"
        );
    }
    match parse(&format!("{BASE}{}", BRIEF.replace("mattermost", "email"))) {
        Err(ConfigError::Parse { error: source, .. }) => {
            assert!(source.reason.contains("\"note:NAME\""), "{source}");
        }
        other => panic!("an unknown target: {other:?}"),
    }
}
