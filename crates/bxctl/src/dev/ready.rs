//! Ready means usable: after every role said READY=1, `bxctl dev` asks the model's
//! `/health` through infer.sock (the way loopd reaches it) until it answers 200, showing
//! what it waits for and for how long. llama-server answers 503 `{"error":{"code":503,
//! "message":"Loading model","type":"unavailable_error"}}` while it loads; inferproxy
//! answers 502 while it cannot reach it. Ctrl-C stops the wait (and the stack).

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often `/health` is asked.
const POLL: Duration = Duration::from_millis(250);

/// What one `/health` said: `None` when the model is ready, else why not.
fn health(sock: &Path) -> Option<String> {
    let stream = match UnixStream::connect(sock) {
        Ok(s) => s,
        Err(e) => {
            return Some(format!(
                "cannot reach inferproxy at {}: {e}",
                sock.display()
            ));
        }
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let resp = match strict_http::request(stream, "GET", "/health", &[], b"") {
        Ok(r) => r,
        Err(e) => return Some(format!("inferproxy: {e}")),
    };
    let status = resp.status;
    if status == 200 {
        return None;
    }
    let body = resp.read_body(64 * 1024).unwrap_or_default();
    let message = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned));
    Some(match (status, message) {
        (503, Some(m)) if m == "Loading model" => "loading...".to_owned(),
        (_, Some(m)) => format!("{status}: {}", inert::line(&m)),
        (_, None) => format!("{status}"),
    })
}

/// Waits until the model's `/health` answers 200. On a terminal one line is redrawn with
/// the reason and the seconds waited; otherwise each new reason is printed once.
pub fn wait(sock: &Path, terminal: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let start = Instant::now();
    let mut said: Option<String> = None;
    while let Some(why) = health(sock) {
        let secs = start.elapsed().as_secs();
        if terminal {
            write!(out, "\r\x1b[Kwaiting for the model: {why} {secs}s")?;
            out.flush()?;
        } else if said.as_deref() != Some(&why) {
            writeln!(out, "waiting for the model: {why}")?;
        }
        said = Some(why);
        std::thread::sleep(POLL);
    }
    if said.is_some() {
        if terminal {
            write!(out, "\r\x1b[K")?;
        }
        writeln!(
            out,
            "the model is ready after {}s",
            start.elapsed().as_secs()
        )?;
    }
    Ok(())
}
