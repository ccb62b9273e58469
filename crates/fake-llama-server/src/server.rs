//! The accept loop, one thread per connection, and the routes.

use std::io::{self, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::api::{self, ApiError};
use crate::chat;
use crate::http::{self, ReadError};
use crate::respond::{send_error, send_json};
use crate::script::Script;
use crate::state::{State, unix_now};

/// How long a kept-alive connection may sit idle (the real server's `timeout=5`).
const IDLE: Duration = Duration::from_secs(5);

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
        ("GET", "/metrics") if settings.metrics => {
            let text = state.metrics();
            http::write_response(w, 200, "text/plain; version=0.0.4", text.as_bytes(), keep)?;
            Ok(keep)
        }
        ("GET", "/metrics") => send_error(w, &ApiError::metrics_off()),
        ("GET", "/v1/models" | "/models") => {
            send_json(w, 200, &api::models(settings, unix_now()), keep)
        }
        ("POST", "/v1/chat/completions" | "/chat/completions") => {
            chat::handle(state, &req.body, w, keep)
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
        ("GET", "requests") => send_json(w, 200, &state.requests(), keep),
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
                    state.set_loading(value);
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
