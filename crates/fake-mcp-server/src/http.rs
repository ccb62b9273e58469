//! `fake-mcp-server --http ADDR SCRIPT.json`: the same scripted server behind MCP's
//! Streamable HTTP transport, as a remote server is reached (docs/mcp.md). Each session
//! (an `initialize` POST without `Mcp-Session-Id`) is the fake started anew over stdio as
//! this program's child, so a script's runs (`rug_pull`), log and steps are those of a
//! stdio run; every POST is written to its stdin, and a request's answer comes back as an
//! event stream carrying whatever the child writes (its own requests, notifications) up to
//! the answer, so the client can answer a request the server makes mid-call by a POST of
//! its own (`202 Accepted`, as notifications get). `DELETE` ends the session's child.
//!
//! The bound address is printed on stdout as `listening on ADDR`, then nothing else. An
//! `Authorization` header is written to the script's log as `http authorization VALUE`
//! (what a test reads to know what credential reached the server).

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// The largest request body taken.
const MAX_BODY: usize = 4 << 20;

/// One session: the child serving it over stdio.
struct Session {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    stdout: Mutex<BufReader<ChildStdout>>,
}

type Sessions = Arc<Mutex<HashMap<String, Arc<Session>>>>;

/// Serves `script` on `addr` until killed.
pub fn serve(addr: &str, script: &Path, log: Option<&Path>) -> io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    let mut out = io::stdout().lock();
    writeln!(out, "listening on {}", listener.local_addr()?)?;
    out.flush()?;
    drop(out);
    let sessions: Sessions = Arc::default();
    let next = Arc::new(AtomicU64::new(1));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let (sessions, next, script) = (sessions.clone(), next.clone(), script.to_owned());
        let log = log.map(Path::to_owned);
        std::thread::spawn(move || {
            if let Err(e) = connection(&stream, &sessions, &next, &script, log.as_deref()) {
                let _ = writeln!(io::stderr(), "fake-mcp-server --http: {e}");
                let _ = respond(&stream, "400 Bad Request", &[], "");
            }
        });
    }
    Ok(())
}

/// A request: its method, its `Mcp-Session-Id`, its `Authorization` and its body.
struct Request {
    method: String,
    session: Option<String>,
    authorization: Option<String>,
    body: Vec<u8>,
}

fn read_request(stream: &TcpStream) -> io::Result<Request> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_owned());
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first)?;
    let method = first.split(' ').next().unwrap_or("").to_owned();
    let (mut length, mut session, mut authorization) = (0usize, None, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(bad("the head ended early"));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').ok_or_else(|| bad("a header line"))?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" => {
                length = value.trim().parse().map_err(|_| bad("Content-Length"))?;
            }
            "mcp-session-id" => session = Some(value.trim().to_owned()),
            "authorization" => authorization = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    if length > MAX_BODY {
        return Err(bad("the body is too large"));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Request {
        method,
        session,
        authorization,
        body,
    })
}

fn respond(
    mut stream: &TcpStream,
    status: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes())?;
    stream.flush()
}

fn connection(
    stream: &TcpStream,
    sessions: &Sessions,
    next: &AtomicU64,
    script: &Path,
    log: Option<&Path>,
) -> io::Result<()> {
    let Request {
        method,
        session: session_id,
        authorization,
        body,
    } = read_request(stream)?;
    if let (Some(value), Some(log)) = (authorization, log) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?;
        writeln!(file, "http authorization {value}")?;
    }
    let sessions_of = || sessions.lock().map_err(|_| io::Error::other("poisoned"));
    if method == "DELETE" {
        let gone = session_id.and_then(|id| sessions_of().ok()?.remove(&id));
        if let Some(session) = gone
            && let Ok(mut child) = session.child.lock()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
        return respond(stream, "200 OK", &[], "");
    }
    if method != "POST" {
        return respond(
            stream,
            "405 Method Not Allowed",
            &[("Allow", "POST, DELETE")],
            "",
        );
    }
    let message: Value =
        serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let (id, session) = match session_id {
        Some(id) => match sessions_of()?.get(&id).cloned() {
            Some(session) => (id, session),
            None => return respond(stream, "404 Not Found", &[], ""),
        },
        None if message.get("method").and_then(Value::as_str) == Some("initialize") => {
            let id = format!("fake-{}", next.fetch_add(1, Ordering::Relaxed));
            let session = Arc::new(start(script)?);
            sessions_of()?.insert(id.clone(), session.clone());
            (id, session)
        }
        None => return respond(stream, "400 Bad Request", &[], ""),
    };
    {
        let mut stdin = session
            .stdin
            .lock()
            .map_err(|_| io::Error::other("poisoned"))?;
        stdin.write_all(&body)?;
        stdin.write_all(b"\n")?;
        stdin.flush()?;
    }
    let Some(request_id) = message.get("method").and(message.get("id")) else {
        // A notification, or the client's answer to the server's request.
        return respond(stream, "202 Accepted", &[("Mcp-Session-Id", &id)], "");
    };
    answer(stream, &session, &id, request_id)
}

/// An event stream of what the child writes, up to and with the answer to `request_id`.
fn answer(
    mut stream: &TcpStream,
    session: &Session,
    id: &str,
    request_id: &Value,
) -> io::Result<()> {
    stream.write_all(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: {id}\r\n\
             Connection: close\r\n\r\n"
        )
        .as_bytes(),
    )?;
    stream.flush()?;
    let mut stdout = session
        .stdout
        .lock()
        .map_err(|_| io::Error::other("poisoned"))?;
    loop {
        let mut line = String::new();
        if stdout.read_line(&mut line)? == 0 {
            // The child ended (a step exited): the stream ends without an answer.
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        stream.write_all(format!("data: {line}\n\n").as_bytes())?;
        stream.flush()?;
        let message: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        if message.get("method").is_none() && message.get("id") == Some(request_id) {
            return Ok(());
        }
    }
}

/// The fake over stdio, as this program's child.
fn start(script: &Path) -> io::Result<Session> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        return Err(io::Error::other("no pipes to the child"));
    };
    Ok(Session {
        child: Mutex::new(child),
        stdin: Mutex::new(stdin),
        stdout: Mutex::new(BufReader::new(stdout)),
    })
}
