//! A remote MCP server (`[[mcp]] url`): the unit brokerd builds for a call reaches the URL
//! host's addresses alone, and only when the deciding grant lists that host; the owner's
//! probe reaches that host alone; nothing is bound and no secret is passed; the door
//! refuses a remote server whose addresses are not the unit's.

use std::net::IpAddr;
use std::path::Path;

use brokerd::policy::{self, SessionView};
use brokerd::run::runner::{DirectRunner, McpInput, RunOutcome, RunSpec, Runner};
use brokerd::run::tool_spec::SpecError;
use proto::Hash32;
use proto::mcp::{McpArgs, McpPinOutput};
use proto::tools::ToolArgs;

use super::Scratch;
use super::mcp::tool;

const URL: &str = "http://192.0.2.7:8931/mcp";

fn config() -> config::Config {
    config::Config::parse(
        Path::new("c.toml"),
        &format!(
            "[sockets]\nloop_broker = \"/run/b/l\"\nadmin_broker = \"/run/b/a\"\n\
             [peers]\nloopd = {{ user = \"boxmaker-loopd\" }}\n\
             admin = {{ group = \"boxmaker-admin\" }}\n\
             [[mcp]]\nname = \"srv\"\nurl = \"{URL}\"\n"
        ),
    )
    .expect("config")
}

fn call() -> McpArgs {
    McpArgs {
        arguments: "{}".into(),
        server: "srv".into(),
        tool: "echo".into(),
    }
}

/// The decision on a call of `mcp:srv/echo` under `grant`, and the unit brokerd builds.
fn built(grant: &str) -> (policy::Decision, Result<RunSpec, SpecError>) {
    let config = config();
    let snapshot = grants::Snapshot::from_texts(
        [("g".to_owned(), ("g.toml".into(), grant.to_owned()))]
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
        &ToolArgs::Mcp(call()),
        session,
        proto::Timestamp::now(),
    );
    let req = proto::ToolRequest {
        session: proto::SessionId::new("s-1").expect("id"),
        call: proto::CallId(1),
        tool: "mcp__srv__echo".into(),
        arguments: "{}".into(),
        witness: None,
    };
    let spec = brokerd::run::mcp::build(&config, &req, &d, &config.mcp[0], Hash32::ZERO);
    (d, spec)
}

const BASE: &str = "tool = \"mcp:srv/echo\"\nmode = \"auto\"\nmax_taint = \"secret\"\n";

fn has(props: &[(String, String)], k: &str, v: &str) -> bool {
    props.iter().any(|(pk, pv)| pk == k && pv == v)
}

#[test]
fn a_remote_servers_unit_reaches_its_urls_host_alone() {
    let grant = format!(
        "{BASE}secret = \"token\"\n[constraints]\nhosts = [\"198.51.100.1\", \"192.0.2.7\"]\n\
         paths = [\"/srv/git\"]\n"
    );
    // The grant's secret is not passed to a server that names no `secret_header`, so it
    // needs no credentials directory either.
    let spec = built(&grant).1.expect("a unit");
    let want: IpAddr = "192.0.2.7".parse().expect("ip");
    assert_eq!(
        spec.addresses,
        [want],
        "the URL's host, not the grant's other host"
    );
    assert!(
        spec.secret.is_none(),
        "no secret reaches a remote server without secret_header"
    );
    let mcp = spec.mcp.as_ref().expect("an MCP run");
    assert!(mcp.binds.is_empty() && mcp.closure.is_empty(), "{mcp:?}");
    let McpInput::Call(input) = &mcp.input else {
        panic!("not a call")
    };
    assert!(input.server.command.is_empty() && input.server.env.is_empty());
    let remote = input.server.remote.as_ref().expect("remote");
    assert_eq!(remote.url, URL);
    assert_eq!(remote.addresses, ["192.0.2.7:8931"]);
    let props = super::systemd::runner().properties(&spec);
    assert!(has(&props, "IPAddressDeny", "any"), "{props:?}");
    assert!(has(&props, "IPAddressAllow", "192.0.2.7"), "{props:?}");
    assert!(!has(&props, "PrivateNetwork", "yes"), "{props:?}");
    assert!(
        !props
            .iter()
            .any(|(k, v)| k == "BindReadOnlyPaths" && v.contains("/srv/git")),
        "{props:?}"
    );
}

#[test]
fn a_grant_that_does_not_list_the_urls_host_runs_nothing() {
    for grant in [
        BASE.to_owned(),
        format!("{BASE}[constraints]\nhosts = [\"198.51.100.1\"]\n"),
    ] {
        let (d, spec) = built(&grant);
        assert!(
            matches!(d.outcome(), policy::Outcome::Allow { .. }),
            "the policy allows; the unit is what the host decides"
        );
        let Err(e) = spec else {
            panic!("a unit for {grant}")
        };
        assert!(
            matches!(&e, SpecError::McpRemoteHost { server, host } if server == "srv" && host == "192.0.2.7"),
            "{e:?}"
        );
        assert!(e.to_string().contains("do not list"), "{e}");
    }
}

#[test]
fn the_probe_of_a_remote_server_reaches_its_host_alone() {
    let config = config();
    let spec = brokerd::run::mcp::probe(&config, &config.mcp[0], 1).expect("probe");
    let want: IpAddr = "192.0.2.7".parse().expect("ip");
    assert_eq!(spec.addresses, [want]);
    assert!(spec.secret.is_none());
    let mcp = spec.mcp.as_ref().expect("an MCP run");
    let McpInput::Pin(input) = &mcp.input else {
        panic!("not a probe")
    };
    let remote = input.server.remote.as_ref().expect("remote");
    assert_eq!(remote.addresses, ["192.0.2.7:8931"]);
    let props = super::systemd::runner().properties(&spec);
    assert!(has(&props, "IPAddressAllow", "192.0.2.7"), "{props:?}");
}

/// The tool connects where the invocation says and the unit admits what the spec says:
/// the door refuses a remote server whose addresses are not all the unit's.
#[test]
fn the_door_refuses_a_remote_server_at_addresses_the_unit_does_not_admit() {
    let dir = Scratch::new("mcp-remote-door");
    let ok = r#"{"status":"ok","content":"hi","truncated":false,"report":{"notifications":0}}"#;
    let runner = Runner::Direct(DirectRunner::new(tool(dir.path(), ok)));
    let grant = format!("{BASE}[constraints]\nhosts = [\"192.0.2.7\"]\n");
    let (d, spec) = built(&grant);
    let mut spec = spec.expect("a unit");
    spec.addresses = vec!["198.51.100.1".parse().expect("ip")];
    let (out, _) = runner.run_mcp(d, &spec);
    assert!(matches!(out, RunOutcome::Failed { .. }), "{out:?}");
    assert!(!dir.path().join("ran").exists(), "nothing ran");
    let mut probe = brokerd::run::mcp::probe(&config(), &config().mcp[0], 1).expect("probe");
    probe.addresses.clear();
    let out = runner.probe(&probe);
    assert!(matches!(out, McpPinOutput::Failed { .. }), "{out:?}");
    assert!(!dir.path().join("ran").exists(), "nothing ran");
    // With the unit's own addresses, it runs.
    let (d, spec) = built(&grant);
    let (out, _) = runner.run_mcp(d, &spec.expect("a unit"));
    assert!(matches!(out, RunOutcome::Ok { .. }), "{out:?}");
    assert!(dir.path().join("ran").exists());
}

/// An `https://` URL without a port is reached at 443, its host's addresses alone.
#[test]
fn an_https_servers_unit_reaches_its_host_at_443() {
    let config = config::Config::parse(
        Path::new("c.toml"),
        "[sockets]\nloop_broker = \"/run/b/l\"\nadmin_broker = \"/run/b/a\"\n\
         [peers]\nloopd = { user = \"boxmaker-loopd\" }\nadmin = { group = \"boxmaker-admin\" }\n\
         [[mcp]]\nname = \"srv\"\nurl = \"https://[2001:db8::7]/mcp\"\n",
    )
    .expect("config");
    let spec = brokerd::run::mcp::probe(&config, &config.mcp[0], 1).expect("probe");
    let want: IpAddr = "2001:db8::7".parse().expect("ip");
    assert_eq!(spec.addresses, [want]);
    let McpInput::Pin(input) = &spec.mcp.as_ref().expect("an MCP run").input else {
        panic!("not a probe")
    };
    let remote = input.server.remote.as_ref().expect("remote");
    assert_eq!(remote.addresses, ["[2001:db8::7]:443"]);
}
