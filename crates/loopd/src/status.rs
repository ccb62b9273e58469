//! `status_query` on loop.sock: loopd, and what only loopd reaches for the owner, who never
//! enters the loop-infer directory: inferproxy, and the model's `GET /health` through it.

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use proto::status::{LoopStatus, ModelHealth, Reach};

/// How long the health check may take: a status never waits on a busy model.
const HEALTH_DEADLINE: Duration = Duration::from_secs(5);
/// The most of a `/health` answer read.
const MAX_BODY: u64 = 16 * 1024;
/// The most of a `/props` answer read (it carries the chat template).
const MAX_PROPS: u64 = 4 * 1024 * 1024;

pub fn status(infer_sock: &Path) -> LoopStatus {
    let (inferproxy, model) = match health(infer_sock) {
        Ok((version, model)) => (Reach::Reachable { version }, model),
        Err(reason) => (
            Reach::Unreachable {
                reason: reason.clone(),
            },
            ModelHealth::Unhealthy {
                reason: format!("inferproxy cannot be reached: {reason}"),
            },
        ),
    };
    let model_path = match model {
        ModelHealth::Ok => model_path(infer_sock),
        _ => None,
    };
    LoopStatus {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        inferproxy,
        model,
        model_path,
    }
}

/// What the server's `/props` names its model (`model_path`), kept short; `None` when it
/// does not answer or says nothing of it.
fn model_path(sock: &Path) -> Option<String> {
    let stream = UnixStream::connect(sock).ok()?;
    stream.set_read_timeout(Some(HEALTH_DEADLINE)).ok()?;
    stream.set_write_timeout(Some(HEALTH_DEADLINE)).ok()?;
    let resp = strict_http::request(stream, "GET", "/props", &[], b"").ok()?;
    if resp.status != 200 {
        return None;
    }
    let body = resp.read_body(MAX_PROPS).ok()?;
    let props: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let path = props["model_path"].as_str()?;
    Some(path.chars().take(200).collect())
}

/// inferproxy's version (from its header) and the model's health, or why inferproxy could
/// not be asked.
fn health(sock: &Path) -> Result<(Option<String>, ModelHealth), String> {
    let stream = UnixStream::connect(sock).map_err(|e| format!("{}: {e}", sock.display()))?;
    stream
        .set_read_timeout(Some(HEALTH_DEADLINE))
        .and_then(|()| stream.set_write_timeout(Some(HEALTH_DEADLINE)))
        .map_err(|e| e.to_string())?;
    let resp =
        strict_http::request(stream, "GET", "/health", &[], b"").map_err(|e| e.to_string())?;
    let status = resp.status;
    // Kept short and shown inert, like the body.
    let version = resp
        .headers
        .get(proto::status::INFERPROXY_VERSION_HEADER)
        .map(|v| v.chars().take(64).collect::<String>());
    // The body is llama-server's (or inferproxy's) words: kept short; bxctl shows it inert.
    let body = resp.read_body(MAX_BODY).unwrap_or_default();
    let model = match status {
        200 => ModelHealth::Ok,
        503 => ModelHealth::Loading,
        _ => ModelHealth::Unhealthy {
            reason: format!(
                "/health answered {status}: {}",
                String::from_utf8_lossy(&body)
                    .chars()
                    .take(200)
                    .collect::<String>()
            ),
        },
    };
    Ok((version, model))
}
