//! `fake-mattermost`: a stand-in for a Mattermost server with the REST API v4 subset and the
//! WebSocket events gatewayd uses, in Mattermost's shapes (posts, users, errors, event
//! envelopes with `seq`, `hello` after authentication). Test controls live under `/fake/`:
//!
//! - `POST /fake/inject` `{"user_id","username","message","root_id"?,"bot"?}`: a user posts.
//! - `POST /fake/react` `{"user_id","post_id","emoji_name"}`: a user reacts to a post.
//! - `POST /fake/drop`: every WebSocket connection is cut (no close frame), as a network loss.
//! - `POST /fake/fail` `{"after": K, "posts": N}`: after K more posts succeed, the next N
//!   `POST /api/v4/posts` fail with a 500.
//! - `GET /fake/state`: every post and reaction, how often each post was edited, typing
//!   calls, connections.
//!
//! Prints `listening on 127.0.0.1:PORT` first on stdout.

mod ws;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Parser;
use serde_json::{Value, json};

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
    #[arg(long, default_value = "botuserid00000000000000000")]
    bot_user_id: String,
    /// The one channel every post lands in unless the post names another.
    #[arg(long, default_value = "channelid00000000000000000")]
    channel: String,
}

/// Everything the server holds.
#[derive(Debug, Default)]
pub struct State {
    pub token: String,
    pub bot: String,
    pub channel: String,
    pub posts: Vec<Value>,
    pub reactions: Vec<Value>,
    pub edits: HashMap<String, u64>,
    pub typing: u64,
    /// Posts to let through, then posts to refuse (`/fake/fail`).
    pub fail_after: u64,
    pub fail_posts: u64,
    /// Bumped by `/fake/drop`: connections of an older generation close.
    pub generation: u64,
    /// Live, authenticated connections: a sender of event texts for each.
    pub sockets: Vec<std::sync::mpsc::Sender<Value>>,
    pub connections: u64,
    next_id: u64,
    last_ms: i64,
}

pub type Shared = Arc<Mutex<State>>;

/// Mattermost's limit on a post's message, in characters (runes).
const MAX_MESSAGE: usize = 16_383;

pub fn lock(s: &Shared) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl State {
    /// Strictly increasing milliseconds, as ids and `create_at` order posts.
    fn now(&mut self) -> i64 {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.last_ms = ms.max(self.last_ms + 1);
        self.last_ms
    }

    fn new_post(&mut self, user: &str, input: &Value, sender: &str) -> Value {
        self.next_id += 1;
        let now = self.now();
        let id = format!("post{:022}", self.next_id);
        let mut post = json!({
            "id": id, "create_at": now, "update_at": now, "edit_at": 0, "delete_at": 0,
            "is_pinned": false, "user_id": user,
            "channel_id": input["channel_id"].as_str().unwrap_or(&self.channel),
            "root_id": input["root_id"].as_str().unwrap_or(""), "original_id": "",
            "message": input["message"].as_str().unwrap_or(""), "type": "",
            "props": input.get("props").cloned().unwrap_or_else(|| json!({})),
            "hashtags": "", "pending_post_id": "", "reply_count": 0, "metadata": {}
        });
        if input["bot"].as_bool() == Some(true) {
            post["props"]["from_bot"] = json!("true");
        }
        self.posts.push(post.clone());
        let event = json!({
            "event": "posted",
            "data": {
                "channel_display_name": "Town Square", "channel_name": "town-square",
                "channel_type": "O", "post": post.to_string(),
                "sender_name": format!("@{sender}"), "set_online": true, "team_id": "teamid"
            },
            "broadcast": {"omit_users": null, "user_id": "", "channel_id": post["channel_id"],
                          "team_id": "", "connection_id": "", "omit_connection_id": ""}
        });
        self.broadcast(&event);
        post
    }

    fn broadcast(&mut self, event: &Value) {
        self.sockets.retain(|s| s.send(event.clone()).is_ok());
    }

    /// `user` reacts to a post with `emoji`; `None` when there is no such post.
    fn react(&mut self, user: &str, post_id: &str, emoji: &str) -> Option<Value> {
        let channel = self.posts.iter().find(|p| p["id"] == post_id)?["channel_id"].clone();
        let now = self.now();
        let reaction = json!({
            "user_id": user, "post_id": post_id, "emoji_name": emoji, "create_at": now,
            "update_at": now, "delete_at": 0, "remote_id": "", "channel_id": channel
        });
        self.reactions.push(reaction.clone());
        // As in Mattermost, a reaction makes the post "updated" (it comes back in `since`).
        if let Some(p) = self.posts.iter_mut().find(|p| p["id"] == post_id) {
            p["update_at"] = json!(now);
        }
        let event = json!({
            "event": "reaction_added",
            "data": {"reaction": reaction.to_string()},
            "broadcast": {"omit_users": null, "user_id": "", "channel_id": channel,
                          "team_id": "", "connection_id": "", "omit_connection_id": ""}
        });
        self.broadcast(&event);
        Some(reaction)
    }
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
    let state: Shared = Arc::new(Mutex::new(State {
        token: cli.token,
        bot: cli.bot_user_id,
        channel: cli.channel,
        ..State::default()
    }));
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
struct Request {
    method: String,
    path: String,
    query: String,
    auth: String,
    ws_key: Option<String>,
    body: Value,
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

fn serve(stream: TcpStream, state: &Shared) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(req) = read_request(&mut reader)? {
        if req.path == "/api/v4/websocket"
            && let Some(key) = req.ws_key
        {
            return ws::serve(out, &key, state);
        }
        let (status, body) = route(&req, state);
        let text = body.to_string();
        let reason = if status < 300 { "OK" } else { "Error" };
        write!(
            out,
            "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{text}",
            text.len()
        )?;
        out.flush()?;
    }
    Ok(())
}

/// Mattermost's error body.
fn error(status: u16, id: &str, message: &str) -> (u16, Value) {
    let body = json!({"id": id, "message": message, "detailed_error": "",
                      "request_id": "fakerequestid", "status_code": status});
    (status, body)
}

fn route(req: &Request, state: &Shared) -> (u16, Value) {
    let mut s = lock(state);
    let segs: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
    if segs.first() == Some(&"fake") {
        return match (req.method.as_str(), segs.get(1).copied()) {
            ("POST", Some("inject")) => {
                let user = req.body["user_id"].as_str().unwrap_or("someone").to_owned();
                let name = req.body["username"]
                    .as_str()
                    .unwrap_or("someone")
                    .to_owned();
                (201, s.new_post(&user, &req.body, &name))
            }
            ("POST", Some("react")) => {
                let field = |k: &str| req.body[k].as_str().unwrap_or_default().to_owned();
                let (user, post, emoji) = (field("user_id"), field("post_id"), field("emoji_name"));
                match s.react(&user, &post, &emoji) {
                    Some(reaction) => (200, reaction),
                    None => error(404, "app.post.get.app_error", "Unable to get the post."),
                }
            }
            ("POST", Some("fail")) => {
                s.fail_after = req.body["after"].as_u64().unwrap_or(0);
                s.fail_posts = req.body["posts"].as_u64().unwrap_or(0);
                (200, json!({"status": "OK"}))
            }
            ("POST", Some("drop")) => {
                s.generation += 1;
                s.sockets.clear();
                (200, json!({"status": "OK"}))
            }
            ("GET", Some("state")) => (
                200,
                json!({"posts": s.posts, "reactions": s.reactions, "edits": s.edits, "typing": s.typing,
                       "connections": s.connections, "live": s.sockets.len()}),
            ),
            _ => error(
                404,
                "api.context.404.app_error",
                "Sorry, we could not find the page.",
            ),
        };
    }
    if req.auth != format!("Bearer {}", s.token) {
        return error(
            401,
            "api.context.session_expired.app_error",
            "Invalid or expired session, please login again.",
        );
    }
    let bot = s.bot.clone();
    match (req.method.as_str(), &segs[..]) {
        ("GET", ["api", "v4", "users", "me"]) => (
            200,
            json!({
                "id": bot, "username": "boxmaker", "is_bot": true, "roles": "system_user",
                "create_at": 0, "update_at": 0, "delete_at": 0, "email": "", "nickname": "",
                "first_name": "", "last_name": "", "locale": "en"
            }),
        ),
        ("POST", ["api", "v4", "posts"]) => {
            if s.fail_after > 0 {
                s.fail_after -= 1;
            } else if s.fail_posts > 0 {
                s.fail_posts -= 1;
                return error(500, "app.post.save.app_error", "Unable to save the post.");
            }
            if req.body["message"]
                .as_str()
                .is_some_and(|m| m.chars().count() > MAX_MESSAGE)
            {
                return error(
                    400,
                    "model.post.is_valid.message_length.app_error",
                    "Invalid Message property for post.",
                );
            }
            if req.body["channel_id"].as_str().is_none() {
                return error(
                    400,
                    "api.context.invalid_body_param.app_error",
                    "Invalid or missing post in request body.",
                );
            }
            (201, s.new_post(&bot, &req.body, "boxmaker"))
        }
        ("GET", ["api", "v4", "posts", id]) => match s.posts.iter().find(|p| p["id"] == *id) {
            Some(post) => (200, post.clone()),
            None => error(404, "app.post.get.app_error", "Unable to get the post."),
        },
        ("GET", ["api", "v4", "posts", id, "reactions"]) => {
            let on: Vec<&Value> = s.reactions.iter().filter(|r| r["post_id"] == *id).collect();
            (200, json!(on))
        }
        ("PUT", ["api", "v4", "posts", id, "patch"]) => {
            let now = s.now();
            let Some(post) = s.posts.iter_mut().find(|p| p["id"] == *id) else {
                return error(404, "app.post.get.app_error", "Unable to get the post.");
            };
            if let Some(m) = req.body["message"].as_str() {
                if m.chars().count() > MAX_MESSAGE {
                    return error(
                        400,
                        "model.post.is_valid.message_length.app_error",
                        "Invalid Message property for post.",
                    );
                }
                post["message"] = json!(m);
            }
            if let Some(p) = req.body.get("props") {
                post["props"] = p.clone();
            }
            post["edit_at"] = json!(now);
            post["update_at"] = json!(now);
            let post = post.clone();
            *s.edits.entry((*id).to_owned()).or_default() += 1;
            (200, post)
        }
        ("GET", ["api", "v4", "channels", channel, "posts"]) => {
            let since: i64 = req
                .query
                .split('&')
                .find_map(|kv| kv.strip_prefix("since="))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            // As Mattermost: posts updated after `since`, and the roots of their threads.
            let changed: Vec<&Value> = s
                .posts
                .iter()
                .filter(|p| p["channel_id"] == *channel && p["update_at"].as_i64() > Some(since))
                .collect();
            let hits: Vec<&Value> = s
                .posts
                .iter()
                .filter(|p| {
                    changed
                        .iter()
                        .any(|c| c["id"] == p["id"] || c["root_id"] == p["id"])
                })
                .collect();
            let order: Vec<&Value> = hits.iter().rev().map(|p| &p["id"]).collect();
            let posts: serde_json::Map<String, Value> = hits
                .iter()
                .map(|p| {
                    (
                        p["id"].as_str().unwrap_or_default().to_owned(),
                        (*p).clone(),
                    )
                })
                .collect();
            (
                200,
                json!({"order": order, "posts": posts, "next_post_id": "",
                         "prev_post_id": "", "has_next": false}),
            )
        }
        ("POST", ["api", "v4", "users", _, "typing"]) => {
            s.typing += 1;
            (200, json!({"status": "OK"}))
        }
        _ => error(
            404,
            "api.context.404.app_error",
            "Sorry, we could not find the page.",
        ),
    }
}
