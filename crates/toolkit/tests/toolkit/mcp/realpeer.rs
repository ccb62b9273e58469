use std::path::PathBuf;

use proto::Hash32;
use proto::mcp::{McpCallOutput, McpFailure, McpPinOutput, McpServer};

use super::{call_with, failure, invocation, pin};

/// Real-peer tier (ignored; `tests/gate` step `mcp` runs it after `tests/mcp/setup.sh`): the
/// tool's own session with mcp-server-time from PyPI and server-everything from npm.
#[test]
#[ignore = "real peer: needs tests/mcp/setup.sh"]
fn realpeer_pin_and_call_the_reference_servers() {
    let bin = |var: &str, name: &str| match std::env::var_os(var) {
        Some(dir) => PathBuf::from(dir).join(name).to_string_lossy().into_owned(),
        None => panic!("{var} is not set: eval \"$(tests/mcp/setup.sh)\" (tests/gate mcp does)"),
    };
    for (command, tool, arguments, expect) in [
        (
            bin("BOXMAKER_MCP_PYTHON_BIN", "mcp-server-time"),
            "get_current_time",
            r#"{"timezone":"UTC"}"#,
            "\"timezone\": \"UTC\"",
        ),
        (
            bin("BOXMAKER_MCP_NODE_BIN", "mcp-server-everything"),
            "get-sum",
            r#"{"a":2,"b":3.5}"#,
            "5.5",
        ),
    ] {
        let server = McpServer {
            name: "real".into(),
            command: vec![command],
            env: Vec::new(),
            remote: None,
        };
        let McpPinOutput::Ok { hash, tools, .. } = pin(&server) else {
            panic!("pin {server:?}")
        };
        assert_eq!(hash, Hash32::digest(tools.as_bytes()));
        let (out, _) = call_with(&invocation(&server, tool, arguments, hash), None);
        let McpCallOutput::Ok { content, .. } = out else {
            panic!("{tool}: {out:?}")
        };
        assert!(content.contains(expect), "{tool}: {content}");
        let (out, _) = call_with(&invocation(&server, tool, arguments, Hash32::ZERO), None);
        assert!(
            matches!(failure(&out).0, McpFailure::McpChanged { .. }),
            "{out:?}"
        );
    }
}
