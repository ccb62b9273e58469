//! `peer-probe SOCKET`: one request on a framed socket, as whatever uid runs it; prints what
//! came back as one JSON line: `{"refused":{"code":…,"detail":…}}` when the server refused
//! the connection, `{"answered":"<kind>"}` when it answered, `{"failed":"<why>"}` else.
//! `peer-probe --http SOCKET`: one `GET /health` on an HTTP socket (infer.sock); prints
//! `{"http":{"status":N,"body":…}}` (the body parsed as JSON when it is), or `{"failed":…}`.
//! The stack tests run it as another uid to prove the SO_PEERCRED check.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use daemon::conn::{CallError, Conn};
use proto::Message;
use proto::approval::Empty;
use serde_json::{Value, json};

fn framed(sock: &std::path::Path) -> Value {
    match Conn::connect(sock) {
        Err(e) => json!({ "failed": format!("connect: {e}") }),
        Ok(mut conn) => match conn.call(1, Message::GrantsQuery(Empty {}), |_| {}) {
            Ok(env) => json!({ "answered": env.msg.kind() }),
            Err(CallError::Refused(e)) => json!({ "refused": e }),
            Err(e) => json!({ "failed": e.to_string() }),
        },
    }
}

fn http(sock: &std::path::Path) -> Value {
    let mut stream = match UnixStream::connect(sock) {
        Ok(s) => s,
        Err(e) => return json!({ "failed": format!("connect: {e}") }),
    };
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    // The server may answer (and close) before it reads this: what it answered counts.
    let _ = stream.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let mut answer = Vec::new();
    if let Err(e) = stream.read_to_end(&mut answer)
        && answer.is_empty()
    {
        return json!({ "failed": format!("read: {e}") });
    }
    let text = String::from_utf8_lossy(&answer);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return json!({ "failed": format!("no HTTP head in {text:?}") });
    };
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .unwrap_or(0);
    let body = serde_json::from_str::<Value>(body).unwrap_or_else(|_| json!(body));
    json!({ "http": { "status": status, "body": body } })
}

fn main() -> std::process::ExitCode {
    let mut args = std::env::args_os().skip(1);
    let outcome = match (args.next(), args.next()) {
        (Some(flag), Some(sock)) if flag == "--http" => http(std::path::Path::new(&sock)),
        (Some(sock), None) => framed(std::path::Path::new(&sock)),
        _ => {
            let _ = std::io::stderr().write_all(b"usage: peer-probe [--http] SOCKET\n");
            return std::process::ExitCode::from(2);
        }
    };
    let line = format!("{outcome}\n");
    let _ = std::io::stdout().write_all(line.as_bytes());
    std::process::ExitCode::SUCCESS
}
