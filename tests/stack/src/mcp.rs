//! MCP servers in a stack test: the scripted `fake-mcp-server` configured as an `[[mcp]]`
//! server of a [`Home`], pinned through `bxctl mcp pin` (brokerd runs the probe), what the
//! loopd side is offered, and how many times a server was started (its log's `pid` lines).
//! A remote server is the same fake behind Streamable HTTP on a loopback port
//! (`fake-mcp-server --http`), configured by its URL.

use std::path::{Path, PathBuf};
use std::process::Output;

use daemon::conn::Conn;
use proto::Message;
use proto::mcp::{ToolsOffered, ToolsQuery};

use crate::{Home, bin};

impl Home {
    /// Configures the fake MCP server `name` playing `script` (before the daemons start);
    /// returns the file it logs each start and each method it is sent to.
    pub fn mcp_server(&self, name: &str, mut script: serde_json::Value) -> PathBuf {
        let log = self.root.join(format!("mcp-{name}.log"));
        script["log_file"] = serde_json::json!(log);
        let path = self.root.join(format!("mcp-{name}.json"));
        std::fs::write(&path, script.to_string()).expect("script");
        self.append_config(&format!(
            "\n[[mcp]]\nname = \"{name}\"\ncommand = [\"{}\", \"{}\"]\n",
            bin("fake-mcp-server").display(),
            path.display()
        ));
        log
    }

    /// Configures the fake MCP server `name` playing `script` as a remote server: started
    /// now behind Streamable HTTP on a loopback port, configured as `[[mcp]] url`. Returns
    /// its log (a `pid` line per session) and the running server, stopped on drop.
    pub fn mcp_remote_server(
        &self,
        name: &str,
        mut script: serde_json::Value,
    ) -> (PathBuf, RemoteServer) {
        let log = self.root.join(format!("mcp-{name}.log"));
        script["log_file"] = serde_json::json!(log);
        let path = self.root.join(format!("mcp-{name}.json"));
        std::fs::write(&path, script.to_string()).expect("script");
        let mut child = std::process::Command::new(bin("fake-mcp-server"))
            .args(["--http", "127.0.0.1:0"])
            .arg(&path)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("fake-mcp-server --http");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
            .expect("its address");
        let server = RemoteServer {
            child,
            addr: line.trim().trim_start_matches("listening on ").to_owned(),
        };
        self.append_config(&format!(
            "\n[[mcp]]\nname = \"{name}\"\nurl = \"{}\"\n",
            server.url()
        ));
        (log, server)
    }

    /// `bxctl mcp pin NAME --yes`.
    pub fn mcp_pin(&self, name: &str) -> Output {
        self.bxctl(&["mcp", "pin", name, "--yes"])
    }

    /// `bxctl mcp pin NAME --yes`, asserted to succeed.
    pub fn mcp_pinned(&self, name: &str) -> String {
        let out = self.mcp_pin(name);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "pin {name}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// What a chat request may offer now, as brokerd tells loopd.
    pub fn offered(&self) -> ToolsOffered {
        let mut conn = Conn::connect(&self.loop_sock()).expect("connect loop side");
        match conn
            .call(1, Message::ToolsQuery(ToolsQuery {}), |_| {})
            .expect("tools query")
            .msg
        {
            Message::ToolsOffered(o) => o,
            other => panic!("not tools_offered: {other:?}"),
        }
    }
}

/// A remote stand-in server, stopped on drop.
#[derive(Debug)]
pub struct RemoteServer {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl RemoteServer {
    /// Its Streamable HTTP endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How many times the server that logs to `log` was started.
pub fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("pid "))
        .count()
}

/// The methods the server that logs to `log` was sent, in order.
pub fn methods(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("pid "))
        .map(str::to_owned)
        .collect()
}

/// A grant of `tool` (`mcp:<server>/<tool>`), mode auto, with `extra` lines.
pub fn mcp_grant(tool: &str, extra: &str) -> String {
    format!("tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n{extra}\n")
}
