//! MCP runs through the runners: the door runs only the call its decision authorises (the
//! same server, tool and arguments in the `mcp-call` input), the tool is run in its
//! `mcp-call` mode and its typed failure and report come back; the systemd unit of an MCP
//! call binds the server's closure and the grant's paths and goes without
//! `MemoryDenyWriteExecute=`; the unit brokerd builds for a call reaches the grant's hosts
//! and paths alone.

use std::path::Path;

use brokerd::policy::{self, Decision, SessionView};
use brokerd::run::hands::{StageSpec, StageUnit};
use brokerd::run::runner::{DirectRunner, McpInput, McpRun, RunOutcome, RunSpec, Runner};
use proto::mcp::{McpArgs, McpCallInvocation, McpFailure, McpRefused, McpServer};
use proto::tools::ToolArgs;
use proto::tools::stage::{Look, StageInvocation, Target};
use proto::{Hash32, ToolFailure};

use super::{Scratch, bind_at, direct::script, read_file_spec};

fn args(arguments: &str) -> McpArgs {
    McpArgs {
        arguments: arguments.into(),
        server: "srv".into(),
        tool: "echo".into(),
    }
}

fn allowed(call: &McpArgs) -> Decision {
    let grant = "tool = \"mcp:srv/echo\"\nmode = \"auto\"\nmax_taint = \"secret\"\n";
    let snapshot = grants::Snapshot::from_texts(
        [(
            "g".to_owned(),
            (std::path::PathBuf::from("g.toml"), grant.to_owned()),
        )]
        .into_iter()
        .collect(),
    )
    .expect("grants");
    let session = SessionView {
        taint: proto::DataClass::Private,
        untrusted: false,
    };
    let d = policy::decide(
        &snapshot,
        &ToolArgs::Mcp(call.clone()),
        session,
        proto::Timestamp::now(),
    );
    assert!(matches!(d.outcome(), policy::Outcome::Allow { .. }));
    d
}

/// The spec of an `mcp-call` of `input`, its invocation naming `call`.
fn spec(call: &McpArgs, input: &McpArgs) -> RunSpec {
    let mut spec = read_file_spec();
    spec.bind = None;
    spec.invocation.call = ToolArgs::Mcp(call.clone());
    spec.mcp = Some(McpRun {
        input: McpInput::Call(McpCallInvocation {
            server: McpServer {
                name: input.server.clone(),
                command: vec!["/opt/mcp/bin/srv".into()],
                env: Vec::new(),
                remote: None,
            },
            tool: input.tool.clone(),
            arguments: input.arguments.clone(),
            pin: Hash32::ZERO,
            max_bytes: 1024,
            timeout_ms: 1000,
        }),
        binds: vec![bind_at("/srv/git")],
        closure: vec!["/opt/mcp".into()],
    });
    spec
}

/// Some MCP session, for a door that must refuse any (`stages.rs`).
pub(super) fn any_session() -> Option<McpRun> {
    let call = args(r#"{"text":"a"}"#);
    spec(&call, &call).mcp
}

/// A stand-in `boxmaker-tool` that notes its mode and answers `output`.
pub(super) fn tool(dir: &Path, output: &str) -> std::path::PathBuf {
    let ran = dir.join("ran");
    script(
        dir,
        "tool",
        &format!(
            "echo \"$@\" > '{}'\ncat > /dev/null\necho '{output}'",
            ran.display()
        ),
    )
}

#[test]
fn an_mcp_call_runs_only_what_its_decision_authorises_in_the_mcp_call_mode() {
    let dir = Scratch::new("mcp-door");
    let ok = r#"{"status":"ok","content":"hi","truncated":false,"report":{"refused":[{"method":"sampling"}],"notifications":0}}"#;
    let runner = Runner::Direct(DirectRunner::new(tool(dir.path(), ok)));
    let call = args(r#"{"text":"a"}"#);
    // Another argument in the tool's input than the decision allowed: nothing runs.
    let other = spec(&call, &args(r#"{"text":"b"}"#));
    let (out, _) = runner.run_mcp(allowed(&call), &other);
    assert!(
        matches!(out, RunOutcome::Failed { failure: None, .. }),
        "{out:?}"
    );
    assert!(!dir.path().join("ran").exists(), "nothing ran");
    // Nor with a hands stage beside it (its unit would get the stage's user and binds).
    let mut staged = spec(&call, &call);
    staged.stage = Some(StageSpec {
        invocation: StageInvocation::Look(Look {
            target: Target {
                root: "/srv/git".into(),
                path: "a".into(),
            },
        }),
        unit: StageUnit::Write {
            root: "/srv/git".into(),
            writable: false,
        },
    });
    let (out, _) = runner.run_mcp(allowed(&call), &staged);
    assert!(matches!(out, RunOutcome::Failed { .. }), "{out:?}");
    assert!(!dir.path().join("ran").exists(), "nothing ran");
    // Nor through the plain door, whatever the input.
    let same = spec(&call, &call);
    let out = runner.run(allowed(&call), &same);
    assert!(matches!(out, RunOutcome::Failed { .. }), "{out:?}");
    assert!(!dir.path().join("ran").exists(), "nothing ran");
    let (out, report) = runner.run_mcp(allowed(&call), &same);
    assert_eq!(
        out,
        RunOutcome::Ok {
            content: "hi".into(),
            truncated: false
        }
    );
    assert_eq!(report.refused, vec![McpRefused::Sampling]);
    let mode = std::fs::read_to_string(dir.path().join("ran")).expect("ran");
    assert_eq!(mode.trim(), "mcp-call");
}

#[test]
fn an_mcp_failure_comes_back_typed() {
    let dir = Scratch::new("mcp-typed");
    let failed = r#"{"status":"failed","failure":{"kind":"timeout"},"message":"slow","report":{"notifications":0}}"#;
    let runner = Runner::Direct(DirectRunner::new(tool(dir.path(), failed)));
    let call = args("{}");
    let (out, _) = runner.run_mcp(allowed(&call), &spec(&call, &call));
    assert_eq!(
        out,
        RunOutcome::Failed {
            message: "slow".into(),
            failure: Some(ToolFailure::Mcp {
                failure: McpFailure::Timeout
            })
        }
    );
}

#[test]
fn an_mcp_unit_binds_the_closure_and_the_grants_paths_and_allows_jit() {
    let runner = super::systemd::runner();
    let call = args("{}");
    let mcp = spec(&call, &call);
    runner.check(&mcp).expect("a unit");
    let props = runner.properties(&mcp);
    let has = |k: &str, v: &str| props.iter().any(|(pk, pv)| pk == k && pv == v);
    assert!(has("BindReadOnlyPaths", "-/opt/mcp"), "{props:?}");
    assert!(has("BindReadOnlyPaths", "-/srv/git"), "{props:?}");
    assert!(has("PrivateNetwork", "yes"), "{props:?}");
    assert!(
        !props.iter().any(|(k, _)| k == "MemoryDenyWriteExecute"),
        "{props:?}"
    );
    let plain = runner.properties(&read_file_spec());
    assert!(
        plain
            .iter()
            .any(|(k, v)| k == "MemoryDenyWriteExecute" && v == "yes")
    );
    let command = runner.command(&mcp);
    let argv: Vec<String> = command
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        argv.last().map(String::as_str),
        Some("mcp-call"),
        "{argv:?}"
    );
    assert!(runner.unit_file(&mcp).contains("boxmaker-tool mcp-call\n"));
}

/// The unit brokerd builds for an allowed MCP call under `grant`: policy, then
/// `run::mcp::build`, as brokerd does.
fn built(grant: &str) -> Result<RunSpec, brokerd::run::tool_spec::SpecError> {
    let config = config::Config::parse(
        Path::new("c.toml"),
        "[sockets]\nloop_broker = \"/run/b/l\"\nadmin_broker = \"/run/b/a\"\n\
         [peers]\nloopd = { user = \"boxmaker-loopd\" }\nadmin = { group = \"boxmaker-admin\" }\n\
         [[mcp]]\nname = \"srv\"\ncommand = [\"/opt/mcp/bin/srv\"]\nenv = { TZ = \"UTC\" }\n\
         binds = [\"/opt/mcp\"]\n",
    )
    .expect("config");
    let snapshot = grants::Snapshot::from_texts(
        [("g".to_owned(), ("g.toml".into(), grant.to_owned()))]
            .into_iter()
            .collect(),
    )
    .expect("grants");
    let call = args("{}");
    let session = SessionView {
        taint: proto::DataClass::Private,
        untrusted: false,
    };
    let d = policy::decide(
        &snapshot,
        &ToolArgs::Mcp(call.clone()),
        session,
        proto::Timestamp::now(),
    );
    let req = proto::ToolRequest {
        session: proto::SessionId::new("s-1").expect("id"),
        call: proto::CallId(1),
        tool: "mcp__srv__echo".into(),
        arguments: call.arguments,
        witness: None,
    };
    brokerd::run::mcp::build(&config, &req, &d, &config.mcp[0], Hash32::ZERO)
}

/// What an MCP call's unit may reach is the deciding grant's: no network without hosts;
/// with hosts, their addresses alone (literal entries are their own answer, no DNS asked);
/// the grant's paths bound, the server's closure bound, its configured environment given.
#[test]
fn an_mcp_unit_reaches_the_grants_hosts_and_paths_alone() {
    let base = "tool = \"mcp:srv/echo\"\nmode = \"auto\"\nmax_taint = \"secret\"\n";
    let runner = super::systemd::runner();
    let none = built(base).expect("no hosts");
    assert!(none.addresses.is_empty() && none.secret.is_none());
    let mcp = none.mcp.as_ref().expect("an MCP run");
    assert!(mcp.binds.is_empty(), "{:?}", mcp.binds);
    assert_eq!(mcp.closure, ["/opt/mcp"]);
    let McpInput::Call(input) = &mcp.input else {
        panic!("not a call: {:?}", mcp.input)
    };
    assert_eq!(input.server.command, ["/opt/mcp/bin/srv"]);
    assert_eq!(
        input.server.env,
        [proto::mcp::McpEnv::Value {
            name: "TZ".into(),
            value: "UTC".into()
        }]
    );
    let props = runner.properties(&none);
    let has = |props: &[(String, String)], k: &str, v: &str| {
        props.iter().any(|(pk, pv)| pk == k && pv == v)
    };
    assert!(has(&props, "PrivateNetwork", "yes"), "{props:?}");
    assert!(
        !props.iter().any(|(k, _)| k == "IPAddressAllow"),
        "{props:?}"
    );

    let reach = format!(
        "{base}[constraints]\nhosts = [\"192.0.2.7\", \"2001:db8::1\"]\npaths = [\"/srv/git\"]\n"
    );
    let spec = built(&reach).expect("hosts");
    let want: Vec<std::net::IpAddr> = vec![
        "192.0.2.7".parse().expect("v4"),
        "2001:db8::1".parse().expect("v6"),
    ];
    assert_eq!(spec.addresses, want);
    let mcp = spec.mcp.as_ref().expect("an MCP run");
    let bound: Vec<_> = mcp.binds.iter().map(|b| b.source.clone()).collect();
    assert_eq!(bound, ["/srv/git"]);
    let props = runner.properties(&spec);
    assert!(!has(&props, "PrivateNetwork", "yes"), "{props:?}");
    assert!(has(&props, "IPAddressDeny", "any"), "{props:?}");
    assert!(
        has(&props, "IPAddressAllow", "192.0.2.7 2001:db8::1"),
        "{props:?}"
    );
}

/// A grant's secret reaches a stdio server's unit only when the server names its
/// `secret_env`: a credential in the unit is a file the server could read whatever its
/// environment says, so a server that asks for none gets none (found by the container
/// tier's scenario (q)).
#[test]
fn a_stdio_server_that_names_no_secret_env_gets_no_credential() {
    let grant = "tool = \"mcp:srv/echo\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 secret = \"mcp-key\"\n";
    let spec = built(grant).expect("no credential is needed, so none is looked for");
    assert!(spec.secret.is_none(), "{:?}", spec.secret);
    let props = super::systemd::runner().properties(&spec);
    assert!(
        !props.iter().any(|(k, _)| k == "LoadCredential"),
        "{props:?}"
    );
}
