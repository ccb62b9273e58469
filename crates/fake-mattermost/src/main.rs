//! `fake-mattermost`: a stand-in for a Mattermost server with the REST API v4 calls and the
//! WebSocket events gatewayd uses or is sent unasked, in Mattermost's shapes and status
//! codes (docs/gateway.md lists them; crates/fake-mattermost/tests/ checks them against
//! fixtures written from Mattermost's API description and source). Every user has its own
//! token: a test posts with `POST /api/v4/posts` and reacts with `POST /api/v4/reactions` as
//! the owner or a stranger, exactly as a person's client would. The bot is one more user.
//!
//! Test controls, under `/fake/`, only for what no API call can do:
//!
//! - `POST /fake/drop`: every WebSocket connection is cut (no close frame), as a network loss.
//! - `POST /fake/fail` `{"after": K, "posts": N}`: after K more posts succeed, the next N
//!   `POST /api/v4/posts` fail with a 500.
//! - `GET /fake/state`: every post and reaction, how often each post was edited, typing
//!   notices, connections (ever, and live).
//!
//! The team is `home` ("Home"), with the channels `town-square` and `off-topic`: the names
//! `bxctl gateway setup` looks up (`GET /users/username/{username}`, `GET /teams/name/{name}`,
//! `GET /teams/{team_id}/channels/name/{channel_name}`).
//!
//! Prints `listening on 127.0.0.1:PORT` first on stdout.

mod directory;
mod model;
mod rest;
mod ws;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::Parser;
use serde_json::Value;

use crate::model::{Shared, State, User};

#[derive(Debug, Parser)]
#[command(
    name = "fake-mattermost",
    about = "A stand-in Mattermost server for tests"
)]
struct Cli {
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// The bot's access token.
    #[arg(long, default_value = "bot-token")]
    token: String,
    #[arg(long, default_value = "botkm8ecqs6ua9xrndy7w1ft5h")]
    bot_user_id: String,
    /// A person, `USERNAME:ID:TOKEN` (repeatable); without any, `owner` and `stranger`.
    #[arg(long = "user", value_parser = parse_user)]
    users: Vec<User>,
    /// Town Square, the channel gatewayd follows; every user is a member of it.
    #[arg(long, default_value = "chan4mqx8ekdy1bwpu7s9ront3")]
    channel: String,
    /// Off-Topic, a second channel every user (the bot too) is a member of.
    #[arg(long, default_value = "offtopicqy8ek1mcwd4pxnub7s")]
    other_channel: String,
    #[arg(long, default_value = "team3w9kxpe1mq8ycdsub7ro4n")]
    team: String,
}

fn parse_user(text: &str) -> Result<User, String> {
    let mut parts = text.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), Some(id), Some(token)) if !name.is_empty() && !token.is_empty() => {
            if id.len() != 26 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(format!("{id:?} is not a 26-character Mattermost id"));
            }
            Ok(User {
                id: id.to_owned(),
                username: name.to_owned(),
                token: token.to_owned(),
                is_bot: false,
            })
        }
        _ => Err("expected USERNAME:ID:TOKEN".to_owned()),
    }
}

/// The people when none is named: the owner and a stranger.
fn default_users() -> Vec<User> {
    [
        "owner:ownerkp1dx4oy7wqbsm3e9t6ua:owner-token",
        "stranger:strangerq8ek1ycmw4pxduob7t:stranger-token",
    ]
    .iter()
    .filter_map(|u| parse_user(u).ok())
    .collect()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let listener = match TcpListener::bind(&cli.listen) {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "fake-mattermost: {}: {e}", cli.listen);
            return ExitCode::from(2);
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let mut out = std::io::stdout().lock();
    if writeln!(out, "listening on {addr}")
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::from(2);
    }
    drop(out);
    let mut users = vec![User {
        id: cli.bot_user_id,
        username: "boxmaker".into(),
        token: cli.token,
        is_bot: true,
    }];
    users.extend(if cli.users.is_empty() {
        default_users()
    } else {
        cli.users
    });
    let channels = vec![
        (
            cli.channel,
            "town-square".to_owned(),
            "Town Square".to_owned(),
        ),
        (
            cli.other_channel,
            "off-topic".to_owned(),
            "Off-Topic".to_owned(),
        ),
    ];
    let state: Shared = Arc::new(Mutex::new(State::new(users, channels, cli.team)));
    for stream in listener.incoming().flatten() {
        let state = state.clone();
        std::thread::spawn(move || {
            let _ = serve(stream, &state);
        });
    }
    ExitCode::SUCCESS
}

/// One request with its head's interesting parts.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub query: String,
    pub auth: String,
    ws_key: Option<String>,
    pub body: Value,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let target = parts.next().unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_owned(), query.to_owned());
    let (mut length, mut auth, mut ws_key) = (0usize, String::new(), None);
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let value = value.trim().to_owned();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "authorization" => auth = value,
                "sec-websocket-key" => ws_key = Some(value),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length.min(1 << 20)];
    reader.read_exact(&mut body)?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok(Some(Request {
        method,
        path,
        query,
        auth,
        ws_key,
        body,
    }))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Internal Server Error",
    }
}

fn serve(stream: TcpStream, state: &Shared) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(req) = read_request(&mut reader)? {
        if req.path == "/api/v4/websocket"
            && let Some(key) = &req.ws_key
        {
            return ws::serve(out, key, state);
        }
        let (status, body) = rest::route(&req, state);
        let text = body.to_string();
        write!(
            out,
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{text}",
            reason(status),
            text.len()
        )?;
        out.flush()?;
    }
    Ok(())
}
