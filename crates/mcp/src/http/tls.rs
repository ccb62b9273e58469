//! TLS for an `https://` endpoint: rustls with the ring provider (what ureq brings) and the
//! webpki roots compiled in, nothing else trusted. The certificate must carry the URL's
//! host; the connection goes to the addresses given, so the name checked is the URL's, not
//! what any resolver said. Each connection's reads and writes keep the session's deadline
//! (they go through [`Timed`]).

use std::io::{self, Read, Write};
use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use super::timed::Timed;
use crate::error::McpError;

/// The production trust: the webpki roots, nothing else.
pub(super) fn webpki() -> Result<Arc<ClientConfig>, McpError> {
    config(RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    })
}

/// A client trusting `roots` alone, with rustls's safe defaults (TLS 1.2 and 1.3).
pub(super) fn config(roots: RootCertStore) -> Result<Arc<ClientConfig>, McpError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| McpError::Io {
            detail: format!("TLS: {e}"),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The TLS client of one endpoint and the name its certificate must carry.
#[derive(Debug)]
pub(super) struct Tls {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl Tls {
    /// For the URL's `authority` (`host`, `host:port`, `[v6]:port`). `Err`: why the host
    /// is no name a certificate can carry.
    pub(super) fn new(config: Arc<ClientConfig>, authority: &str) -> Result<Self, String> {
        let host = match authority.strip_prefix('[') {
            Some(rest) => rest.split(']').next().unwrap_or(rest),
            None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
        };
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| format!("names no host a certificate can carry: {e}"))?;
        Ok(Self { config, name })
    }

    /// A TLS connection over `timed`; the handshake happens at its first write.
    pub(super) fn connect(&self, timed: Timed) -> Result<Conn, McpError> {
        let conn = ClientConnection::new(self.config.clone(), self.name.clone()).map_err(|e| {
            McpError::Io {
                detail: format!("TLS: {e}"),
            }
        })?;
        Ok(Conn::Tls(Box::new(StreamOwned::new(conn, timed))))
    }
}

/// One connection, plain or TLS.
pub(super) enum Conn {
    Plain(Timed),
    Tls(Box<StreamOwned<ClientConnection, Timed>>),
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Plain(_) => "Conn::Plain",
            Self::Tls(_) => "Conn::Tls",
        })
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(c) => c.read(buf),
            Self::Tls(c) => c.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(c) => c.write(buf),
            Self::Tls(c) => c.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(c) => c.flush(),
            Self::Tls(c) => c.flush(),
        }
    }
}
