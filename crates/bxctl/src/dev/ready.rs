//! Ready means usable: after every role said READY=1, `bxctl dev` asks the model's
//! `/health` through infer.sock (the way loopd reaches it) until it answers 200, showing
//! what it waits for and for how long. llama-server answers 503 `{"error":{"code":503,
//! "message":"Loading model","type":"unavailable_error"}}` while it loads; inferproxy
//! answers 502 while it cannot reach it. The wait is bounded: a model that cannot be
//! reached for [`UNREACHABLE_WITHIN`] (nothing listens at the URL, the wrong port) or that
//! loads for longer than [`LOADING_WITHIN`] is an error that says which, and a llama-server
//! `bxctl dev` started that exits meanwhile is said at once. Ctrl-C stops the wait (and the
//! stack).

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::DevError;

/// How often `/health` is asked.
const POLL: Duration = Duration::from_millis(250);

/// How long the model may be unreachable (not loading: nothing answers) before the wait
/// ends with an error.
pub const UNREACHABLE_WITHIN: Duration = Duration::from_secs(20);

/// How long a model may take to load (llama-server's 503 "Loading model") in all.
pub const LOADING_WITHIN: Duration = Duration::from_secs(15 * 60);

/// What one `/health` said.
#[derive(Debug, PartialEq, Eq)]
enum Health {
    Ready,
    Loading,
    /// Nothing that answers as a model: why.
    Unreachable(String),
}

fn health(sock: &Path) -> Health {
    let stream = match UnixStream::connect(sock) {
        Ok(s) => s,
        Err(e) => {
            return Health::Unreachable(format!(
                "cannot reach inferproxy at {}: {e}",
                sock.display()
            ));
        }
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let resp = match strict_http::request(stream, "GET", "/health", &[], b"") {
        Ok(r) => r,
        Err(e) => return Health::Unreachable(format!("inferproxy: {e}")),
    };
    let status = resp.status;
    if status == 200 {
        return Health::Ready;
    }
    let body = resp.read_body(64 * 1024).unwrap_or_default();
    let message = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned));
    match (status, message) {
        (503, Some(m)) if m == "Loading model" => Health::Loading,
        (_, Some(m)) => Health::Unreachable(format!("{status}: {}", inert::line(&m))),
        (_, None) => Health::Unreachable(format!("{status}")),
    }
}

/// Who the model is, for the error that it cannot be reached: its URL and what named it.
#[derive(Debug, Clone)]
pub struct Model {
    pub url: String,
    /// `--llama-url`, `--model` or the fake.
    pub given_by: &'static str,
    /// What to do when it does not answer.
    pub help: String,
}

/// Waits until the model's `/health` answers 200. On a terminal one line is redrawn with
/// the reason and the seconds waited; otherwise each new reason is printed once. `gone`
/// says whether a process the model depends on has exited (and why), checked each poll.
pub fn wait(
    sock: &Path,
    model: &Model,
    terminal: bool,
    gone: &mut dyn FnMut() -> Option<DevError>,
    out: &mut dyn Write,
) -> Result<(), DevError> {
    let mut shown = false;
    let result = poll(sock, model, terminal, gone, &mut shown, out);
    if result.is_err() && terminal && shown {
        // The redrawn line ends before the error is said.
        let _ = writeln!(out);
    }
    result
}

fn poll(
    sock: &Path,
    model: &Model,
    terminal: bool,
    gone: &mut dyn FnMut() -> Option<DevError>,
    shown: &mut bool,
    out: &mut dyn Write,
) -> Result<(), DevError> {
    let start = Instant::now();
    let mut unreachable_since: Option<Instant> = None;
    let mut said: Option<String> = None;
    loop {
        let why = match health(sock) {
            Health::Ready => break,
            Health::Loading => {
                unreachable_since = None;
                if start.elapsed() > LOADING_WITHIN {
                    return Err(DevError::ModelUnready {
                        url: model.url.clone(),
                        given_by: model.given_by,
                        waited: start.elapsed().as_secs(),
                        why: "it was still loading".to_owned(),
                        help: model.help.clone(),
                    });
                }
                "loading...".to_owned()
            }
            Health::Unreachable(why) => {
                let since = *unreachable_since.get_or_insert_with(Instant::now);
                if since.elapsed() > UNREACHABLE_WITHIN {
                    return Err(DevError::ModelUnready {
                        url: model.url.clone(),
                        given_by: model.given_by,
                        waited: since.elapsed().as_secs(),
                        why,
                        help: model.help.clone(),
                    });
                }
                why
            }
        };
        if let Some(e) = gone() {
            return Err(e);
        }
        let secs = start.elapsed().as_secs();
        if terminal {
            write!(out, "\r\x1b[Kwaiting for the model: {why} {secs}s").map_err(DevError::Say)?;
            out.flush().map_err(DevError::Say)?;
        } else if said.as_deref() != Some(&why) {
            writeln!(out, "waiting for the model: {why}").map_err(DevError::Say)?;
        }
        said = Some(why);
        *shown = true;
        std::thread::sleep(POLL);
    }
    if said.is_some() {
        if terminal {
            write!(out, "\r\x1b[K").map_err(DevError::Say)?;
        }
        writeln!(
            out,
            "the model is ready after {}s",
            start.elapsed().as_secs()
        )
        .map_err(DevError::Say)?;
    }
    Ok(())
}
