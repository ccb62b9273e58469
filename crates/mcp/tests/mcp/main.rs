//! The `mcp` crate's public behaviour, a module per concern. The client is driven against
//! the scripted fake server (`fake-mcp-server`), run in this process over pipes.

mod client;
mod http;
mod json;
mod jsonrpc;
mod pins;
mod realpeer;
mod schema;

use std::io::BufReader;
use std::thread::JoinHandle;
use std::time::Duration;

use mcp::transport::Stdio;
use mcp::{Client, Limits};

pub type FakeClient = Client<Stdio<std::io::PipeWriter>>;

/// A client connected to the fake serving `script`, with `limits` and `timeout`; the
/// fake's thread gives its exit status.
pub fn fake_with(script: &str, limits: Limits, timeout: Duration) -> (FakeClient, JoinHandle<u8>) {
    let script = fake_mcp_server::Script::parse(script).expect("script");
    let (client_read, server_write) = std::io::pipe().expect("pipe");
    let (server_read, client_write) = std::io::pipe().expect("pipe");
    let server = std::thread::spawn(move || {
        fake_mcp_server::run(&script, BufReader::new(server_read), server_write)
    });
    let transport = Stdio::new(client_read, client_write, limits.max_message);
    (Client::new(transport, limits, timeout), server)
}

pub fn fake(script: &str) -> (FakeClient, JoinHandle<u8>) {
    fake_with(script, Limits::default(), Duration::from_secs(10))
}
