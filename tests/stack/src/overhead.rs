//! What the whole stack costs a turn (issue 28's measure): the real-model session of the
//! real-peer tier (SmolLM2-135M on llama.cpp's server, a session resumed from a log of tool
//! exchanges, a compaction on the way) through `bxctl chat -m` per turn, and so through
//! loopd, inferproxy (witnessing every answer) and brokerd (every tool call decided, run and
//! audited), beside the very same requests sent straight to the server by a minimal client.
//!
//! Both run in the same run, interleaved: the server has two slots; the stack's session is
//! pinned to slot 0; after each turn, the chat completions it made (recorded by a relay in
//! front of the server, [`Recorder`], which keeps their bytes) are sent again at once, byte
//! for byte but for `"id_slot":1`, to slot 1. Sampling is greedy and the host-memory prompt
//! cache shared by slots is off (`--cache-ram 0`), so each slot sees the same prompts, reuses
//! only what it computed itself and generates the same tokens: the work is the same, and the
//! table shows it (prompt tokens processed and tokens predicted on each side). The server
//! computes with one thread: on a machine shared with other work, llama.cpp's threads that
//! wait by spinning make a request many times slower whenever anything else runs, and one
//! thread leaves a core to the stack's processes and to the rest. The stack's
//! time per turn is bxctl's wall time, its process start included; per request, the relay's
//! time from the request's head to the answer's last byte.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use proto::SessionId;
use serde_json::Value;

use crate::real_server::RealServer;
use crate::real_session::{CORE, NOTES, message, prepared_log};
use crate::recorder::Recorder;
use crate::{Home, read_grant};

/// The context of each slot.
pub const N_CTX: u32 = 2048;

/// One chat completion, both ways.
#[derive(Debug, Clone)]
pub struct Row {
    pub turn: usize,
    /// The relay's time for the stack's request.
    pub stack: Duration,
    /// The minimal client's time for the same request.
    pub direct: Duration,
    /// (prompt tokens processed, tokens predicted): the stack's, the direct one's.
    pub stack_work: (u64, u64),
    pub direct_work: (u64, u64),
}

/// One owner's turn: bxctl's wall time, and the direct client's for its requests.
#[derive(Debug, Clone)]
pub struct Turn {
    pub turn: usize,
    pub bxctl: Duration,
    pub direct: Duration,
    pub requests: usize,
}

#[derive(Debug)]
pub struct Measured {
    pub rows: Vec<Row>,
    pub turns: Vec<Turn>,
}

fn work(events: &[Value]) -> (u64, u64) {
    let t = events.iter().rev().find_map(|e| e.get("timings"));
    let n = |k: &str| t.and_then(|t| t[k].as_u64()).unwrap_or(0);
    (n("prompt_n"), n("predicted_n"))
}

/// Sends `body` to `addr` as a chat completion, reads the whole answer; its time and events.
fn direct(addr: &str, body: &[u8]) -> (Duration, Vec<Value>) {
    let started = Instant::now();
    let stream = TcpStream::connect(addr).expect("connect to the real server");
    let headers = [
        ("Content-Type", "application/json"),
        ("Connection", "close"),
    ];
    let resp = strict_http::request(stream, "POST", "/v1/chat/completions", &headers, body)
        .expect("the real server's answer");
    assert_eq!(resp.status, 200, "direct request");
    let mut text = Vec::new();
    let mut b = resp.body;
    b.read_to_end(&mut text).expect("the answer's body");
    let took = started.elapsed();
    let events = String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    (took, events)
}

/// The same request for slot 1.
fn on_slot_1(body: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    assert_eq!(
        text.matches("\"id_slot\":0").count(),
        1,
        "the stack's request is not pinned to slot 0: {text}"
    );
    text.replacen("\"id_slot\":0", "\"id_slot\":1", 1)
        .into_bytes()
}

/// Runs `turns` turns both ways.
pub fn run(turns: usize, max_tokens: u32) -> Measured {
    let home = Home::new("overhead", "");
    let notes = home.files("notes", &NOTES);
    let notes_text = notes.display().to_string();
    home.files("home/memory", &[("core.md", CORE)]);
    home.write_grant("notes-read", &read_grant("auto", &notes, ""));
    home.write_grant(
        "notes-list",
        &read_grant("auto", &notes, "").replace("read_file", "list_dir"),
    );
    let server = RealServer::start_with(
        &home,
        N_CTX,
        &[
            "--greedy",
            "--slots",
            "2",
            "--cache-ram",
            "0",
            "--threads",
            "1",
        ],
    );
    let recorder = Recorder::start(server.api.addr.clone(), Vec::new);
    let id = SessionId::new("s-realpeer-overhead").expect("id");
    let dir = home.root.join(format!("home/sessions/{id}"));
    std::fs::create_dir_all(&dir).expect("session dir");
    let log: String = prepared_log(&id, &notes_text)
        .iter()
        .map(|r| serde_json::to_string(r).expect("record") + "\n")
        .collect();
    let path = dir.join("0.jsonl");
    std::fs::write(&path, log).expect("prepared log");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    let _agent = home.start_stack(
        &recorder.addr,
        &format!("max_tokens = {max_tokens}\ncompact_percent = 70\n"),
    );
    let mut measured = Measured {
        rows: Vec::new(),
        turns: Vec::new(),
    };
    for turn in 1..=turns {
        let before = recorder.exchanges().len();
        let started = Instant::now();
        let out = home.bxctl(&[
            "chat",
            "--session",
            id.as_str(),
            "-m",
            &message(turn, &notes_text),
        ]);
        let bxctl = started.elapsed();
        // 0, or 1 for an answer cut at max_tokens: either way the turn ran.
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "turn {turn}: {out:?}"
        );
        let made: Vec<_> = recorder.exchanges().into_iter().skip(before).collect();
        let mut direct_total = Duration::ZERO;
        for e in &made {
            let (took, events) = direct(&server.api.addr, &on_slot_1(&e.body));
            direct_total += took;
            measured.rows.push(Row {
                turn,
                stack: e.elapsed,
                direct: took,
                stack_work: work(&e.events),
                direct_work: work(&events),
            });
        }
        measured.turns.push(Turn {
            turn,
            bxctl,
            direct: direct_total,
            requests: made.len(),
        });
    }
    measured
}

impl Measured {
    pub fn stack_total(&self) -> Duration {
        self.turns.iter().map(|t| t.bxctl).sum()
    }

    pub fn direct_total(&self) -> Duration {
        self.turns.iter().map(|t| t.direct).sum()
    }

    /// The stack's total over the direct one.
    pub fn ratio(&self) -> f64 {
        self.stack_total().as_secs_f64() / self.direct_total().as_secs_f64()
    }

    /// Requests whose two sides did not do the same work.
    pub fn unequal(&self) -> Vec<usize> {
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.stack_work != r.direct_work)
            .map(|(i, _)| i + 1)
            .collect()
    }

    pub fn table(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut out =
            String::from("req turn  stack_ms direct_ms  ratio  prompt_n(s/d)  predicted_n(s/d)\n");
        for (i, r) in self.rows.iter().enumerate() {
            out.push_str(&format!(
                "{:>3} {:>4} {:>9.0} {:>9.0} {:>6.3} {:>6}/{:<6} {:>7}/{:<7}\n",
                i + 1,
                r.turn,
                ms(r.stack),
                ms(r.direct),
                r.stack.as_secs_f64() / r.direct.as_secs_f64(),
                r.stack_work.0,
                r.direct_work.0,
                r.stack_work.1,
                r.direct_work.1,
            ));
        }
        out.push_str("turn requests  bxctl_ms direct_ms  ratio\n");
        for t in &self.turns {
            out.push_str(&format!(
                "{:>4} {:>8} {:>9.0} {:>9.0} {:>6.3}\n",
                t.turn,
                t.requests,
                ms(t.bxctl),
                ms(t.direct),
                t.bxctl.as_secs_f64() / t.direct.as_secs_f64()
            ));
        }
        out.push_str(&format!(
            "total: the stack {:.1} s, direct {:.1} s: {:.3} times ({} requests, {} with unequal work)\n",
            self.stack_total().as_secs_f64(),
            self.direct_total().as_secs_f64(),
            self.ratio(),
            self.rows.len(),
            self.unequal().len(),
        ));
        out
    }
}
