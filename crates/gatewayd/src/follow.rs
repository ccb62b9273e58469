//! Follows the WebSocket: authenticate, wait for `hello`, catch up through REST on the posts
//! written since the last one handled and the reactions on open approval posts, then pass
//! each `posted` event on and each `reaction_added` to the desk. Any break reconnects with
//! backoff; the catch-up after it finds what was missed (duplicates are dropped).

use std::fmt;
use std::net::TcpStream;
use std::sync::mpsc::Sender;
use std::time::Duration;

use daemon::log;
use serde_json::{Value, json};
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use crate::context::Context;
use crate::desk::Desk;
use crate::mm::{self, Client, Post, Reaction};

type Socket = WebSocket<MaybeTlsStream<TcpStream>>;

/// Why the event stream was lost (or never found): logged, then a reconnect.
#[derive(Debug)]
enum Lost {
    /// The WebSocket could not be opened.
    Connect(tungstenite::Error),
    /// A TLS stream of a kind tungstenite added since.
    StreamKind,
    /// The quiet deadline could not be set on the socket.
    Deadline(std::io::Error),
    Send(tungstenite::Error),
    Read(tungstenite::Error),
    NoHello,
    /// Mattermost refused the token, with its `error.message`.
    AuthRefused(Value),
    Closed,
    /// No event and no answer to a ping, twice in a row.
    Quiet,
    /// The REST catch-up failed.
    CatchUp(mm::Error),
    /// The dispatch thread is gone.
    WorkerStopped,
}

impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connect(e) | Self::Send(e) | Self::Read(e) => e.fmt(f),
            Self::StreamKind => f.write_str("unexpected stream kind"),
            Self::Deadline(e) => e.fmt(f),
            Self::NoHello => f.write_str("no hello before the quiet deadline"),
            Self::AuthRefused(message) => write!(f, "authentication refused: {message}"),
            Self::Closed => f.write_str("closed by the server"),
            Self::Quiet => f.write_str("the server went quiet"),
            Self::CatchUp(e) => e.fmt(f),
            Self::WorkerStopped => f.write_str("the worker stopped"),
        }
    }
}

const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A quiet connection is pinged after this; one quiet twice in a row is dropped.
const QUIET: Duration = Duration::from_secs(30);

/// Runs forever: every post of the channel goes to `posts`, every reaction to `desk`.
pub fn run(ctx: &Context, desk: &Desk, token: &str, posts: &Sender<Post>) {
    let client = ctx.client();
    let mut backoff = FIRST_BACKOFF;
    loop {
        match connect(client, token) {
            Ok(mut ws) => {
                backoff = FIRST_BACKOFF;
                log::info(format_args!("following Mattermost events"));
                if let Err(e) = follow(&mut ws, ctx, desk, posts) {
                    log::warn(format_args!("Mattermost events: {e}; reconnecting"));
                }
            }
            Err(e) => log::warn(format_args!(
                "Mattermost WebSocket: {e}; retrying in {backoff:?}"
            )),
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn connect(client: &Client, token: &str) -> Result<Socket, Lost> {
    let (mut ws, _) = tungstenite::connect(client.websocket_url()).map_err(Lost::Connect)?;
    let stream = match ws.get_ref() {
        MaybeTlsStream::Plain(s) => s,
        MaybeTlsStream::Rustls(s) => s.get_ref(),
        _ => return Err(Lost::StreamKind),
    };
    stream
        .set_read_timeout(Some(QUIET))
        .map_err(Lost::Deadline)?;
    let auth = json!({"seq": 1, "action": "authentication_challenge", "data": {"token": token}});
    ws.send(Message::text(auth.to_string()))
        .map_err(Lost::Send)?;
    loop {
        let event = next(&mut ws)?.ok_or(Lost::NoHello)?;
        if event["status"] == "FAIL" {
            return Err(Lost::AuthRefused(event["error"]["message"].clone()));
        }
        if event["event"] == "hello" {
            return Ok(ws);
        }
    }
}

/// The next JSON message, `None` when the deadline passed quietly.
fn next(ws: &mut Socket) -> Result<Option<Value>, Lost> {
    match ws.read() {
        Ok(Message::Text(text)) => Ok(Some(
            serde_json::from_str(text.as_str()).unwrap_or(Value::Null),
        )),
        Ok(Message::Close(_)) => Err(Lost::Closed),
        Ok(_) => Ok(Some(Value::Null)),
        Err(tungstenite::Error::Io(e)) if daemon::conn::is_timeout_io(&e) => Ok(None),
        Err(e) => Err(Lost::Read(e)),
    }
}

fn catch_up(ctx: &Context, desk: &Desk, posts: &Sender<Post>) -> Result<(), Lost> {
    let cursor = ctx.store().cursor();
    for post in ctx
        .client()
        .since(ctx.channel(), cursor.saturating_sub(1))
        .map_err(Lost::CatchUp)?
    {
        posts.send(post).map_err(|_| Lost::WorkerStopped)?;
    }
    desk.catch_up(mm::now_ms());
    Ok(())
}

fn follow(ws: &mut Socket, ctx: &Context, desk: &Desk, posts: &Sender<Post>) -> Result<(), Lost> {
    catch_up(ctx, desk, posts)?;
    let mut quiet = false;
    let mut expected: Option<u64> = None;
    loop {
        let Some(event) = next(ws)? else {
            if quiet {
                return Err(Lost::Quiet);
            }
            quiet = true;
            ws.send(Message::Ping(Vec::new().into()))
                .map_err(Lost::Send)?;
            continue;
        };
        quiet = false;
        if let Some(seq) = event["seq"].as_u64() {
            if expected.is_some_and(|e| e != seq) {
                // Events were lost on the way: fetch what they carried.
                log::warn(format_args!("event sequence jumped to {seq}; catching up"));
                catch_up(ctx, desk, posts)?;
            }
            expected = Some(seq + 1);
        }
        if event["event"] == "reaction_added" {
            match event["data"]["reaction"]
                .as_str()
                .map(serde_json::from_str::<Reaction>)
            {
                Some(Ok(reaction)) => desk.reaction(&reaction),
                Some(Err(e)) => log::warn(format_args!("a reaction not understood: {e}")),
                None => {}
            }
            continue;
        }
        if event["event"] != "posted" {
            continue;
        }
        let Some(text) = event["data"]["post"].as_str() else {
            continue;
        };
        match serde_json::from_str::<Post>(text) {
            Ok(post) if post.channel_id == ctx.channel() => {
                posts.send(post).map_err(|_| Lost::WorkerStopped)?;
            }
            Ok(_) => {}
            Err(e) => log::warn(format_args!("a posted event not understood: {e}")),
        }
    }
}
