//! `brokerd --print-tool-unit` for an MCP grant: the unit its calls get (`mcp-call`, the
//! server's closure, the grant's paths, no `MemoryDenyWriteExecute=`; for a remote server
//! its URL's host alone, with the example address), not a plain tool's; none for a remote
//! server's grant that does not list the host, nor for a server not configured.

use std::path::Path;

use brokerd::run::runner::Runner;
use brokerd::run::tool_spec::{UnitError, print_unit};

const CONFIG: &str = "[sockets]\nloop_broker = \"/run/b/l\"\nadmin_broker = \"/run/b/a\"\n\
     [peers]\nloopd = { user = \"boxmaker-loopd\" }\nadmin = { group = \"boxmaker-admin\" }\n\
     [[mcp]]\nname = \"git\"\ncommand = [\"/opt/mcp/bin/mcp-server-git\"]\nbinds = [\"/opt/mcp\"]\n\
     [[mcp]]\nname = \"far\"\nurl = \"http://192.0.2.7:8931/mcp\"\n";

fn print(grant: &str) -> Result<String, UnitError> {
    let config = config::Config::parse(Path::new("c.toml"), CONFIG).expect("config");
    let snapshot = grants::Snapshot::from_texts(
        [("g".to_owned(), ("g.toml".into(), grant.to_owned()))]
            .into_iter()
            .collect(),
    )
    .expect("grants");
    let runner = Runner::Systemd(super::systemd::runner());
    print_unit(&config, &runner, &snapshot, "g")
}

const AUTO: &str = "mode = \"auto\"\nmax_taint = \"secret\"\n";

#[test]
fn an_mcp_grants_unit_is_its_servers() {
    let unit = print(&format!(
        "tool = \"mcp:git/*\"\n{AUTO}[constraints]\npaths = [\"/srv/git\"]\n"
    ))
    .expect("a unit");
    assert!(unit.contains("boxmaker-tool mcp-call\n"), "{unit}");
    assert!(unit.contains("-/opt/mcp"), "the server's closure: {unit}");
    assert!(unit.contains("/srv/git"), "the grant's paths: {unit}");
    assert!(!unit.contains("MemoryDenyWriteExecute="), "{unit}");
    assert!(
        unit.contains("PrivateNetwork=yes"),
        "no hosts, no network: {unit}"
    );

    let remote = print(&format!(
        "tool = \"mcp:far/*\"\n{AUTO}[constraints]\nhosts = [\"192.0.2.7\"]\n"
    ))
    .expect("a unit");
    assert!(remote.contains("boxmaker-tool mcp-call\n"), "{remote}");
    assert!(remote.contains("IPAddressDeny=any"), "{remote}");
    assert!(remote.contains("IPAddressAllow=192.0.2.1\n"), "{remote}");
    assert!(!remote.contains("PrivateNetwork=yes"), "{remote}");
    assert!(
        !remote.contains("/opt/mcp"),
        "nothing bound for a remote server: {remote}"
    );
}

#[test]
fn no_unit_for_an_mcp_grant_whose_calls_get_none() {
    let e = print(&format!("tool = \"mcp:far/*\"\n{AUTO}")).expect_err("no host");
    assert!(matches!(e, UnitError::McpServer(_)), "{e:?}");
    assert!(e.to_string().contains("do not list"), "{e}");
    let e = print(&format!("tool = \"mcp:nowhere/*\"\n{AUTO}")).expect_err("no server");
    assert!(
        e.to_string().contains("no [[mcp]] server \"nowhere\""),
        "{e}"
    );
}
