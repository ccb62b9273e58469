//! `https://` against a loopback TLS server whose certificate (for `mcp.test` and
//! 127.0.0.1) a test CA signed (`tests/data/tls-test-*`, made with openssl for these tests
//! alone): a session with that CA trusted; refused with the production trust (the webpki
//! roots, which do not hold it) and for a URL naming another host.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{RootCertStore, ServerConfig, ServerConnection, StreamOwned};
use serde_json::{Value, json};

use super::StreamableHttp;
use crate::{Client, ClientInfo, Declared, Limits, McpError};

const CA: &[u8] = include_bytes!("../../tests/data/tls-test-ca.pem");
const LEAF: &[u8] = include_bytes!("../../tests/data/tls-test-leaf.pem");
const KEY: &[u8] = include_bytes!("../../tests/data/tls-test-leaf.key");

fn test_trust() -> Result<Arc<rustls::ClientConfig>, McpError> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(CA).expect("CA"))
        .expect("root");
    super::tls::config(roots)
}

/// Serves MCP over TLS on a loopback port: `initialize`, `tools/list` (no tools), and a
/// 202 for notifications, each on a connection of its own. A failed handshake ends that
/// connection only.
fn serve() -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(LEAF).expect("leaf")],
            PrivateKeyDer::from_pem_slice(KEY).expect("key"),
        )
        .expect("server config");
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let conn = ServerConnection::new(config.clone()).expect("connection");
            let mut tls = StreamOwned::new(conn, tcp);
            let _ = answer(&mut tls);
        }
    });
    addr
}

fn answer(tls: &mut StreamOwned<ServerConnection, std::net::TcpStream>) -> std::io::Result<()> {
    let mut reader = BufReader::new(&mut *tls);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let result = match message["method"].as_str() {
        Some("initialize") => json!({"protocolVersion": crate::PROTOCOL_VERSION,
            "capabilities": {"tools": {}}, "serverInfo": {"name": "tls", "version": "1"}}),
        Some("tools/list") => json!({"tools": []}),
        _ => {
            tls.write_all(
                b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
            tls.conn.send_close_notify();
            return tls.flush();
        }
    };
    let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": result}).to_string();
    write!(
        tls,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{reply}",
        reply.len()
    )?;
    tls.conn.send_close_notify();
    tls.flush()
}

fn session(transport: StreamableHttp) -> Result<usize, McpError> {
    let mut client = Client::new(transport, Limits::default(), Duration::from_secs(10));
    client.initialize(&ClientInfo::default(), Declared::default())?;
    Ok(client.list_tools()?.len())
}

#[test]
fn an_https_session_checks_the_certificate_against_the_urls_host() {
    let addr = serve();
    let max = Limits::default().max_message;
    let url = format!("https://mcp.test:{}/mcp", addr.port());
    // The name is the URL's; the address is the one given (no resolver knows mcp.test).
    let trusted = StreamableHttp::with_trust(&url, vec![addr], max, test_trust).expect("url");
    assert_eq!(session(trusted).expect("a session over TLS"), 0);
    // The production trust is the webpki roots alone: the test CA is not among them.
    let production = StreamableHttp::at(&url, vec![addr], max).expect("url");
    let e = session(production).expect_err("an unknown issuer");
    assert!(e.to_string().contains("certificate"), "{e}");
    // Another host name than the certificate's, at the same address.
    let other = format!("https://other.test:{}/mcp", addr.port());
    let wrong = StreamableHttp::with_trust(&other, vec![addr], max, test_trust).expect("url");
    let e = session(wrong).expect_err("a name the certificate does not carry");
    assert!(e.to_string().contains("certificate"), "{e}");
}

#[test]
fn urls_are_http_or_https_with_a_host() {
    let at = |url: &str| StreamableHttp::at(url, vec!["127.0.0.1:443".parse().expect("a")], 1);
    assert!(at("https://h/mcp").is_ok());
    assert!(at("http://h/mcp").is_ok());
    for bad in ["ftp://h/", "https://", "https://u@h/", "h/mcp"] {
        assert!(at(bad).is_err(), "{bad}");
    }
}
