//! loopd's side of broker.sock: one tool request, its pending-approval notice, its answer;
//! and the tools a request offers (`offered`).

use std::path::Path;

use crate::cancel::Cancel;
use daemon::conn::Conn;
use proto::{Message, ToolRequest, ToolResponse};

/// Sends one call to brokerd (`request` names the call inferproxy witnessed). `pending`
/// sees a pending approval while the owner decides; `cancel` can withdraw the call
/// meanwhile (brokerd then answers with a denial).
/// A broker that cannot be reached is a failed call, said plainly to the model and owner.
pub fn call(
    sock: &Path,
    request: ToolRequest,
    cancel: &Cancel,
    mut pending: impl FnMut(ToolResponse),
) -> ToolResponse {
    let failed = |why: String| ToolResponse::failed(format!("brokerd: {why}"));
    let mut conn = match Conn::connect(sock) {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot reach {}: {e}", sock.display())),
    };
    let call = request.call;
    let msg = Message::ToolRequest(request);
    // Only a call that waits for the owner can be withdrawn: one being sent, decided or
    // run goes on to its result. A cancel that came first withdraws it as it starts waiting.
    let mut handle = conn.handle().ok();
    let last = conn.call(call.0, msg, |env| {
        if let Message::ToolResponse(r) = &env.msg {
            if matches!(r, ToolResponse::PendingApproval { .. }) {
                cancel.during(handle.take());
            }
            pending(r.clone());
        }
    });
    cancel.during(None);
    match last {
        Ok(env) => match env.msg {
            Message::ToolResponse(r) => r,
            Message::Error(e) => failed(format!("refused: {}: {}", e.code.name(), e.detail)),
            other => failed(format!("unexpected {}", other.kind())),
        },
        Err(e) => failed(e.to_string()),
    }
}

/// The tools a chat request offers now, as brokerd says (`tools_query`): boxmaker's own and
/// every pinned MCP tool. loopd is not trusted for them: inferproxy refuses a request whose
/// tools hash otherwise than brokerd's answer to it (docs/decisions.md W3).
pub fn offered(sock: &Path) -> Result<serde_json::Value, String> {
    let mut conn =
        Conn::connect(sock).map_err(|e| format!("cannot reach {}: {e}", sock.display()))?;
    let query = Message::ToolsQuery(proto::mcp::ToolsQuery {});
    match conn.call(0, query, |_| {}).map_err(|e| e.to_string())?.msg {
        Message::ToolsOffered(o) => serde_json::from_str(&o.tools).map_err(|e| e.to_string()),
        Message::Error(e) => Err(format!("refused: {}: {}", e.code.name(), e.detail)),
        other => Err(format!("unexpected {}", other.kind())),
    }
}

/// The tools brokerd last said a request offers (docs/decisions.md P14).
#[derive(Debug, Default)]
pub struct Offered(std::sync::Mutex<Option<serde_json::Value>>);

impl Offered {
    /// The tools a request offers: brokerd's answer now, else (brokerd stopping or away)
    /// its last answer, else boxmaker's own tools. inferproxy falls back alike, and nothing
    /// a request makes the model call runs while brokerd is away.
    pub fn get(&self, sock: &Path) -> serde_json::Value {
        let mut last = daemon::lock(&self.0);
        match offered(sock) {
            Ok(tools) => last.insert(tools).clone(),
            Err(why) => {
                daemon::log::warn(format_args!(
                    "the tools to offer: brokerd: {why}; offering the last set it gave"
                ));
                last.clone().unwrap_or_else(proto::attest::definitions)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;
    use std::time::Duration;

    use proto::{CallId, ErrorCode, SessionId};

    use super::*;

    /// A refusal reaches the model as text it reads: the code by its wire name
    /// (`forbidden_kind`, as the protocol documents it), never Rust's name for the variant.
    #[test]
    fn a_refusal_names_the_code_as_the_wire_does() {
        let dir = std::env::temp_dir().join(format!("loopd-refusal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let sock = dir.join("broker.sock");
        let _ = std::fs::remove_file(&sock);
        let listener = UnixListener::bind(&sock).expect("bind");
        let broker = std::thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            let mut conn = Conn::new(stream, Duration::from_secs(5), Duration::from_secs(5));
            let asked = conn.read().expect("the request");
            conn.refuse(asked.id, ErrorCode::ForbiddenKind, "not on this socket");
        });
        let request = ToolRequest {
            session: SessionId::new("s-refused").expect("id"),
            call: CallId(7),
            tool: "read_file".to_owned(),
            arguments: "{}".to_owned(),
            witness: None,
        };
        let answer = call(&sock, request, &Cancel::default(), |_| {});
        broker.join().expect("the broker thread");
        assert_eq!(
            answer,
            ToolResponse::failed("brokerd: refused: forbidden_kind: not on this socket")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
