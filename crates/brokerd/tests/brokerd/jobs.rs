//! Job grants: whose calls they decide (`policy::decide_in`), and the checks that need the
//! configuration and the grants together (`--check-config`, start, reload).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use brokerd::policy::{self, Outcome, SessionView};
use grants::Snapshot;
use proto::tools::ToolArgs;
use proto::{DataClass, DenyReason, JobName, Timestamp};

fn snapshot(grants: &[(&str, String)]) -> Snapshot {
    let files: BTreeMap<String, (PathBuf, String)> = grants
        .iter()
        .map(|(id, text)| {
            let file = PathBuf::from(format!("{id}.toml"));
            ((*id).to_owned(), (file, text.clone()))
        })
        .collect();
    Snapshot::from_texts(files).expect("valid grants")
}

fn notes(mode: &str, job: Option<&str>) -> String {
    let job = job.map(|j| format!("job = \"{j}\"\n")).unwrap_or_default();
    format!(
        "tool = \"read_file\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\n{job}\
         [constraints]\npaths = [\"/srv/notes\"]\n"
    )
}

const PRIVATE: SessionView = SessionView {
    taint: DataClass::Private,
    untrusted: false,
};

fn decide(s: &Snapshot, job: Option<&str>) -> Option<DenyReason> {
    let args = ToolArgs::parse("read_file", r#"{"path":"/srv/notes/today.md"}"#).expect("args");
    let job = job.map(|j| JobName::new(j).expect("name"));
    let now = Timestamp::from_millis(1_789_632_300_000).expect("now");
    match policy::decide_in(s, &args, PRIVATE, job.as_ref(), now).outcome() {
        Outcome::Deny { reason, .. } => Some(reason),
        Outcome::Allow { .. } | Outcome::Ask { .. } | Outcome::Failed { .. } => None,
    }
}

#[test]
fn a_job_grant_decides_only_its_jobs_calls() {
    let s = snapshot(&[("brief", notes("auto", Some("morning-brief")))]);
    assert_eq!(decide(&s, Some("morning-brief")), None);
    assert_eq!(decide(&s, Some("watch-page")), Some(DenyReason::NoGrant));
    assert_eq!(decide(&s, None), Some(DenyReason::NoGrant));
    let ordinary = policy::decide(
        &s,
        &ToolArgs::parse("read_file", r#"{"path":"/srv/notes/a"}"#).expect("args"),
        PRIVATE,
        Timestamp::from_millis(1_789_632_300_000).expect("now"),
    );
    assert!(matches!(ordinary.outcome(), Outcome::Deny { .. }));
}

#[test]
fn an_ordinary_grant_never_allows_in_a_job_but_its_deny_holds_there() {
    let allow = snapshot(&[("owner", notes("auto", None))]);
    assert_eq!(decide(&allow, None), None);
    assert_eq!(
        decide(&allow, Some("morning-brief")),
        Some(DenyReason::NoGrant)
    );
    let ask = snapshot(&[("owner", notes("ask", None))]);
    assert_eq!(
        decide(&ask, Some("morning-brief")),
        Some(DenyReason::NoGrant)
    );
    let both = snapshot(&[
        ("brief", notes("auto", Some("morning-brief"))),
        ("no-notes", notes("deny", None)),
    ]);
    assert_eq!(
        decide(&both, Some("morning-brief")),
        Some(DenyReason::DeniedByGrant)
    );
}

#[test]
fn a_job_session_is_labelled_by_every_grant_covering_the_call() {
    // An ordinary grant that labels the notes secret labels the job's read secret too.
    let secret = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                  result_class = \"secret\"\n[constraints]\npaths = [\"/srv/notes\"]\n";
    let s = snapshot(&[
        ("brief", notes("auto", Some("morning-brief"))),
        ("owner", secret.to_owned()),
    ]);
    let args = ToolArgs::parse("read_file", r#"{"path":"/srv/notes/a"}"#).expect("args");
    let job = JobName::new("morning-brief").expect("name");
    let now = Timestamp::from_millis(1_789_632_300_000).expect("now");
    let d = policy::decide_in(&s, &args, PRIVATE, Some(&job), now);
    assert_eq!(d.labels().map(|l| l.class), Some(DataClass::Secret));
}

/// A config with one job (and a gateway when `gateway`), and `grants` as files.
fn setup(name: &str, gateway: bool, grants: &[(&str, String)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bx-brokerd-jobs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("grants")).expect("dir");
    for (id, text) in grants {
        std::fs::write(dir.join(format!("grants/{id}.toml")), text).expect("grant");
    }
    let gateway = if gateway {
        "[gateway]\nserver = \"https://chat.example.com\"\nowners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n"
    } else {
        ""
    };
    // Without the gateway, the job delivers to a note (which needs none).
    let deliver = if gateway.is_empty() {
        "note:brief"
    } else {
        "mattermost"
    };
    let job = format!(
        "[[jobs]]\nname = \"morning-brief\"\nschedule = \"daily\"\nprompt = \"p\"\n\
         deliver = \"{deliver}\"\n"
    );
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "home = \"{0}/home\"\ngrants = \"{0}/grants\"\n[sockets]\nloop_broker = \"{0}/l\"\n\
             admin_broker = \"{0}/a\"\n[peers]\nloopd = {{ uid = 1 }}\nadmin = {{ uid = 2 }}\ninfer = {{ uid = 3 }}\n\
             jobs = {{ uid = 3 }}\n{gateway}{job}",
            dir.display()
        ),
    )
    .expect("config");
    dir
}

fn check(dir: &Path) -> (bool, String) {
    let out = crate::check_config::check_config(&dir.join("config.toml"));
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    let _ = std::fs::remove_dir_all(dir);
    (out.status.success(), text)
}

#[test]
fn check_config_refuses_a_grant_of_an_unknown_job() {
    let good = setup(
        "good",
        true,
        &[("brief", notes("auto", Some("morning-brief")))],
    );
    assert_eq!(check(&good), (true, String::new()));
    let dir = setup(
        "unknown",
        true,
        &[("watch", notes("auto", Some("watch-page")))],
    );
    let (ok, err) = check(&dir);
    assert!(!ok);
    assert!(
        err.contains("grant watch names job watch-page, which no [[jobs]] entry defines"),
        "{err}"
    );
    assert!(err.contains("add the job"), "{err}");
}

#[test]
fn an_ask_job_grant_needs_the_gateway() {
    // A job that delivers to a note runs without the gateway; its ask could not.
    let asks = notes("ask", Some("morning-brief"));
    let dir = setup("ask", true, &[("brief", asks.clone())]);
    let mut config = config::Config::load(&dir.join("config.toml")).expect("config");
    let s = snapshot(&[("brief", asks)]);
    assert_eq!(brokerd::jobs::check(&config, &s), Ok(()));
    config.gateway = None;
    let err = brokerd::jobs::check(&config, &s).expect_err("no gateway");
    assert!(
        err.to_string()
            .contains("grant brief of job morning-brief can ask the owner, but no [gateway]"),
        "{err}"
    );
    let untrusted = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                     if_untrusted = \"ask\"\njob = \"morning-brief\"\n\
                     [constraints]\npaths = [\"/srv/notes\"]\n"
        .to_owned();
    let s = snapshot(&[("brief", untrusted)]);
    assert!(
        brokerd::jobs::check(&config, &s).is_err(),
        "if_untrusted = ask asks too"
    );
    assert_eq!(check(&dir), (true, String::new()));
    let (ok, err) = check(&setup("ask-nogw", false, &[]));
    assert!(ok, "a job delivering to a note, no gateway: {err}");
    let (ok, err) = check(&setup(
        "ask-note",
        false,
        &[("brief", notes("ask", Some("morning-brief")))],
    ));
    assert!(!ok, "an ask with no gateway passed --check-config");
    assert!(err.contains("can ask the owner, but no [gateway]"), "{err}");
}
