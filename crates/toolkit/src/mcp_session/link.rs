//! The session's transport: stdio to the server started as the tool's child, or Streamable
//! HTTP to a remote server at the addresses brokerd resolved for its URL's host (the unit
//! admits exactly those; no name is resolved here, as for `http_fetch`, `crate::net`);
//! `https://` checks the certificate against the URL's host with the webpki roots.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ChildStdin;
use std::time::Instant;

use mcp::McpError;
use mcp::http::StreamableHttp;
use mcp::transport::{Stdio, Transport};
use proto::mcp::{McpRemote, McpServer};

use super::server::{Server, read_credential};

/// Either transport, behind one client.
#[derive(Debug)]
pub enum Link {
    Stdio(Stdio<ChildStdin>),
    Http(Box<StreamableHttp>),
}

impl Link {
    /// The server's transport, and its process when it was started here. `Err` is the
    /// words of a `start` failure.
    pub fn open(
        server: &McpServer,
        credentials: Option<&Path>,
        deadline: Instant,
        max_message: usize,
    ) -> Result<(Self, Option<Server>), String> {
        let Some(remote) = &server.remote else {
            let (process, stdin, stdout) = Server::start(server, credentials, deadline)
                .map_err(|e| format!("the MCP server {:?} did not start: {e}", server.name))?;
            let stdio = Stdio::new(stdout, stdin, max_message);
            return Ok((Self::Stdio(stdio), Some(process)));
        };
        if !server.command.is_empty() || !server.env.is_empty() {
            return Err(format!(
                "the MCP server {:?} is remote: the invocation must give it no command or \
                 environment",
                server.name
            ));
        }
        let mut http = StreamableHttp::at(&remote.url, addresses(remote)?, max_message)
            .map_err(|e| format!("the MCP server {:?} cannot be reached: {e}", server.name))?;
        if let Some(header) = &remote.header {
            let value = read_credential(&header.name, &header.credential, credentials)
                .map_err(|e| format!("the MCP server {:?}: {e}", server.name))?;
            http = http.with_header(&header.name, &value);
        }
        Ok((Self::Http(Box::new(http)), None))
    }
}

/// The invocation's addresses, each at the URL's port (brokerd's list; a port that is not
/// the URL's would be a connection somewhere the URL does not name).
fn addresses(remote: &McpRemote) -> Result<Vec<SocketAddr>, String> {
    let port = url_port(&remote.url)
        .ok_or_else(|| format!("the URL {:?} is not http[s]://host[:port]/…", remote.url))?;
    let mut found = Vec::new();
    for text in &remote.addresses {
        let address: SocketAddr = text
            .parse()
            .map_err(|e| format!("the address {text:?} is not a socket address: {e}"))?;
        if address.port() != port {
            return Err(format!(
                "the address {address} is not at the URL's port {port}"
            ));
        }
        found.push(address);
    }
    if found.is_empty() {
        return Err(format!(
            "no addresses were given for {:?} (brokerd resolves the host)",
            remote.url
        ));
    }
    Ok(found)
}

/// The port of an `http://` or `https://` URL: its own, or 80 or 443.
fn url_port(url: &str) -> Option<u16> {
    let (rest, default) = match url.strip_prefix("https://") {
        Some(rest) => (rest, 443),
        None => (url.strip_prefix("http://")?, 80),
    };
    let authority = rest.split('/').next()?;
    let after_host = match authority.rfind(']') {
        Some(i) => &authority[i + 1..],
        None => authority,
    };
    match after_host.rsplit_once(':') {
        Some((_, port)) => port.parse().ok(),
        None => Some(default),
    }
}

impl Transport for Link {
    fn send(&mut self, message: &str, deadline: Instant) -> Result<(), McpError> {
        match self {
            Self::Stdio(t) => t.send(message, deadline),
            Self::Http(t) => t.send(message, deadline),
        }
    }

    fn send_notice(&mut self, message: &str, deadline: Instant) -> Result<(), McpError> {
        match self {
            Self::Stdio(t) => t.send_notice(message, deadline),
            Self::Http(t) => t.send_notice(message, deadline),
        }
    }

    fn receive(&mut self, deadline: Instant, waiting_for: &str) -> Result<Vec<u8>, McpError> {
        match self {
            Self::Stdio(t) => t.receive(deadline, waiting_for),
            Self::Http(t) => t.receive(deadline, waiting_for),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(url: &str, addresses: &[&str]) -> McpRemote {
        McpRemote {
            url: url.into(),
            addresses: addresses.iter().map(|a| (*a).to_owned()).collect(),
            header: None,
        }
    }

    #[test]
    fn the_url_port_or_80() {
        assert_eq!(url_port("http://h:8931/mcp"), Some(8931));
        assert_eq!(url_port("http://h/mcp"), Some(80));
        assert_eq!(url_port("http://[::1]:81/"), Some(81));
        assert_eq!(url_port("http://[::1]/"), Some(80));
        assert_eq!(url_port("http://h:x/"), None);
        assert_eq!(url_port("https://h/"), Some(443));
        assert_eq!(url_port("https://[::1]:8443/"), Some(8443));
        assert_eq!(url_port("ftp://h/"), None);
    }

    /// Only brokerd's addresses, each at the URL's port, and at least one: never a name
    /// to resolve here.
    #[test]
    fn only_the_given_addresses_at_the_urls_port() {
        let ok = addresses(&remote("http://h:8931/", &["192.0.2.7:8931", "[::1]:8931"]));
        assert_eq!(ok.expect("addresses").len(), 2);
        let other_port = addresses(&remote("http://h:8931/", &["192.0.2.7:80"]));
        assert!(other_port.expect_err("port").contains("port 8931"));
        let none = addresses(&remote("http://h/", &[]));
        assert!(none.expect_err("none").contains("no addresses"));
        let name = addresses(&remote("http://h/", &["h:80"]));
        assert!(name.expect_err("name").contains("not a socket address"));
    }
}
