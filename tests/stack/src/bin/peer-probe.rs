//! `peer-probe SOCKET`: one request on a framed socket, as whatever uid runs it; prints what
//! came back as one JSON line: `{"refused":{"code":…,"detail":…}}` when the server refused
//! the connection, `{"answered":"<kind>"}` when it answered, `{"failed":"<why>"}` else.
//! The stack tests run it as another uid to prove the SO_PEERCRED check.

use daemon::conn::{CallError, Conn};
use proto::Message;
use proto::approval::Empty;
use serde_json::json;

fn main() -> std::process::ExitCode {
    let Some(sock) = std::env::args_os().nth(1) else {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), b"usage: peer-probe SOCKET\n");
        return std::process::ExitCode::from(2);
    };
    let outcome = match Conn::connect(std::path::Path::new(&sock)) {
        Err(e) => json!({ "failed": format!("connect: {e}") }),
        Ok(mut conn) => match conn.call(1, Message::GrantsQuery(Empty {}), |_| {}) {
            Ok(env) => json!({ "answered": env.msg.kind() }),
            Err(CallError::Refused(e)) => json!({ "refused": e }),
            Err(e) => json!({ "failed": e.to_string() }),
        },
    };
    let line = format!("{outcome}\n");
    let _ = std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes());
    std::process::ExitCode::SUCCESS
}
