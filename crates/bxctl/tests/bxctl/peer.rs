//! A home for bxctl with stand-ins for brokerd and loopd: each answers one connection with
//! frames the test chose, as a compromised (or merely quoting) peer could.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::thread::JoinHandle;

use proto::{Envelope, Message, Timestamp};

/// One of every class of character that must never reach the terminal raw: ESC and a CSI
/// (clear the screen), an OSC ended by BEL, CR, other C0 and C1 controls (NUL, BS, DEL,
/// the C1 CSI), the bidi embeddings, overrides and isolates, the zero-width characters, a
/// newline, a fake escape, and after the newline a line that looks like one of bxctl's.
pub const HOSTILE: &str = "a\u{1b}[2J\u{1b}]0;owned\u{7}\rb\u{0}\u{8}\u{7f}\u{9b}\
    \u{202a}\u{202b}\u{202c}\u{202d}\u{202e}\u{2066}\u{2067}\u{2068}\u{2069}\
    \u{200b}\u{200c}\u{200d}\u{2060}\u{feff}\\u{41}\n  [call 4 waits for your approval]";

/// [`HOSTILE`] as a single-line field shows it.
pub const ESCAPED: &str = "a\\u{001b}[2J\\u{001b}]0;owned\\u{0007}\\u{000d}b\\u{0000}\\u{0008}\
    \\u{007f}\\u{009b}\\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{202e}\\u{2066}\\u{2067}\\u{2068}\
    \\u{2069}\\u{200b}\\u{200c}\\u{200d}\\u{2060}\\u{feff}\\u{005c}u{41}\\u{000a}  \
    [call 4 waits for your approval]";

/// [`HOSTILE`] as multi-line text shows it: every line marked.
pub const BLOCK: &str = "| a\\u{001b}[2J\\u{001b}]0;owned\\u{0007}\\u{000d}b\\u{0000}\\u{0008}\
    \\u{007f}\\u{009b}\\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{202e}\\u{2066}\\u{2067}\\u{2068}\
    \\u{2069}\\u{200b}\\u{200c}\\u{200d}\\u{2060}\\u{feff}\\u{005c}u{41}\n\
    |   [call 4 waits for your approval]\n";

/// A forged audit line, after a newline in a record's field.
pub const FORGED: &str = "\n#0 2026-09-17T08:05:00.000Z session s-1 call 1 read_file \
    \"{}\" [private] ALLOWED by grant notes-read";

/// 2026-09-17T08:05:00.000Z.
pub fn time() -> Timestamp {
    Timestamp::from_millis(1_789_632_300_000).expect("time")
}

/// Whether `text` holds a character that is not printable text (a newline is allowed).
pub fn raw(text: &str) -> bool {
    text.chars().any(|c| c != '\n' && inert::hidden(c))
}

#[derive(Debug)]
pub struct Home {
    pub root: PathBuf,
}

impl Home {
    pub fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!("bx-inert-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in [
            "home/audit",
            "grants",
            "run/loop-broker",
            "run/admin-broker",
            "run/chat-loop",
            "run/chat-broker",
        ] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        let uid = nix::unistd::getuid().as_raw();
        let r = root.display();
        std::fs::write(
            root.join("config.toml"),
            format!(
                "home = \"{r}/home\"\ngrants = \"{r}/grants\"\n[sockets]\n\
                 loop_broker = \"{r}/run/loop-broker\"\nadmin_broker = \"{r}/run/admin-broker\"\n\
                 chat_loop = \"{r}/run/chat-loop\"\nchat_broker = \"{r}/run/chat-broker\"\n\
                 [peers]\nloopd = {{ uid = {uid} }}\nadmin = {{ uid = {uid} }}\n"
            ),
        )
        .expect("config");
        Self { root }
    }

    pub fn bxctl(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_bxctl"))
            .arg("--config")
            .arg(self.root.join("config.toml"))
            .args(args)
            .output()
            .expect("bxctl")
    }

    pub fn brokerd(&self) -> PathBuf {
        self.root.join("run/admin-broker/broker.sock")
    }

    /// brokerd's chat side, where `bxctl chat` registers the owner's words.
    pub fn chat_broker(&self) -> PathBuf {
        self.root.join("run/chat-broker/broker.sock")
    }

    pub fn loopd(&self) -> PathBuf {
        self.root.join("run/chat-loop/loop.sock")
    }

    /// Answers one request on `sock` with `answers`, all but the last partial; the thread
    /// returns the request.
    pub fn answer(&self, sock: &Path, answers: Vec<Message>) -> JoinHandle<Message> {
        let listener = UnixListener::bind(sock).expect("bind");
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("accept");
            let request = proto::read_envelope(&mut stream).expect("request");
            let last = answers.len().saturating_sub(1);
            for (i, msg) in answers.into_iter().enumerate() {
                let env = if i == last {
                    Envelope::last(request.id, msg)
                } else {
                    Envelope::partial(request.id, msg)
                };
                proto::write_envelope(&mut stream, &env).expect("answer");
            }
            request.msg
        })
    }

    /// Answers one request on each of `answers.len()` connections on `sock`, in turn; the
    /// thread returns the requests.
    pub fn answer_each(&self, sock: &Path, answers: Vec<Message>) -> JoinHandle<Vec<Message>> {
        let listener = UnixListener::bind(sock).expect("bind");
        std::thread::spawn(move || {
            let mut requests = Vec::new();
            for msg in answers {
                let (mut stream, _) = listener.accept().expect("accept");
                let request = proto::read_envelope(&mut stream).expect("request");
                proto::write_envelope(&mut stream, &Envelope::last(request.id, msg))
                    .expect("answer");
                requests.push(request.msg);
            }
            requests
        })
    }

    /// Answers one request on `sock` with a frame of `body`, whatever it holds.
    pub fn answer_raw(&self, sock: &Path, body: Vec<u8>) -> JoinHandle<()> {
        let listener = UnixListener::bind(sock).expect("bind");
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().expect("accept");
            proto::read_envelope(&mut stream).expect("request");
            proto::write_frame(&mut stream, &body).expect("answer");
        })
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `out`'s standard output, after asserting it succeeded.
pub fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf8")
}
