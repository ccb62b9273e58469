//! The runners, from outside: the direct runner against small shell-script tools, the
//! systemd runner's unit, and runs through a fake and the real `systemd-run`. Shared here:
//! sample specs, a scratch directory removed on drop, and the one door to a run.

mod direct;
mod mcp;
mod mcp_print;
mod mcp_remote;
mod stages;
mod systemd;
mod systemd_run;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use brokerd::policy::{self, Decision, SessionView};
use brokerd::run::bind::Bind;
use brokerd::run::runner::{
    DirectRunner, Limits, RunOutcome, RunSpec, Runner, Secret, SystemdRunner, unit_name,
};
use proto::toolrun::ToolInvocation;
use proto::tools::{HttpFetchArgs, ReadFileArgs, ToolArgs};

pub(super) fn limits() -> Limits {
    Limits {
        max_result_bytes: 1024,
        time_limit: Duration::from_secs(30),
        memory_max_bytes: 256 * 1024 * 1024,
        tasks_max: 16,
    }
}

fn session() -> proto::SessionId {
    proto::SessionId::new("chat-7").expect("valid session id")
}

/// A bind of `path` at itself, as brokerd makes it for a path with no link in its prefix.
pub(super) fn bind_at(path: &str) -> Bind {
    Bind {
        source: path.into(),
        target: path.into(),
    }
}

/// `read_file` under /srv/notes, no network, no secret.
pub(super) fn read_file_spec() -> RunSpec {
    RunSpec {
        unit: unit_name(&session(), proto::CallId(3)),
        invocation: ToolInvocation {
            call: ToolArgs::ReadFile(ReadFileArgs {
                path: "/srv/notes/todo.md".into(),
            }),
            max_bytes: 1024,
            roots: vec!["/srv/notes".into()],
            addresses: vec![],
            consult: None,
            timeout_ms: 30_000,
            notes: None,
            index: vec![],
        },
        write_bind: None,
        index_binds: vec![],
        bind: Some(bind_at("/srv/notes/todo.md")),
        addresses: vec![],
        secret: None,
        limits: limits(),
        mcp: None,
        stage: None,
    }
}

/// `http_fetch` of a host with one IPv4 and one IPv6 address.
pub(super) fn http_fetch_spec() -> RunSpec {
    let addresses: Vec<IpAddr> = vec![
        "93.184.216.34".parse().expect("ipv4"),
        "2606:2800:220:1::248".parse().expect("ipv6"),
    ];
    RunSpec {
        unit: unit_name(&session(), proto::CallId(4)),
        invocation: ToolInvocation {
            call: ToolArgs::HttpFetch(HttpFetchArgs {
                url: "https://example.com/".into(),
            }),
            max_bytes: 1024,
            roots: vec![],
            addresses: vec![
                "93.184.216.34:443".into(),
                "[2606:2800:220:1::248]:443".into(),
            ],
            consult: None,
            timeout_ms: 30_000,
            notes: None,
            index: vec![],
        },
        write_bind: None,
        index_binds: vec![],
        bind: None,
        addresses,
        secret: None,
        limits: limits(),
        mcp: None,
        stage: None,
    }
}

/// The `read_file` spec with a secret (as a `consult` grant would carry one).
pub(super) fn secret_spec(source: &Path) -> RunSpec {
    RunSpec {
        secret: Some(Secret {
            name: "api-key".into(),
            source: source.to_path_buf(),
        }),
        ..read_file_spec()
    }
}

/// A fresh directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub(super) struct Scratch(PathBuf);

impl Scratch {
    pub(super) fn new(tag: &str) -> Self {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).expect("OS random numbers");
        let name = proto::hex(&random);
        let path = std::env::temp_dir().join(format!("brokerd-{tag}-{name}"));
        std::fs::create_dir(&path).expect("create scratch dir");
        Self(path)
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A decision that allows exactly `call` (a `read_file` under /srv/notes, or an
/// `http_fetch` of example.com): a tool runs only through [`Runner::run`], on a decision
/// that authorises what it runs.
pub(super) fn allowed(call: &ToolArgs) -> Decision {
    let grant = match call {
        ToolArgs::HttpFetch(_) => {
            "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                                  [constraints]\nhosts = [\"example.com\"]\n"
        }
        _ => {
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
              [constraints]\npaths = [\"/srv/notes\"]\n"
        }
    };
    let snapshot = grants::Snapshot::from_texts(
        [("g".to_owned(), (PathBuf::from("g.toml"), grant.to_owned()))]
            .into_iter()
            .collect(),
    )
    .expect("grants");
    let session = SessionView {
        taint: proto::DataClass::Private,
        untrusted: false,
    };
    let decision = policy::decide(&snapshot, call, session, proto::Timestamp::now());
    assert!(matches!(decision.outcome(), policy::Outcome::Allow { .. }));
    decision
}

/// A decision authorises one run: the runner refuses a spec for other arguments than the
/// ones its allow covers, and runs nothing (issue 23 point 3).
#[test]
fn a_decision_runs_only_what_it_authorises() {
    let dir = Scratch::new("authorised");
    let ran = dir.path().join("ran");
    let tool = direct::script(
        dir.path(),
        "tool",
        &format!(
            "touch {}\nprintf '%s' '{{\"status\":\"ok\",\"content\":\"x\",\"truncated\":false}}'",
            ran.display()
        ),
    );
    let runner = Runner::Direct(DirectRunner { tool });
    let spec = read_file_spec();
    let mut other = spec.clone();
    other.invocation.call = ToolArgs::ReadFile(ReadFileArgs {
        path: "/srv/notes/other.md".into(),
    });
    let outcome = runner.run(allowed(&spec.invocation.call), &other);
    match outcome {
        RunOutcome::Failed { message, .. } => {
            assert!(message.contains("does not allow"), "{message}");
        }
        ok => panic!("ran what the decision did not authorise: {ok:?}"),
    }
    assert!(!ran.exists(), "the tool was started");
    // An allow of another tool does not run this one either.
    let fetch = http_fetch_spec();
    assert!(matches!(
        runner.run(allowed(&fetch.invocation.call), &spec),
        RunOutcome::Failed { .. }
    ));
    assert!(!ran.exists(), "the tool was started");
    // The control: the spec it authorises runs.
    let outcome = direct::run_retrying(|| runner.run(allowed(&spec.invocation.call), &spec));
    assert!(matches!(outcome, RunOutcome::Ok { .. }), "{outcome:?}");
    assert!(ran.exists());
}

/// Runs a spec on a runner through its one door, with a decision that allows the run.
pub(super) trait Execute {
    fn execute(&self, spec: &RunSpec) -> RunOutcome;
}

impl Execute for DirectRunner {
    fn execute(&self, spec: &RunSpec) -> RunOutcome {
        Runner::Direct(self.clone()).run(allowed(&spec.invocation.call), spec)
    }
}

impl Execute for SystemdRunner {
    fn execute(&self, spec: &RunSpec) -> RunOutcome {
        Runner::Systemd(self.clone()).run(allowed(&spec.invocation.call), spec)
    }
}
