//! The real-model session (issue 12 point 6): loopd, inferproxy and brokerd against
//! llama.cpp's own server with SmolLM2-135M, one slot of 2560 tokens, resuming a session
//! whose log already holds tool exchanges (the tiny model rarely starts tool calls on its
//! own), for a number of turns that includes a compaction. Every chat completion passes the
//! [`Recorder`], which keeps what the slot held before it; [`measure`] then computes, per
//! request, the figures of the measures:
//!
//! - `wasted`: `prompt_n` minus the tokens of the rendered prompt (`/apply-template`,
//!   `/tokenize`) after its longest common text prefix with what the slot held (the
//!   previous prompt plus the text generated for it);
//! - `residue`: the part of that waste caused by the replayed answer itself, when the tokens
//!   the model sampled are not the server's tokenization of their own text (`}` `}` where
//!   the tokenizer makes `}}`): the chat endpoint re-tokenizes the replayed text, and no
//!   interface that keeps rendering and parsing in the server avoids that
//!   (docs/decisions.md L19).
//!
//! The bench `session` prints the table; the real-peer tier asserts the bound on it.

use std::time::{Duration, Instant};

use proto::chat::{ChatEvent, TurnEnd};
use proto::{Epoch, Hash32, LogRecord, SessionId, Timestamp, ToolCall};

use crate::real_server::{RealApi, RealServer};
use crate::recorder::{Exchange, Recorder};
use crate::{Agent, Home, read_grant};

/// The context of the one slot, as the session had it.
// 2560, not the 2048: the hands' three tools (issue 25) put about 400 more tokens in
// every prompt, and at 2048 a summary request of the seeded epoch no longer fit (the real
// server answered 400). The session keeps the shape: it compacts from its second turn.
pub const N_CTX: u32 = 2560;

/// What one run is made of.
#[derive(Debug, Clone)]
pub struct Plan {
    pub turns: usize,
    /// `loop.max_tokens`: uncapped, one such session took 6 minutes.
    pub max_tokens: u32,
    pub compact_percent: u8,
    /// The server samples at temperature 0 (`serve.py --greedy`): the same run, the same
    /// answers.
    pub greedy: bool,
}

impl Default for Plan {
    fn default() -> Self {
        Self {
            turns: 20,
            max_tokens: 64,
            compact_percent: 70,
            greedy: false,
        }
    }
}

/// The figures of one chat completion.
#[derive(Debug, Clone)]
pub struct Request {
    /// The owner's turn it belongs to (1-based).
    pub turn: usize,
    /// The epoch's summary request rather than a turn's.
    pub summary: bool,
    pub status: u16,
    pub prompt_tokens: u64,
    pub cache_n: u64,
    /// `prompt_n`: the tokens the server processed.
    pub processed: u64,
    /// Tokens of the rendered prompt after its common text prefix with the slot's.
    pub new: u64,
    pub wasted: i64,
    /// The part of `wasted` that lies in the replayed answer, whose sampled tokens are not
    /// the tokenizer's own split of its text (0 when they are).
    pub residue: u64,
    pub prompt_ms: f64,
    pub finish: String,
}

/// A whole run: its requests, turn ends and times.
#[derive(Debug, Clone)]
pub struct Run {
    pub requests: Vec<Request>,
    pub ends: Vec<TurnEnd>,
    pub compactions: usize,
    pub wall: Duration,
}

impl Run {
    pub fn prefill_ms(&self, summary: bool) -> f64 {
        self.requests
            .iter()
            .filter(|r| !summary || r.summary)
            .map(|r| r.prompt_ms)
            .fold(0.0, |a, b| a + b)
    }

    /// The table, one line per request.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "req turn kind    prompt cache_n processed   new wasted residue prompt_ms finish\n",
        );
        for (i, r) in self.requests.iter().enumerate() {
            out.push_str(&format!(
                "{:>3} {:>4} {:<7} {:>6} {:>7} {:>9} {:>5} {:>6} {:>7} {:>9.0} {}\n",
                i + 1,
                r.turn,
                if r.summary { "summary" } else { "turn" },
                r.prompt_tokens,
                r.cache_n,
                r.processed,
                r.new,
                r.wasted,
                r.residue,
                r.prompt_ms,
                r.finish,
            ));
        }
        let processed = |summary: bool| -> u64 {
            self.requests
                .iter()
                .filter(|r| !summary || r.summary)
                .map(|r| r.processed)
                .sum()
        };
        let calls = self
            .requests
            .iter()
            .filter(|r| r.finish == "tool_calls")
            .count();
        out.push_str(&format!(
            "{} requests ({calls} answered with tool calls), {} compaction(s); processed {} \
             prompt tokens, {} of them in summary requests; prefill {:.1} s, {:.1} s of it \
             in summary requests; session {:.1} s\n",
            self.requests.len(),
            self.compactions,
            processed(false),
            processed(true),
            self.prefill_ms(false) / 1000.0,
            self.prefill_ms(true) / 1000.0,
            self.wall.as_secs_f64(),
        ));
        out
    }
}

pub const NOTES: [(&str, &str); 4] = [
    (
        "todo.md",
        "- buy milk\n- call the plumber on Tuesday\n- renew the passport\n",
    ),
    ("shopping.md", "- eggs\n- bread\n- apples\n- coffee\n"),
    (
        "ideas.md",
        "- a garden bench from old pallets\n- learn the accordion\n",
    ),
    (
        "trip.md",
        "Train to Lyon on the 14th, 9:12 from platform 3. Hotel Bellecour.\n",
    ),
];

/// The owner's core memory for the session: like the few-shot weather conversation of the
/// reference transcripts, it tells the tiny model to answer with tools.
pub const CORE: &str = "You are a helpful assistant. Always answer questions about the owner's \
notes by calling read_file or list_dir with the full path.";

/// The session's log before the run: four tool exchanges on the notes directory.
pub fn prepared_log(id: &SessionId, notes: &str) -> Vec<LogRecord> {
    let t = Timestamp::now();
    let user = |content: String| LogRecord::User { time: t, content };
    let call = |n: u64, name: &str, path: String| LogRecord::Assistant {
        time: t,
        content: None,
        reasoning_content: None,
        tool_calls: vec![ToolCall {
            id: format!("prepared{n}"),
            name: name.into(),
            arguments: format!("{{\"path\": \"{path}\"}}"),
        }],
        witness: None,
    };
    let result = |n: u64, content: &str| LogRecord::ToolResult {
        time: t,
        call: proto::CallId(n),
        tool_call_id: format!("prepared{n}"),
        content: content.into(),
        class: proto::DataClass::Private,
        untrusted: false,
        truncated: false,
        outcome: None,
    };
    let answer = |content: &str| LogRecord::Assistant {
        time: t,
        content: Some(content.into()),
        reasoning_content: None,
        tool_calls: Vec::new(),
        witness: None,
    };
    vec![
        LogRecord::SessionStart {
            time: t,
            session: id.clone(),
            epoch: Epoch(0),
            slot: 0,
            baseline: Hash32::digest(CORE.as_bytes()),
        },
        user(format!("What is in my notes folder {notes}?")),
        call(1, "list_dir", notes.to_owned()),
        result(1, "ideas.md\nshopping.md\ntodo.md\ntrip.md"),
        answer("Your notes folder has ideas.md, shopping.md, todo.md and trip.md."),
        user(format!("And {notes}/todo.md?")),
        call(2, "read_file", format!("{notes}/todo.md")),
        result(2, NOTES[0].1),
        answer("Your to-do list: buy milk, call the plumber on Tuesday, renew the passport."),
        user(format!("And {notes}/shopping.md?")),
        call(3, "read_file", format!("{notes}/shopping.md")),
        result(3, NOTES[1].1),
        answer("You need eggs, bread, apples and coffee."),
        user(format!("And {notes}/ideas.md?")),
        call(4, "read_file", format!("{notes}/ideas.md")),
        result(4, NOTES[2].1),
        answer("A garden bench from old pallets, and learning the accordion."),
    ]
}

/// The owner's messages, in turn: mostly file requests phrased as in the prepared log
/// (which makes the model call a tool), now and then a question about what it read.
pub fn message(turn: usize, notes: &str) -> String {
    let files = ["trip.md", "todo.md", "shopping.md", "ideas.md"];
    let file = files[turn % files.len()];
    match turn % 5 {
        4 => "What should I do first?".to_owned(),
        3 => format!("What is in my notes folder {notes}?"),
        _ => format!("And {notes}/{file}?"),
    }
}

/// A finished session: the server is still up so that [`Session::measure`] can ask it.
#[derive(Debug)]
pub struct Session {
    pub run: Run,
    pub server: RealServer,
    recorder: Recorder,
    /// Per recorded request: its turn, and whether it is the summary request.
    marks: Vec<(usize, bool)>,
    pub home: Home,
}

/// Runs the session; its requests are measured afterwards.
pub fn run(plan: &Plan) -> Session {
    let home = Home::new("real-session", "");
    let notes = home.files("notes", &NOTES);
    let notes_text = notes.display().to_string();
    home.files("home/memory", &[("core.md", CORE)]);
    home.write_grant("notes-read", &read_grant("auto", &notes, ""));
    home.write_grant(
        "notes-list",
        &read_grant("auto", &notes, "").replace("read_file", "list_dir"),
    );
    let server = if plan.greedy {
        RealServer::start_with(&home, N_CTX, &["--greedy"])
    } else {
        RealServer::start(&home, N_CTX)
    };
    let api = server.api.clone();
    let recorder = Recorder::start(api.addr.clone(), move || api.slot_tokens(0));
    let id = SessionId::new("s-realpeer-session").expect("id");
    let dir = home.root.join(format!("home/sessions/{id}"));
    std::fs::create_dir_all(&dir).expect("session dir");
    let log: String = prepared_log(&id, &notes_text)
        .iter()
        .map(|r| serde_json::to_string(r).expect("record") + "\n")
        .collect();
    let path = dir.join("0.jsonl");
    std::fs::write(&path, log).expect("prepared log");
    // loopd refuses a log others may read or write.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    let agent: Agent = home.start_stack(
        &recorder.addr,
        &format!(
            "max_tokens = {}\ncompact_percent = {}\n",
            plan.max_tokens, plan.compact_percent
        ),
    );
    let started = Instant::now();
    let mut marks = Vec::new();
    let mut ends = Vec::new();
    let mut compactions = 0;
    for turn in 1..=plan.turns {
        let before = recorder.exchanges().len();
        let t = agent.chat(Some(&id), &message(turn, &notes_text));
        let compacted = t
            .events
            .iter()
            .any(|e| matches!(e, ChatEvent::Compacted { .. }));
        compactions += usize::from(compacted);
        let after = recorder.exchanges().len();
        for i in before..after {
            marks.push((turn, compacted && i == before));
        }
        ends.push(t.reply.end);
    }
    let run = Run {
        requests: Vec::new(),
        ends,
        compactions,
        wall: started.elapsed(),
    };
    drop(agent);
    Session {
        run,
        server,
        recorder,
        marks,
        home,
    }
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The figures of one exchange; `answer_start` is where the previous answer's tokens begin
/// in what the slot held (the previous prompt's length).
fn figures(api: &RealApi, e: &Exchange, answer_start: usize) -> (u64, i64, u64, u64) {
    let timings = e.timings().cloned().unwrap_or_default();
    let n = |k: &str| timings[k].as_u64().unwrap_or(0);
    let (cache_n, processed) = (n("cache_n"), n("prompt_n"));
    let rendered = api.render(&e.request);
    let tokens = api.tokenize(&rendered);
    let held_text = if e.held.is_empty() {
        String::new()
    } else {
        api.detokenize(&e.held)
    };
    let common = common_prefix(rendered.as_bytes(), held_text.as_bytes());
    // Tokens lying wholly inside the common text.
    let mut covered = 0usize;
    let mut inside = 0usize;
    for t in &tokens {
        if covered + t.bytes.len() > common {
            break;
        }
        covered += t.bytes.len();
        inside += 1;
    }
    let new = (tokens.len() - inside) as u64;
    let wasted = processed as i64 - new as i64;
    // Where the slot's tokens and the prompt's part.
    let same = tokens
        .iter()
        .zip(&e.held)
        .take_while(|(t, h)| t.id == **h)
        .count();
    let answer = &e.held[answer_start.min(e.held.len())..];
    let canonical = !answer.is_empty() && {
        let again = api.tokenize(&api.detokenize(answer));
        again.iter().map(|t| t.id).eq(answer.iter().copied())
    };
    let residue = if !answer.is_empty() && !canonical && same + 1 >= answer_start {
        inside.saturating_sub(same) as u64
    } else {
        0
    };
    (new, wasted, residue, cache_n + processed)
}

impl Session {
    /// Measures every recorded request (after the session: measuring never runs while a
    /// request does).
    pub fn measure(&mut self) {
        let api = &self.server.api;
        let mut answer_start = 0usize;
        for (e, &(turn, summary)) in self.recorder.exchanges().iter().zip(&self.marks) {
            let timings = e.timings().cloned().unwrap_or_default();
            let (new, wasted, residue, prompt_tokens) = figures(api, e, answer_start);
            self.run.requests.push(Request {
                turn,
                summary,
                status: e.status,
                prompt_tokens,
                cache_n: timings["cache_n"].as_u64().unwrap_or(0),
                processed: timings["prompt_n"].as_u64().unwrap_or(0),
                new,
                wasted,
                residue,
                prompt_ms: timings["prompt_ms"].as_f64().unwrap_or(0.0),
                finish: e.finish_reason().unwrap_or("-").to_owned(),
            });
            answer_start = usize::try_from(prompt_tokens).unwrap_or(usize::MAX);
        }
    }
}
