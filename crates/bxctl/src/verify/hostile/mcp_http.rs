//! The stand-in of a remote MCP server (one the owner configured by `url`, `mcp`):
//! `fake-mcp-server --http` on a loopback port, reached at the owner's URL's host, which
//! brokerd's `[broker.self_test]` resolves to loopback, and the stand-in's port.

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `url` (the owner's remote server) as its stand-in is reached: `http://`, the same host
/// (`[broker.self_test]` leads it to loopback), the stand-in's port, the same path.
pub fn at_port(url: &str, port: u16) -> std::io::Result<String> {
    let (parsed, _) = grants::constraints::normalize_url(url)
        .map_err(|e| std::io::Error::other(format!("{url}: {e}")))?;
    let host = parsed.host_str().unwrap_or_default();
    Ok(format!("http://{host}:{port}{}", parsed.path()))
}

/// Starts `fake-mcp-server --http` on a free loopback port for `script`, ending with its
/// stdin; returns it and its port (what it prints, `listening on ADDR`).
pub fn listen(fake: &Path, script: &Path) -> std::io::Result<(Child, u16)> {
    let mut child = Command::new(fake)
        .arg("--http")
        .arg("127.0.0.1:0")
        .arg(script)
        .arg("--while-stdin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        std::io::BufReader::new(out).read_line(&mut line)?;
    }
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .map(|a| a.port());
    match port {
        Some(port) => Ok((child, port)),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            Err(std::io::Error::other(format!(
                "{} --http did not say where it listens",
                fake.display()
            )))
        }
    }
}
