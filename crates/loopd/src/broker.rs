//! loopd's side of broker.sock: one tool request, its pending-approval notice, its answer.

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
