//! The test harness: the real `inferproxy` binary under an imitated systemd (a test
//! NOTIFY_SOCKET that must see READY=1), killed on drop, and a scripted upstream HTTP
//! server on 127.0.0.1:0 standing in for llama-server.

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strict_http::{Body, RequestHead};

/// How long any single step of a test may wait before it counts as a hang.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// A temporary directory, removed on drop.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("bx-infer-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("loop-infer")).expect("mkdir");
        std::fs::create_dir_all(dir.join("infer-broker")).expect("mkdir");
        Self(dir)
    }

    /// The uid this test runs as (the owner of what it creates).
    pub fn uid(&self) -> u32 {
        std::fs::metadata(&self.0).expect("stat").uid()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A config for a proxy in `dir` to `upstream`, with `infer` extra lines for `[infer]`.
pub fn config(dir: &TempDir, loopd_uid: u32, upstream: &str, infer: &str) -> PathBuf {
    let d = dir.0.display();
    let text = format!(
        "home = \"{d}/home\"\ngrants = \"{d}/grants\"\n\
         [sockets]\nloop_broker = \"{d}/loop-broker\"\nadmin_broker = \"{d}/admin-broker\"\n\
         loop_infer = \"{d}/loop-infer\"\ninfer_broker = \"{d}/infer-broker\"\n\
         [peers]\nloopd = {{ uid = {loopd_uid} }}\nadmin = {{ uid = {loopd_uid} }}\n\
         [infer]\nupstream = \"{upstream}\"\n{infer}\n"
    );
    let path = dir.0.join("config.toml");
    std::fs::write(&path, text).expect("config");
    path
}

/// A running inferproxy, killed on drop.
#[derive(Debug)]
pub struct Proxy {
    child: Child,
    pub sock: PathBuf,
    stderr: PathBuf,
    /// The stand-in for brokerd's witness.sock.
    pub witness: Witness,
    _dir: TempDir,
}

impl Proxy {
    /// Starts inferproxy for `upstream_port` with extra `[infer]` lines.
    pub fn start(upstream_port: u16, infer: &str) -> Self {
        let dir = TempDir::new("proxy");
        let uid = dir.uid();
        Self::start_in(
            dir,
            uid,
            &format!("http://127.0.0.1:{upstream_port}"),
            infer,
        )
    }

    pub fn start_in(dir: TempDir, loopd_uid: u32, upstream: &str, infer: &str) -> Self {
        Self::start_witnessed(dir, loopd_uid, upstream, infer, Ack::Now)
    }

    /// [`Proxy::start_in`] with a witness stand-in that acknowledges as `ack` says.
    pub fn start_witnessed(
        dir: TempDir,
        loopd_uid: u32,
        upstream: &str,
        infer: &str,
        ack: Ack,
    ) -> Self {
        let config = config(&dir, loopd_uid, upstream, infer);
        let witness = Witness::start(&dir.0.join("infer-broker/witness.sock"), ack);
        let notify = dir.0.join("notify.sock");
        let stderr = dir.0.join("stderr.log");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_inferproxy"));
        cmd.arg("--config")
            .arg(&config)
            .env_remove("LISTEN_FDS")
            .env_remove("LISTEN_PID")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"));
        match supervise::spawn_ready(&mut cmd, &notify, PATIENCE) {
            Ok((child, _)) => Self {
                child,
                sock: dir.0.join("loop-infer/infer.sock"),
                stderr,
                witness,
                _dir: dir,
            },
            Err(why) => panic!(
                "inferproxy: {why}: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            ),
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub fn connect(&self) -> UnixStream {
        let s = UnixStream::connect(&self.sock).expect("connect infer.sock");
        s.set_read_timeout(Some(PATIENCE)).expect("timeout");
        s
    }

    /// A witnessable chat request ([`chat_body`]) on a new connection.
    pub fn chat(&self) -> Result<strict_http::Response<UnixStream>, strict_http::HttpError> {
        strict_http::request(
            self.connect(),
            "POST",
            "/v1/chat/completions",
            &[],
            &chat_body(),
        )
    }

    /// Sends `bytes` as they are and returns the whole answer.
    pub fn raw(&self, bytes: &[u8]) -> Vec<u8> {
        let mut s = self.connect();
        s.write_all(bytes).expect("send");
        let mut out = Vec::new();
        s.read_to_end(&mut out).expect("answer");
        out
    }

    /// One request through the client loopd uses; the answer's status, head and body.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> (u16, strict_http::Headers, Vec<u8>) {
        let resp = strict_http::request(self.connect(), method, path, &[], body).expect("request");
        let (status, headers) = (resp.status, resp.headers.clone());
        (status, headers, resp.read_body(1 << 30).expect("body"))
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the upstream received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub head: RequestHead,
    pub body: Vec<u8>,
}

type Handler = dyn Fn(&Seen, &mut TcpStream) + Send + Sync;

/// A scripted llama-server stand-in: each connection's request is parsed, reported on
/// `seen`, and answered by the handler.
pub struct Upstream {
    pub port: u16,
    pub seen: Receiver<Seen>,
}

impl Upstream {
    pub fn start(handler: impl Fn(&Seen, &mut TcpStream) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind upstream");
        let port = listener.local_addr().expect("addr").port();
        let (tx, seen) = mpsc::channel();
        let handler: Arc<Handler> = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (tx, handler) = (tx.clone(), handler.clone());
                std::thread::spawn(move || serve_one(stream, &tx, &*handler));
            }
        });
        Self { port, seen }
    }

    /// The next request the upstream saw.
    pub fn next(&self) -> Seen {
        self.seen
            .recv_timeout(PATIENCE)
            .expect("upstream saw a request")
    }

    /// Asserts the upstream saw nothing (more).
    pub fn saw_nothing(&self) {
        std::thread::sleep(Duration::from_millis(100));
        if let Ok(seen) = self.seen.try_recv() {
            panic!("upstream should not have been asked: {:?}", seen.head);
        }
    }
}

fn serve_one(mut stream: TcpStream, tx: &Sender<Seen>, handler: &Handler) {
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let Ok(head) = strict_http::read_request_head(&mut reader) else {
        return;
    };
    let mut body = Vec::new();
    Body::new(&mut reader, head.framing, Some(1 << 30))
        .expect("body framing")
        .read_to_end(&mut body)
        .expect("body");
    let seen = Seen { head, body };
    let _ = tx.send(seen.clone());
    handler(&seen, &mut stream);
}

/// A gate one side waits at until the other opens it (or the patience runs out).
#[derive(Clone)]
pub struct Gate(Arc<Mutex<Receiver<()>>>, Sender<()>);

impl Gate {
    pub fn new() -> Self {
        let (tx, rx) = mpsc::channel();
        Self(Arc::new(Mutex::new(rx)), tx)
    }

    pub fn open(&self) {
        let _ = self.1.send(());
    }

    /// Whether the gate was opened in time.
    pub fn wait(&self) -> bool {
        self.0.lock().expect("gate").recv_timeout(PATIENCE).is_ok()
    }
}

/// An upstream answer with a Content-Length body, as llama-server writes it.
pub fn answer(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nServer: llama.cpp\r\nAccess-Control-Allow-Origin: \r\n\
         Content-Type: {content_type}\r\nKeep-Alive: timeout=5, max=100\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The head of a streamed llama-server answer.
pub const STREAM_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nServer: llama.cpp\r\n\
    Access-Control-Allow-Origin: \r\nX-Accel-Buffering: no\r\n\
    Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\
    Keep-Alive: timeout=5, max=100\r\n\r\n";

/// One chunk of a chunked body.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A witnessable chat request, as loopd sends it: proto's messages and tools, streamed.
pub fn chat_body() -> Vec<u8> {
    chat_body_with(serde_json::json!({}))
}

/// [`chat_body`] with `extra` fields merged in at the top.
pub fn chat_body_with(extra: serde_json::Value) -> Vec<u8> {
    use proto::attest::ChatMessage;
    let messages = [
        ChatMessage::system("sys"),
        ChatMessage::user("What is 2+2?"),
    ];
    let mut body = serde_json::json!({
        "messages": messages.iter().map(ChatMessage::to_value).collect::<Vec<_>>(),
        "tools": proto::attest::definitions(),
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 64,
        "id_slot": 0,
        "cache_prompt": true,
    });
    if let (Some(b), serde_json::Value::Object(more)) = (body.as_object_mut(), extra) {
        b.extend(more);
    }
    serde_json::to_vec(&body).expect("body")
}

/// How the witness stand-in answers a report.
#[derive(Clone)]
pub enum Ack {
    /// At once.
    Now,
    /// Once the gate opens.
    After(Gate),
    /// Never (it reads the report and keeps the connection open).
    Never,
}

/// brokerd's witness.sock, stood in for: every report it receives, in order.
#[derive(Debug)]
pub struct Witness {
    pub reports: Receiver<proto::attest::WitnessReport>,
}

impl Witness {
    fn start(path: &std::path::Path, ack: Ack) -> Self {
        let listener = std::os::unix::net::UnixListener::bind(path).expect("bind witness.sock");
        let (tx, reports) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (tx, ack) = (tx.clone(), ack.clone());
                std::thread::spawn(move || {
                    let mut conn = daemon::conn::Conn::new(stream, PATIENCE, PATIENCE);
                    let Ok(env) = conn.read() else { return };
                    let proto::Message::WitnessReport(report) = env.msg else {
                        return;
                    };
                    let completion = report.completion.clone();
                    let _ = tx.send(report);
                    match ack {
                        Ack::Now => {}
                        Ack::After(gate) => {
                            gate.wait();
                        }
                        Ack::Never => {
                            std::thread::sleep(PATIENCE);
                            return;
                        }
                    }
                    let done = proto::attest::WitnessRecorded { completion };
                    let msg = proto::Message::WitnessRecorded(done);
                    let _ = conn.write(&proto::Envelope::last(env.id, msg));
                });
            }
        });
        Self { reports }
    }

    /// The next report.
    pub fn next(&self) -> proto::attest::WitnessReport {
        self.reports
            .recv_timeout(PATIENCE)
            .expect("a witness report")
    }
}
