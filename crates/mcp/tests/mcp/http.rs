//! Streamable HTTP against a scripted loopback server: the session id sent back, a reply to
//! a notification dropped, an event stream read one event at a time while the client
//! answers the server's request by a POST of its own, an error status, the message limit.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp::http::StreamableHttp;
use mcp::{Client, ClientInfo, Declared, Limits, McpError, ServerRequest};
use serde_json::{Value, json};

/// One request as the server got it: its `Mcp-Session-Id` and its body.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

fn read_request(stream: &TcpStream) -> (Option<String>, Value) {
    let mut reader = BufReader::new(stream);
    let (mut length, mut session) = (0, None);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("head");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(": ").unwrap_or((line, ""));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse().expect("length"),
            "mcp-session-id" => session = Some(value.to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("body");
    (session, serde_json::from_slice(&body).expect("JSON body"))
}

fn json_reply(mut stream: &TcpStream, body: &Value, session: bool) {
    let body = body.to_string();
    let id = if session {
        "Mcp-Session-Id: s-1\r\n"
    } else {
        ""
    };
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{id}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Serves one connection as the script says; `answered` carries the client's answers to
/// the server's own request over to the stream that waits for them.
fn serve(stream: TcpStream, seen: &Seen, answered: &Mutex<Sender<()>>, wait: &Mutex<Receiver<()>>) {
    let (session, body) = read_request(&stream);
    seen.lock().expect("seen").push((session, body.clone()));
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    match body.get("method").and_then(Value::as_str) {
        Some("initialize") => json_reply(
            &stream,
            &json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": mcp::PROTOCOL_VERSION, "capabilities": {"tools": {}},
            "serverInfo": {"name": "http-fake", "version": "1"}}}),
            true,
        ),
        // As the conformance suite's initialize server does: a body for a notification.
        Some("notifications/initialized") => {
            json_reply(&stream, &json!({"jsonrpc": "2.0", "result": {}}), false)
        }
        Some("tools/list") => {
            let mut s = &stream;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            );
            let _ = write!(s, "id: e1\r\nretry: 500\r\ndata: \r\n\r\n");
            let ask = json!({"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {}});
            let _ = write!(s, "event: message\ndata: {ask}\n\n");
            let _ = s.flush();
            wait.lock()
                .expect("wait")
                .recv_timeout(Duration::from_secs(5))
                .expect("the client answered");
            let result = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}});
            let _ = write!(s, "event: message\ndata: {result}\n\n");
        }
        Some("tools/call") if body["params"]["name"] == "trickle" => {
            let mut s = &stream;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            );
            for _ in 0..50 {
                let _ = write!(s, ": keepalive\n\n");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Some("tools/call") => {
            let mut s = &stream;
            let _ = write!(
                s,
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
        // The client's answer to the server's request.
        None => {
            let mut s = &stream;
            let _ = write!(
                s,
                "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = answered.lock().expect("answered").send(());
        }
        Some(_) => {}
    }
}

fn start() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let seen: Seen = Arc::default();
    let (tx, rx) = channel();
    let (tx, rx) = (Arc::new(Mutex::new(tx)), Arc::new(Mutex::new(rx)));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(8).flatten() {
            let (seen, tx, rx) = (record.clone(), tx.clone(), rx.clone());
            std::thread::spawn(move || serve(stream, &seen, &tx, &rx));
        }
    });
    (url, seen)
}

#[test]
fn a_session_over_streamable_http() {
    let (url, seen) = start();
    let transport = StreamableHttp::new(&url, Limits::default().max_message).expect("url");
    let mut client = Client::new(transport, Limits::default(), Duration::from_secs(10));
    let info = client
        .initialize(&ClientInfo::default(), Declared::default())
        .expect("initialize");
    assert_eq!(info.name, "http-fake");
    let tools = client.list_tools().expect("list");
    assert_eq!(tools.len(), 1);
    assert_eq!(client.report().refused, [ServerRequest::Sampling]);
    let err = client.call_tool("t", &json!({})).expect_err("404");
    assert!(
        matches!(&err, McpError::Io { detail } if detail.contains("HTTP 404")),
        "{err}"
    );
    let seen = seen.lock().expect("seen").clone();
    let methods: Vec<&str> = seen
        .iter()
        .map(|(_, b)| {
            b.get("method")
                .and_then(Value::as_str)
                .unwrap_or("(answer)")
        })
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "(answer)",
            "tools/call"
        ]
    );
    // The session id comes back on every POST after initialize.
    assert!(seen[0].0.is_none());
    assert!(
        seen[1..].iter().all(|(s, _)| s.as_deref() == Some("s-1")),
        "{seen:?}"
    );
    assert_eq!(seen[3].1["id"], json!(0));
    assert_eq!(seen[3].1["error"]["code"], json!(-32601));
}

#[test]
fn an_http_message_over_the_limit_is_refused() {
    let (url, _seen) = start();
    let transport = StreamableHttp::new(&url, 64).expect("url");
    let mut client = Client::new(
        transport,
        Limits {
            max_message: 64,
            ..Limits::default()
        },
        Duration::from_secs(10),
    );
    let err = client
        .initialize(&ClientInfo::default(), Declared::default())
        .expect_err("too large");
    assert_eq!(err, McpError::MessageTooLarge { limit: 64 });
}

#[test]
fn only_http_and_https_urls_with_a_host_are_taken() {
    for url in [
        "https://user@127.0.0.1/mcp",
        "http://user@127.0.0.1/mcp",
        "http:///mcp",
        "ftp://x",
    ] {
        assert!(StreamableHttp::new(url, 1024).is_err(), "{url}");
    }
}

#[test]
fn a_trickling_stream_ends_at_the_deadline() {
    let (url, _seen) = start();
    let transport = StreamableHttp::new(&url, Limits::default().max_message).expect("url");
    let mut client = Client::new(transport, Limits::default(), Duration::from_millis(1000));
    client
        .initialize(&ClientInfo::default(), Declared::default())
        .expect("initialize");
    let started = std::time::Instant::now();
    let err = client
        .call_tool("trickle", &json!({}))
        .expect_err("timeout");
    assert!(matches!(err, McpError::Timeout { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}
