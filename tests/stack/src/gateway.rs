//! The Mattermost side of the stack: a fake Mattermost server and gatewayd.

use std::process::Command;
use std::time::Duration;

use crate::{Daemon, Home, bin};

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
        let (fake, addr) = self.spawn_peer(Command::new(bin("fake-mattermost")), "fake-mm.log");
        std::fs::write(self.root.join("mm-token"), "bot-token\n").expect("token");
        self.append_config(&format!(
            "[gateway]\nserver = \"http://{addr}\"\ntoken_file = \"{r}/mm-token\"\n\
             owners = {owners:?}\nchannel = \"channelid00000000000000000\"\n{extra}\n",
            r = self.root.display()
        ));
        let gw = Gateway {
            addr,
            daemons: vec![self.daemon("gatewayd"), fake],
        };
        gw.wait("the WebSocket connected", |s| s["live"].as_u64() >= Some(1));
        gw
    }
}

/// One HTTP/1.1 request with a JSON body to `addr`; the JSON answer.
pub fn http(addr: &str, method: &str, path: &str, body: &serde_json::Value) -> serde_json::Value {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let body = body.to_string();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    std::io::Write::write_all(&mut s, req.as_bytes()).expect("request");
    let mut reader = std::io::BufReader::new(s);
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
    serde_json::from_slice(&buf).expect("json")
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

    /// `POST /fake/react`: `user` reacts to `post` with `emoji`.
    pub fn react(&self, user: &str, post: &str, emoji: &str) -> serde_json::Value {
        let body = serde_json::json!({"user_id": user, "post_id": post, "emoji_name": emoji});
        http(&self.addr, "POST", "/fake/react", &body)
    }

    /// `POST /fake/inject`: `user` posts `message` (in `root`'s thread when given).
    pub fn post(&self, user: &str, message: &str, root: Option<&str>) -> serde_json::Value {
        let mut body = serde_json::json!({"user_id": user, "username": user, "message": message});
        if let Some(r) = root {
            body["root_id"] = r.into();
        }
        http(&self.addr, "POST", "/fake/inject", &body)
    }

    /// `GET /fake/state`: posts, edits, typing calls, connections.
    pub fn state(&self) -> serde_json::Value {
        http(&self.addr, "GET", "/fake/state", &serde_json::Value::Null)
    }

    /// Waits (up to 20 s) until `done` holds for the fake server's state.
    pub fn wait(&self, what: &str, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let mut last = serde_json::Value::Null;
        let found = crate::poll_until(Duration::from_secs(20), || {
            last = self.state();
            done(&last).then(|| last.clone())
        });
        found.unwrap_or_else(|| panic!("never: {what}: {last:#}\n{}", self.daemons[0].log()))
    }
}
