//! fake-llama-server: a scripted stand-in for llama.cpp's `llama-server`, for boxmaker's stack
//! tests and NixOS VM tests. It answers on loopback TCP in the real server's shapes (checked
//! against llama.cpp's own server by the real-peer tests in
//! `tests/fake-llama-server/realpeer.rs`) and simulates the prompt cache, so a client that
//! rewrites history sees `timings.cache_n` drop.
//!
//! # Endpoints
//!
//! - `GET /health`: `{"status":"ok"}`, or 503 `unavailable_error` "Loading model" while
//!   loading (every llama-server endpoint answers that 503 while loading).
//! - `GET /props`: `default_generation_settings.n_ctx`, `total_slots`, `model_path`,
//!   `chat_template`, `build_info`... from the script.
//! - `GET /slots`, `POST /slots/N?action=erase`, `GET /v1/models`.
//! - `POST /v1/chat/completions`: non-streaming and streaming (`"stream": true`, with or
//!   without `stream_options.include_usage`), `id_slot` pinning, `cache_prompt`, `max_tokens`.
//! - Test controls, not in llama-server: `GET /fake/requests` (the last 1000 chat requests,
//!   with the rule that answered, the slot, `cache_n`, `prompt_n` and the rendered prompt) and
//!   `POST /fake/loading` with `{"loading": true|false|null}` (null: back to the script's
//!   `loading_ms`).
//!
//! Errors have llama-server's shape, `{"error":{"code":N,"message":"...","type":"..."}}`:
//! 400 for a body that is not JSON or lacks `messages`, 500 for a message without a role,
//! 500 for a tool call whose arguments are not JSON (the real server's words, `nljson`),
//! 400 `exceed_context_size_error` (with `n_prompt_tokens` and `n_ctx`) when the prompt does
//! not fit a slot, 404 for unknown paths. Unknown request fields are ignored.
//!
//! # The script (`--script PATH`, TOML)
//!
//! ```toml
//! [server]                 # every key optional; defaults shown
//! n_ctx = 4096             # context of each slot, in fake tokens
//! total_slots = 1
//! model = "/models/fake-llama-server.gguf"
//! loading_ms = 0           # 503 "Loading model" for this long after start
//! reasoning = true         # default false: the "template" has reasoning, answers may carry it
//! chunk_chars = 4          # automatic stream split: pieces of this many characters
//! build_info = "b0-fake-llama-server"
//! metrics = false          # serve /metrics (llama-server --metrics)
//! tools = true             # /props reports a template with tool support (chat_template_caps)
//!
//! [[rule]]                 # rules are tried in order; the first that matches answers
//! name = "weather"         # optional label for /fake/requests
//! max_uses = 1             # optional: answer at most this many requests
//! [rule.match]             # all given conditions must hold; none given: always matches
//! turn = 1                 # number of user messages in the request
//! user_contains = "weather"        # the last user message contains this
//! user_words = ["weather", "rain"]  # ... has one of these words (whole, any case)
//! user_equals = "What is the weather?"
//! tool_result_contains = "sunny"   # the last message is a tool result containing this ("": any)
//! last_tool = "get_weather"        # the most recent tool call in the history is to this function
//! history_contains = "Paris"       # some message's text (any role) contains this
//! [rule.answer]
//! text = "Looking it up."         # `content`; {last_user} stands for the last user text
//! chunks = ["Look", "ing it up."]  # explicit stream split (must add up to `text`)
//! reasoning = "The user wants weather."           # needs server.reasoning = true
//! tool_calls = [{ name = "get_weather", arguments = '{"city": "Paris"}' }]  # `id` optional
//! finish_reason = "stop"   # override: stop, length or tool_calls (else as fits the reply)
//! delay_ms = 0             # before answering (the slot is busy meanwhile)
//! chunk_delay_ms = 0       # between stream events
//! error = { status = 500, message = "boom" }      # answer this HTTP error instead (`type` optional)
//! malformed_after = 2      # after 2 stream events, one line that is not JSON, then go on
//! truncate_after = 3       # after 3 stream events, close the connection mid-body
//!
//! [default]                # the answer when no rule matches (same keys as [rule.answer])
//! text = "I have no rule for that."
//! ```
//!
//! Unknown keys are errors. Without a script every request gets a fixed text. For a
//! non-streaming request, `truncate_after` sends half the body and closes the connection, and
//! `malformed_after` sends half the body as the whole (invalid JSON).
//!
//! # The prompt-cache simulation
//!
//! Each request's `messages` and `tools` render with a fixed ChatML-like template (see
//! [`render`]) into one text, cut into fake tokens by [`tokens`]. Each slot keeps the tokens
//! its last request left: the prompt's, then the reply's as generated (all but the end
//! token). `timings.cache_n` is the number of tokens the new prompt shares with them from
//! the start (at most the prompt's tokens minus one, as the real server always evaluates the
//! last one again), `prompt_n` the rest; `cache_prompt: false` gives `cache_n = 0`. A client
//! that replays each reply exactly (content, `reasoning_content`, tool call names and
//! argument strings) sees `cache_n` reach the previous turn's whole text; one that rewrites
//! history sees it drop; a reply generated with `split_token` misses from its odd token on.

pub mod api;
pub mod chat;
pub mod completion;
pub mod http;
pub mod metrics;
pub mod nljson;
pub mod render;
pub mod request;
pub mod respond;
pub mod script;
pub mod server;
pub mod slots;
pub mod state;
pub mod tokens;

use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;

pub use script::Script;

/// Command line of the `fake-llama-server` binary.
#[derive(Debug, clap::Parser)]
#[command(
    name = "fake-llama-server",
    version,
    about = "A scripted stand-in for llama-server"
)]
pub struct Cli {
    /// Loopback address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The script (TOML); without one every request gets a fixed text.
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Check the script and exit.
    #[arg(long)]
    pub check: bool,
    /// Exit when standard input ends: whoever holds the other end of the pipe (`bxctl
    /// dev`) takes the fake down with it, however it dies.
    #[arg(long)]
    pub exit_on_eof: bool,
}

/// Runs the binary: loads the script, binds, prints `listening on ADDR` as the first line of
/// `out` (flushed, so a test can read the port), then serves until the process ends.
pub fn run(cli: &Cli, out: &mut impl Write) -> Result<(), String> {
    let script = match &cli.script {
        Some(path) => Script::load(path).map_err(|e| e.to_string())?,
        None => Script::default(),
    };
    if cli.check {
        writeln!(out, "script ok: {} rule(s)", script.rules.len()).map_err(|e| e.to_string())?;
        return Ok(());
    }
    if !cli.listen.ip().is_loopback() {
        return Err(format!(
            "--listen {}: fake-llama-server listens on loopback addresses only",
            cli.listen
        ));
    }
    let listener = TcpListener::bind(cli.listen)
        .map_err(|e| format!("cannot listen on {}: {e}", cli.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    writeln!(out, "listening on {addr}")
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    if cli.exit_on_eof {
        std::thread::Builder::new()
            .name("stdin".into())
            .spawn(|| {
                let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
                std::process::exit(0);
            })
            .map_err(|e| format!("cannot watch standard input: {e}"))?;
    }
    server::serve(&listener, script).map_err(|e: io::Error| e.to_string())
}
