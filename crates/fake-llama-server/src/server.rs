//! The accept loop, one thread per connection, and the routes.

use std::io::{self, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::api::{self, ApiError};
use crate::http::{self, ReadError};
use crate::script::{Answer, Script};
use crate::slots::Slots;

/// How long a kept-alive connection may sit idle (the real server's `timeout=5`).
const IDLE: Duration = Duration::from_secs(5);

/// How many requests `GET /fake/requests` remembers.
pub const LOG_ENTRIES: usize = 1000;

/// Everything the connections share.
#[derive(Debug)]
pub struct State {
    /// The script in force.
    pub script: Script,
    /// The slots and their cached texts.
    pub slots: Slots,
    started: Instant,
    loading: Mutex<Option<bool>>,
    uses: Mutex<Vec<u64>>,
    log: Mutex<Vec<Value>>,
    rng: Mutex<u64>,
    tasks: AtomicU64,
    default_answer: Answer,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl State {
    /// Fresh state for a script.
    pub fn new(script: Script) -> Self {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
            u64::try_from(d.as_nanos() & u128::from(u64::MAX)).unwrap_or(0)
        }) ^ (u64::from(std::process::id()) << 32)
            | 1;
        Self {
            slots: Slots::new(script.server.total_slots),
            uses: Mutex::new(vec![0; script.rules.len()]),
            default_answer: script
                .default
                .clone()
                .unwrap_or_else(Answer::builtin_default),
            script,
            started: Instant::now(),
            loading: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            rng: Mutex::new(seed),
            tasks: AtomicU64::new(0),
        }
    }

    /// Whether the server pretends to load its model.
    pub fn is_loading(&self) -> bool {
        lock(&self.loading).unwrap_or_else(|| {
            self.started.elapsed() < Duration::from_millis(self.script.server.loading_ms)
        })
    }

    /// Picks the answer for a conversation and counts the rule's use: (label, answer).
    pub fn pick(&self, messages: &[crate::render::Msg]) -> (String, &Answer) {
        let mut uses = lock(&self.uses);
        match self.script.pick(messages, &uses) {
            Some(i) => {
                uses[i] += 1;
                let rule = &self.script.rules[i];
                let label = rule
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("rule {}", i + 1));
                (label, &rule.answer)
            }
            None => ("default".to_owned(), &self.default_answer),
        }
    }

    /// A random 32-character alphanumeric id (xorshift64*; not for secrets).
    pub fn random_id(&self) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut state = lock(&self.rng);
        (0..32)
            .map(|_| {
                *state ^= *state >> 12;
                *state ^= *state << 25;
                *state ^= *state >> 27;
                let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32;
                let i = usize::try_from(r % ALPHABET.len() as u64).unwrap_or(0);
                char::from(ALPHABET[i])
            })
            .collect()
    }

    /// The next task number (as `/slots` reports `id_task`).
    pub fn next_task(&self) -> u64 {
        self.tasks.fetch_add(1, Ordering::Relaxed)
    }

    /// Appends to the request log (`GET /fake/requests`), which keeps the last
    /// [`LOG_ENTRIES`] requests.
    pub fn record(&self, entry: Value) {
        let mut log = lock(&self.log);
        if log.len() >= LOG_ENTRIES {
            log.remove(0);
        }
        log.push(entry);
    }
}

/// Serves `listener` until the process ends, one thread per connection.
pub fn serve(listener: &TcpListener, script: Script) -> io::Result<()> {
    let state = Arc::new(State::new(script));
    for conn in listener.incoming() {
        match conn {
            Ok(stream) => {
                let state = Arc::clone(&state);
                std::thread::spawn(move || connection(stream, &state));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
            Err(e) => {
                // Out of descriptors and the like: wait a little rather than spin.
                let _ = writeln!(io::stderr(), "fake-llama-server: accept: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    Ok(())
}

fn connection(stream: TcpStream, state: &State) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(IDLE));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    for served in 1..=http::MAX_REQUESTS {
        let request = match http::read_request(&mut reader, &mut writer) {
            Ok(request) => request,
            Err(ReadError::Closed | ReadError::Io(_)) => return,
            Err(ReadError::Bad(why)) => {
                let _ = send_error(&mut writer, &ApiError::invalid_request(&why));
                return;
            }
        };
        let keep = request.keep_alive && served < http::MAX_REQUESTS;
        match route(state, &request, &mut writer, keep) {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
    }
}

/// Sends a JSON body; error statuses close the connection. Returns whether it stays open.
pub fn send_json(w: &mut TcpStream, status: u16, body: &Value, keep: bool) -> io::Result<bool> {
    let keep = keep && status < 400;
    let bytes = body.to_string().into_bytes();
    http::write_response(w, status, "application/json; charset=utf-8", &bytes, keep)?;
    Ok(keep)
}

/// Sends an error in llama-server's shape and closes the connection.
pub fn send_error(w: &mut TcpStream, e: &ApiError) -> io::Result<bool> {
    send_json(w, e.status, &e.to_json(), false)
}

fn route(state: &State, req: &http::Request, w: &mut TcpStream, keep: bool) -> io::Result<bool> {
    let settings = &state.script.server;
    let method = req.method.as_str();
    let path = req.path.as_str();
    if let Some(control) = path.strip_prefix("/fake/") {
        return fake_control(state, method, control, &req.body, w, keep);
    }
    if state.is_loading() {
        return send_error(w, &ApiError::loading());
    }
    match (method, path) {
        ("GET", "/health" | "/v1/health") => send_json(w, 200, &api::health(), keep),
        ("GET", "/props") => send_json(w, 200, &api::props(settings), keep),
        ("GET", "/slots") => send_json(w, 200, &api::slots(settings, &state.slots.views()), keep),
        ("GET", "/v1/models" | "/models") => {
            send_json(w, 200, &api::models(settings, unix_now()), keep)
        }
        ("POST", "/v1/chat/completions" | "/chat/completions") => {
            crate::chat::handle(state, &req.body, w, keep)
        }
        ("POST", _) if path.starts_with("/slots/") => {
            let id = path["/slots/".len()..].parse::<usize>().ok();
            let erased = id.and_then(|id| state.slots.erase(id).map(|n| (id, n)));
            match (req.query.as_str(), erased) {
                ("action=erase", Some((id, n))) => {
                    send_json(w, 200, &json!({ "id_slot": id, "n_erased": n }), keep)
                }
                ("action=erase", None) => {
                    send_error(w, &ApiError::invalid_request("Invalid slot ID"))
                }
                _ => send_error(
                    w,
                    &ApiError::new(501, "fake-llama-server supports only action=erase on slots"),
                ),
            }
        }
        _ => send_error(w, &ApiError::not_found()),
    }
}

/// `/fake/...`: controls for tests, never part of llama-server's API.
fn fake_control(
    state: &State,
    method: &str,
    what: &str,
    body: &[u8],
    w: &mut TcpStream,
    keep: bool,
) -> io::Result<bool> {
    match (method, what) {
        ("GET", "requests") => send_json(w, 200, &Value::Array(lock(&state.log).clone()), keep),
        ("POST", "loading") => {
            let wanted = match serde_json::from_slice::<Value>(body) {
                Ok(v) => match v.get("loading") {
                    Some(Value::Bool(b)) => Some(Some(*b)),
                    Some(Value::Null) => Some(None),
                    _ => None,
                },
                Err(_) => None,
            };
            match wanted {
                Some(value) => {
                    *lock(&state.loading) = value;
                    send_json(w, 200, &json!({ "loading": state.is_loading() }), keep)
                }
                None => send_error(
                    w,
                    &ApiError::invalid_request(
                        "body must be {\"loading\": true|false|null} (null: back to the script)",
                    ),
                ),
            }
        }
        _ => send_error(w, &ApiError::not_found()),
    }
}
