//! fake-mattermost against Mattermost's documented shapes: the real binary on loopback,
//! driven through its REST API and WebSocket as gatewayd and a person's client drive a
//! Mattermost server. `fixtures/` holds the shapes, each written by hand from the file of
//! Mattermost's API description or server source it names.

mod behaviour;
mod shapes;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tungstenite::Message;

pub const BOT: (&str, &str) = ("botkm8ecqs6ua9xrndy7w1ft5h", "bot-token");
pub const OWNER: (&str, &str) = ("ownerkp1dx4oy7wqbsm3e9t6ua", "owner-token");
pub const STRANGER: (&str, &str) = ("strangerq8ek1ycmw4pxduob7t", "stranger-token");
pub const CHANNEL: &str = "chan4mqx8ekdy1bwpu7s9ront3";
pub const OFF_TOPIC: &str = "offtopicqy8ek1mcwd4pxnub7s";

/// The fake on a free loopback port, killed on drop.
#[derive(Debug)]
pub struct Fake {
    child: Child,
    pub addr: String,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start() -> Fake {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-mattermost"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("fake-mattermost runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("address")
        .to_owned();
    Fake { child, addr }
}

impl Fake {
    /// One request with `token` (none when empty), through ureq as gatewayd makes it; the
    /// status and the JSON body.
    pub fn call(&self, method: &str, path: &str, token: &str, body: &Value) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("http://{}{path}", self.addr);
        let auth = format!("Bearer {token}");
        let with = |h: &str| {
            if token.is_empty() {
                None
            } else {
                Some(h.to_owned())
            }
        };
        let result = match method {
            "GET" | "DELETE" => {
                let mut req = if method == "GET" {
                    agent.get(&url)
                } else {
                    agent.delete(&url)
                };
                if let Some(a) = with(&auth) {
                    req = req.header("Authorization", a);
                }
                req.call()
            }
            _ => {
                let mut req = if method == "PUT" {
                    agent.put(&url)
                } else {
                    agent.post(&url)
                };
                if let Some(a) = with(&auth) {
                    req = req.header("Authorization", a);
                }
                let text = if body.is_null() {
                    String::new()
                } else {
                    body.to_string()
                };
                req.content_type("application/json").send(text.as_str())
            }
        };
        let mut resp = result.expect("an HTTP answer");
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().expect("body");
        (status, serde_json::from_str(&text).expect("json body"))
    }

    /// `user` posts `message` in the channel (in `root`'s thread when not empty).
    pub fn post(&self, user: (&str, &str), message: &str, root: &str) -> Value {
        let body = json!({"channel_id": CHANNEL, "root_id": root, "message": message});
        let (status, post) = self.call("POST", "/api/v4/posts", user.1, &body);
        assert_eq!(status, 201, "{post}");
        post
    }

    /// A WebSocket authenticated as `user`, past its `hello` (returned).
    pub fn socket(&self, user: (&str, &str)) -> (Socket, Value) {
        let (ws, _) = tungstenite::connect(format!("ws://{}/api/v4/websocket", self.addr))
            .expect("websocket");
        if let tungstenite::stream::MaybeTlsStream::Plain(s) = ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
        }
        let mut socket = Socket { ws, next: 1 };
        let answer = socket.request("authentication_challenge", json!({"token": user.1}));
        assert_eq!(answer["status"], "OK", "{answer}");
        let hello = socket.event();
        (socket, hello)
    }
}

#[derive(Debug)]
pub struct Socket {
    ws: tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>,
    next: u64,
}

impl Socket {
    /// Sends a request with the next `seq`; its answer (the first message with `seq_reply`).
    pub fn request(&mut self, action: &str, data: Value) -> Value {
        let seq = self.next;
        self.next += 1;
        let req = json!({"seq": seq, "action": action, "data": data});
        self.ws.send(Message::text(req.to_string())).expect("send");
        let answer = self.read();
        assert_eq!(answer["seq_reply"], seq, "{answer}");
        answer
    }

    /// The next message, parsed.
    pub fn read(&mut self) -> Value {
        match self.ws.read().expect("a message within 5 s") {
            Message::Text(t) => serde_json::from_str(t.as_str()).expect("json"),
            other => panic!("not text: {other:?}"),
        }
    }

    /// The next event (a message with `event`).
    pub fn event(&mut self) -> Value {
        let m = self.read();
        assert!(m.get("event").is_some(), "not an event: {m}");
        m
    }

    /// Whether an event arrives within `wait` (the socket's deadline is set to it).
    pub fn quiet_for(&mut self, wait: Duration) -> Option<Value> {
        if let tungstenite::stream::MaybeTlsStream::Plain(s) = self.ws.get_ref() {
            s.set_read_timeout(Some(wait)).expect("timeout");
        }
        let got = self.ws.read().ok().and_then(|m| match m {
            Message::Text(t) => serde_json::from_str(t.as_str()).ok(),
            _ => None,
        });
        if let tungstenite::stream::MaybeTlsStream::Plain(s) = self.ws.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
        }
        got
    }
}

/// A fixture: its source file and shape.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fake-mattermost/fixtures/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let f: Value = serde_json::from_str(&text).expect("fixture json");
    assert!(
        f["source"].as_str().is_some_and(|s| !s.is_empty()),
        "{name} names no source"
    );
    f
}

/// Where `actual` departs from `shape` (empty when it conforms): every key of an object in
/// the shape is there with a value of the same JSON type (an integer for a number); a string
/// `=X` must be exactly `X`, and `*` is any value; each element of an array conforms to the shape's first; `null`
/// admits `null` only.
pub fn departures(actual: &Value, shape: &Value, at: &str) -> Vec<String> {
    match (shape, actual) {
        (Value::Object(want), Value::Object(got)) => want
            .iter()
            .flat_map(|(k, v)| match got.get(k) {
                Some(a) => departures(a, v, &format!("{at}.{k}")),
                None => vec![format!("{at}.{k} is missing")],
            })
            .collect(),
        (Value::Array(want), Value::Array(got)) => match want.first() {
            Some(w) => got
                .iter()
                .enumerate()
                .flat_map(|(i, a)| departures(a, w, &format!("{at}[{i}]")))
                .collect(),
            None => Vec::new(),
        },
        (Value::String(w), _) if w == "*" => Vec::new(),
        (Value::String(w), Value::String(a)) => match w.strip_prefix('=') {
            Some(exact) if exact != a => vec![format!("{at} is {a:?}, not {exact:?}")],
            _ => Vec::new(),
        },
        (Value::Number(_), Value::Number(a)) if a.is_i64() || a.is_u64() => Vec::new(),
        (Value::Bool(_), Value::Bool(_)) | (Value::Null, Value::Null) => Vec::new(),
        _ => vec![format!(
            "{at} is {actual}, which is not of the type of {shape}"
        )],
    }
}

/// Asserts that `actual` has the fixture's shape (and its status, when the fixture gives one
/// and `status` is given).
pub fn assert_shape(name: &str, status: Option<u16>, actual: &Value) {
    let f = fixture(name);
    if let (Some(want), Some(got)) = (f["status"].as_u64(), status) {
        assert_eq!(u64::from(got), want, "{name} ({}): status", f["source"]);
    }
    let off = departures(actual, &f["shape"], name);
    assert!(
        off.is_empty(),
        "{name} ({}):\n{}\n{actual:#}",
        f["source"],
        off.join("\n")
    );
}

/// An event's `data.KEY`, a JSON text as Mattermost sends it, parsed.
pub fn embedded(event: &Value, key: &str) -> Value {
    serde_json::from_str(event["data"][key].as_str().expect("a JSON text")).expect("embedded json")
}
