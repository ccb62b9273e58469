//! llama.cpp's own server (xllamacpp with SmolLM2-135M, started by `tests/realpeer/serve.py`)
//! for the real-model session, and the endpoints the measures read beside the chat: the
//! rendered prompt (`/apply-template`), its tokens (`/tokenize`), a token list's text
//! (`/detokenize`) and the tokens a slot holds (`/slots/N?action=save`, read back from the
//! saved file). Only the harness and the real-peer tier reach these; inferproxy never
//! forwards them.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{Daemon, Home};

/// The real server on a loopback port, killed on drop.
#[derive(Debug)]
pub struct RealServer {
    pub api: RealApi,
    pub daemon: Daemon,
}

/// How to reach the real server's endpoints (cheap to clone into a thread).
#[derive(Debug, Clone)]
pub struct RealApi {
    /// `host:port`.
    pub addr: String,
    slots_dir: PathBuf,
}

/// One token of `/tokenize`: its id and the bytes of its piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub id: i64,
    pub bytes: Vec<u8>,
}

fn env_path(name: &str) -> PathBuf {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => panic!(
            "{name} is not set. The real-model session needs llama.cpp's server from PyPI: \
             run `eval \"$(tests/realpeer/setup.sh)\"` and export BOXMAKER_REALPEER_PYTHON and \
             BOXMAKER_REALPEER_MODEL (tests/gate realpeer does all of this)"
        ),
    }
}

impl RealServer {
    /// One slot of `n_ctx` tokens, the repository's ChatML tool template, slot saving into
    /// a directory under `home`.
    pub fn start(home: &Home, n_ctx: u32) -> Self {
        Self::start_with(home, n_ctx, &[])
    }

    /// As [`RealServer::start`], with more of serve.py's flags (`--greedy`).
    pub fn start_with(home: &Home, n_ctx: u32, extra: &[&str]) -> Self {
        let serve = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../realpeer/serve.py");
        let slots_dir = home.root.join("slots");
        std::fs::create_dir_all(&slots_dir).expect("slots dir");
        let mut cmd = Command::new(env_path("BOXMAKER_REALPEER_PYTHON"));
        cmd.arg(serve)
            .arg("--model")
            .arg(env_path("BOXMAKER_REALPEER_MODEL"))
            .args(["--port", "0", "--slots", "1", "--n-ctx", &n_ctx.to_string()])
            .arg("--slot-save-path")
            // llama.cpp joins this and the file name without a separator.
            .arg(format!("{}/", slots_dir.display()))
            .args(extra)
            // serve.py runs until its stdin closes: the pipe lives as long as the child.
            .stdin(Stdio::piped());
        let (daemon, addr) = home.spawn_peer(cmd, "real-server.log");
        Self {
            api: RealApi { addr, slots_dir },
            daemon,
        }
    }
}

impl RealApi {
    /// One request on a fresh connection; the status and the JSON body.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let stream = TcpStream::connect(&self.addr).expect("connect to the real server");
        stream
            .set_read_timeout(Some(Duration::from_secs(300)))
            .expect("timeout");
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let headers = [
            ("Content-Type", "application/json"),
            ("Connection", "close"),
        ];
        let resp =
            strict_http::request(stream, method, path, &headers, &bytes).expect("real server");
        let status = resp.status;
        let body = resp.read_body(64 * 1024 * 1024).expect("real server body");
        let value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        (status, value)
    }

    fn post_ok(&self, path: &str, body: &Value) -> Value {
        let (status, value) = self.call("POST", path, Some(body));
        assert_eq!(status, 200, "POST {path}: {value}");
        value
    }

    /// The prompt the server renders for a chat request (its messages and tools).
    pub fn render(&self, request: &Value) -> String {
        let mut body = json!({ "messages": request["messages"] });
        if let Some(tools) = request.get("tools") {
            body["tools"] = tools.clone();
        }
        let v = self.post_ok("/apply-template", &body);
        v["prompt"].as_str().expect("a rendered prompt").to_owned()
    }

    /// The server's tokens of `text`, special tokens parsed as in a chat prompt.
    pub fn tokenize(&self, text: &str) -> Vec<Token> {
        let v = self.post_ok(
            "/tokenize",
            &json!({ "content": text, "with_pieces": true, "parse_special": true }),
        );
        v["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .map(|t| Token {
                id: t["id"].as_i64().expect("token id"),
                // A piece that is not whole UTF-8 comes as its bytes.
                bytes: match &t["piece"] {
                    Value::String(s) => s.as_bytes().to_vec(),
                    Value::Array(a) => a
                        .iter()
                        .map(|b| u8::try_from(b.as_u64().expect("byte")).expect("byte"))
                        .collect(),
                    other => panic!("a piece that is neither text nor bytes: {other}"),
                },
            })
            .collect()
    }

    /// The text of `tokens`.
    pub fn detokenize(&self, tokens: &[i64]) -> String {
        let v = self.post_ok("/detokenize", &json!({ "tokens": tokens }));
        v["content"].as_str().expect("content").to_owned()
    }

    /// The tokens slot `slot` holds now. llama.cpp's slot file (format version 4) starts
    /// with the magic, the version, two words of the sequence header, the sequence id and
    /// the token count, then the tokens as little-endian i32; the count is checked against
    /// what the save reported.
    pub fn slot_tokens(&self, slot: u32) -> Vec<i64> {
        let name = "held.bin";
        let saved = self.post_ok(
            &format!("/slots/{slot}?action=save"),
            &json!({ "filename": name }),
        );
        let n = usize::try_from(saved["n_saved"].as_u64().expect("n_saved")).expect("count");
        let bytes = std::fs::read(self.slots_dir.join(name)).expect("the saved slot");
        let word = |i: usize| {
            let at = i * 4;
            let four: [u8; 4] = bytes[at..at + 4].try_into().expect("4 bytes");
            four
        };
        let word_u = |i| u32::from_le_bytes(word(i));
        assert_eq!(word_u(1), 4, "llama.cpp slot file version");
        assert_eq!(
            usize::try_from(word_u(5)).expect("count"),
            n,
            "token count in the slot file"
        );
        let tokens = (0..n)
            .map(|i| i64::from(i32::from_le_bytes(word(6 + i))))
            .collect::<Vec<_>>();
        let _ = std::fs::remove_file(self.slots_dir.join(name));
        tokens
    }
}
