//! The Mattermost side of the stack: a fake Mattermost server and gatewayd.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::{Daemon, Home, bin};

/// A Mattermost user of fake-mattermost (its defaults) and the token it posts and reacts
/// with through the real API.
#[derive(Debug, Clone, Copy)]
pub struct User {
    pub id: &'static str,
    pub token: &'static str,
}

/// The bot gatewayd runs as.
pub const BOT_USER: User = User {
    id: "botkm8ecqs6ua9xrndy7w1ft5h",
    token: "bot-token",
};
/// The bot's Mattermost user id.
pub const BOT: &str = BOT_USER.id;
/// The owner, in `[gateway] owners` when a test says so.
pub const OWNER: User = User {
    id: "ownerkp1dx4oy7wqbsm3e9t6ua",
    token: "owner-token",
};
/// Anyone else in the channel.
pub const STRANGER: User = User {
    id: "strangerq8ek1ycmw4pxduob7t",
    token: "stranger-token",
};
/// The channel gatewayd follows (fake-mattermost's Town Square).
pub const CHANNEL: &str = "chan4mqx8ekdy1bwpu7s9ront3";
/// Another channel the bot is a member of (fake-mattermost's Off-Topic): its posts reach
/// gatewayd's WebSocket too, as from a real server.
pub const OFF_TOPIC: &str = "offtopicqy8ek1mcwd4pxnub7s";

/// A fake Mattermost server and gatewayd on this home's stack (start the agent first).
#[derive(Debug)]
pub struct Gateway {
    /// The fake server's `host:port`.
    pub addr: String,
    pub daemons: Vec<Daemon>,
}

impl Home {
    /// Starts fake-mattermost, then gatewayd with `owners` and `extra` `[gateway]` lines.
    /// Start it before the agent: brokerd reads `[gateway]` at start.
    pub fn start_gateway(&self, owners: &[&str], extra: &str) -> Gateway {
        let (fake, addr) = self.fake_mattermost(owners, extra);
        let gw = Gateway {
            addr,
            daemons: vec![self.daemon("gatewayd"), fake],
        };
        gw.wait("the WebSocket connected", |s| s["live"].as_u64() >= Some(1));
        gw
    }

    /// Starts fake-mattermost and configures gatewayd for it (the `[gateway]` table, with
    /// `owners` and `extra` lines); returns it and its `host:port`.
    pub fn fake_mattermost(&self, owners: &[&str], extra: &str) -> (Daemon, String) {
        let (fake, addr) = self.spawn_peer(Command::new(bin("fake-mattermost")), "fake-mm.log");
        std::fs::write(self.root.join("mm-token"), "bot-token\n").expect("token");
        self.append_config(&format!(
            "[gateway]\nserver = \"http://{addr}\"\ntoken_file = \"{r}/mm-token\"\n\
             owners = {owners:?}\nchannel = \"{CHANNEL}\"\n{extra}\n",
            r = self.root.display()
        ));
        (fake, addr)
    }

    /// gatewayd's state file (threads, handled posts, approval posts).
    pub fn gateway_state_file(&self) -> PathBuf {
        self.root.join("home/gateway/state.json")
    }

    /// gatewayd's state file, parsed.
    pub fn gateway_state(&self) -> Value {
        let text = std::fs::read_to_string(self.gateway_state_file()).expect("state");
        serde_json::from_str(&text).expect("state json")
    }

    /// How many sessions loopd keeps (one per conversation).
    pub fn sessions(&self) -> usize {
        std::fs::read_dir(self.root.join("home/sessions"))
            .expect("sessions")
            .filter(|d| d.as_ref().is_ok_and(|d| d.path().is_dir()))
            .count()
    }
}

/// Every post in the fake server's `state`.
pub fn posts(state: &Value) -> Vec<Value> {
    state["posts"].as_array().expect("posts").clone()
}

/// A post's id.
pub fn post_id(post: &Value) -> String {
    post["id"].as_str().expect("post id").to_owned()
}

/// The bot's posts in the thread of `root`.
pub fn replies(state: &Value, root: &str) -> Vec<Value> {
    posts(state)
        .into_iter()
        .filter(|p| p["user_id"] == BOT && p["root_id"] == root)
        .collect()
}

/// The bot's posts in the thread of `root` whose message contains `text`.
pub fn replies_with(state: &Value, root: &str, text: &str) -> Vec<Value> {
    replies(state, root)
        .into_iter()
        .filter(|p| p["message"].as_str().is_some_and(|m| m.contains(text)))
        .collect()
}

/// One HTTP/1.1 request with a JSON body to `addr`; the JSON answer.
pub fn http(addr: &str, method: &str, path: &str, body: &Value) -> Value {
    http_as(addr, method, path, "", body).1
}

/// One HTTP/1.1 request with a JSON body, as the user of `token` (none when empty); the
/// status and the JSON answer.
pub fn http_as(addr: &str, method: &str, path: &str, token: &str, body: &Value) -> (u16, Value) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let body = body.to_string();
    let auth = if token.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {token}\r\n")
    };
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    std::io::Write::write_all(&mut s, req.as_bytes()).expect("request");
    let mut reader = std::io::BufReader::new(s);
    let mut status_line = String::new();
    std::io::BufRead::read_line(&mut reader, &mut status_line).expect("status");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    let mut length = 0;
    loop {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut reader, &mut line).expect("head");
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().expect("length");
        }
    }
    let mut buf = vec![0; length];
    std::io::Read::read_exact(&mut reader, &mut buf).expect("body");
    (status, serde_json::from_slice(&buf).expect("json"))
}

impl Gateway {
    /// Kills gatewayd (SIGKILL), runs `meanwhile`, starts it again and waits for its
    /// WebSocket.
    pub fn restart(&mut self, home: &Home, meanwhile: impl FnOnce(&Self)) {
        self.daemons[0].kill();
        meanwhile(self);
        let before = self.state()["connections"].as_u64().unwrap_or(0);
        self.daemons[0] = home.daemon("gatewayd");
        self.wait("the WebSocket connected again", |s| {
            s["connections"].as_u64() > Some(before)
        });
    }

    /// `user` reacts to `post` with `emoji` (`POST /api/v4/reactions`, with its own token).
    pub fn react(&self, user: User, post: &str, emoji: &str) -> Value {
        let body = serde_json::json!({"user_id": user.id, "post_id": post, "emoji_name": emoji});
        let (status, reaction) =
            http_as(&self.addr, "POST", "/api/v4/reactions", user.token, &body);
        assert_eq!(status, 201, "{reaction}");
        reaction
    }

    /// `user` posts `message` (in `root`'s thread when given) with `POST /api/v4/posts` and
    /// its own token; the new post's id.
    pub fn post(&self, user: User, message: &str, root: Option<&str>) -> String {
        self.post_in(CHANNEL, user, message, root)
    }

    /// [`Gateway::post`] in `channel`.
    pub fn post_in(&self, channel: &str, user: User, message: &str, root: Option<&str>) -> String {
        let body = serde_json::json!({"channel_id": channel, "root_id": root.unwrap_or(""),
                                      "message": message});
        let (status, post) = http_as(&self.addr, "POST", "/api/v4/posts", user.token, &body);
        assert_eq!(status, 201, "{post}");
        post_id(&post)
    }

    /// `user` edits its own post (`PUT /api/v4/posts/{id}/patch`).
    pub fn edit(&self, user: User, post: &str, message: &str) {
        let body = serde_json::json!({"message": message});
        let path = format!("/api/v4/posts/{post}/patch");
        let (status, edited) = http_as(&self.addr, "PUT", &path, user.token, &body);
        assert_eq!(status, 200, "{edited}");
    }

    /// `user` takes back its reaction
    /// (`DELETE /api/v4/users/{user}/posts/{post}/reactions/{emoji}`).
    pub fn unreact(&self, user: User, post: &str, emoji: &str) {
        let path = format!("/api/v4/users/{}/posts/{post}/reactions/{emoji}", user.id);
        let (status, body) = http_as(&self.addr, "DELETE", &path, user.token, &Value::Null);
        assert_eq!(status, 200, "{body}");
    }

    /// `user` is typing in the channel (`POST /api/v4/users/{id}/typing`).
    pub fn typing(&self, user: User, parent: &str) {
        let body = serde_json::json!({"channel_id": CHANNEL, "parent_id": parent});
        let path = format!("/api/v4/users/{}/typing", user.id);
        let (status, answer) = http_as(&self.addr, "POST", &path, user.token, &body);
        assert_eq!(status, 200, "{answer}");
    }

    /// `GET /fake/state`: posts, edits, typing calls, connections.
    pub fn state(&self) -> Value {
        http(&self.addr, "GET", "/fake/state", &Value::Null)
    }

    /// Waits (up to 20 s) until `done` holds for the fake server's state.
    pub fn wait(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let mut last = Value::Null;
        let found = crate::poll_until(Duration::from_secs(20), || {
            last = self.state();
            done(&last).then(|| last.clone())
        });
        found.unwrap_or_else(|| panic!("never: {what}: {last:#}\n{}", self.daemons[0].log()))
    }

    /// Waits until a bot reply in the thread of `root` contains `text`; the first such reply.
    pub fn wait_reply(&self, root: &str, text: &str) -> Value {
        let state = self.wait(&format!("{text:?} in the thread of {root}"), |s| {
            !replies_with(s, root, text).is_empty()
        });
        replies_with(&state, root, text).remove(0)
    }

    /// Waits until the message of post `id` satisfies `done` (an approval post edited to
    /// show its outcome); that post.
    pub fn wait_post(&self, what: &str, id: &str, done: impl Fn(&str) -> bool) -> Value {
        let find = |s: &Value| {
            posts(s)
                .into_iter()
                .find(|p| p["id"] == id && p["message"].as_str().is_some_and(&done))
        };
        let state = self.wait(what, |s| find(s).is_some());
        find(&state).expect("post")
    }
}
