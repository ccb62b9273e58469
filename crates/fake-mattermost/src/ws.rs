//! The WebSocket at `/api/v4/websocket` (`server/channels/app/platform/websocket_router.go`,
//! `server/channels/wsapi/`): an `authentication_challenge` with a user's token, then
//! `hello` to that connection, then the events its user may see, each with the connection's
//! next `seq` (from 0). Requests are answered `{"status", "seq_reply"}`: `user_typing` and
//! `ping`; any other action fails with `bad_action`, and any before authentication with
//! `not_authenticated`.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use tungstenite::protocol::Role;
use tungstenite::{Message, WebSocket};

use crate::model::{Shared, Socket, User, lock};

/// The version `hello` and `ping` report.
pub const SERVER_VERSION: &str = "10.5.0";

/// A failed request's answer, with the AppError Mattermost sends (its detail wiped).
fn fail(seq: &Value, id: &str, message: &str, status: u16) -> Value {
    json!({"status": "FAIL", "seq_reply": seq, "error": {
        "id": id, "message": message, "detailed_error": "", "request_id": "",
        "status_code": status}})
}

pub fn serve(mut stream: TcpStream, key: &str, state: &Shared) -> std::io::Result<()> {
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    write!(
        stream,
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n\r\n"
    )?;
    stream.flush()?;
    stream.set_read_timeout(Some(Duration::from_millis(50)))?;
    let raw = stream.try_clone()?;
    let mut ws = WebSocket::from_raw_socket(stream, Role::Server, None);
    let generation = lock(state).generation;
    let (tx, rx) = mpsc::channel::<Value>();
    let mut seq = 0u64;
    let mut me: Option<User> = None;
    let mut send = |ws: &mut WebSocket<TcpStream>, mut event: Value| {
        event["seq"] = json!(seq);
        seq += 1;
        ws.send(Message::text(event.to_string()))
    };
    loop {
        if lock(state).generation != generation {
            // A network loss: no close frame.
            let _ = raw.shutdown(Shutdown::Both);
            return Ok(());
        }
        match ws.read() {
            Ok(Message::Text(text)) => {
                let req: Value = serde_json::from_str(text.as_str()).unwrap_or(Value::Null);
                let (answer, hello) = request(&req, &mut me, state);
                if ws.send(Message::text(answer.to_string())).is_err() {
                    return Ok(());
                }
                if let Some(user) = hello {
                    let hello = json!({"event": "hello",
                        // CurrentVersion.BuildNumber.ClientConfigHash.IsEnterprise
                        "data": {"server_version": format!("{SERVER_VERSION}.{SERVER_VERSION}.fakeconfighash.false"),
                                 "connection_id": format!("conn{}", user.id),
                                 "server_hostname": "fake-mattermost"},
                        "broadcast": {"omit_users": null, "user_id": user.id, "channel_id": "",
                                      "team_id": "", "connection_id": "", "omit_connection_id": ""}});
                    if send(&mut ws, hello).is_err() {
                        return Ok(());
                    }
                    let mut s = lock(state);
                    s.sockets.push(Socket {
                        user: user.id,
                        events: tx.clone(),
                    });
                    s.connections += 1;
                }
            }
            Ok(Message::Close(_)) => return Ok(()),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Ok(()),
        }
        while let Ok(event) = rx.try_recv() {
            if send(&mut ws, event).is_err() {
                return Ok(());
            }
        }
    }
}

/// The answer to one request, and the user to greet when it authenticated the connection.
fn request(req: &Value, me: &mut Option<User>, state: &Shared) -> (Value, Option<User>) {
    let seq = req["seq"].clone();
    let action = req["action"].as_str().unwrap_or_default();
    if action.is_empty() {
        let e = fail(
            &seq,
            "api.web_socket_router.no_action.app_error",
            "No websocket action.",
            500,
        );
        return (e, None);
    }
    if action == "authentication_challenge" {
        let token = req["data"]["token"].as_str().unwrap_or_default();
        let user = lock(state)
            .user_by_token(token)
            .filter(|_| !token.is_empty());
        return match user {
            Some(user) => {
                let first = me.is_none();
                *me = Some(user.clone());
                (
                    json!({"status": "OK", "seq_reply": seq}),
                    first.then_some(user),
                )
            }
            None => (
                fail(
                    &seq,
                    "api.web_socket_router.not_authenticated.app_error",
                    "Not authenticated. Please log in and try again.",
                    401,
                ),
                None,
            ),
        };
    }
    let Some(user) = me.as_ref() else {
        let e = fail(
            &seq,
            "api.web_socket_router.not_authenticated.app_error",
            "Not authenticated. Please log in and try again.",
            401,
        );
        return (e, None);
    };
    match action {
        "user_typing" => {
            let channel = req["data"]["channel_id"].as_str().unwrap_or_default();
            let parent = req["data"]["parent_id"].as_str().unwrap_or_default();
            match lock(state).typing(&user.id, channel, parent) {
                Ok(()) => (json!({"status": "OK", "seq_reply": seq}), None),
                Err((status, e)) => (
                    fail(
                        &seq,
                        e["id"].as_str().unwrap_or_default(),
                        e["message"].as_str().unwrap_or_default(),
                        status,
                    ),
                    None,
                ),
            }
        }
        "ping" => (
            json!({"status": "OK", "seq_reply": seq,
                   "data": {"text": "pong", "version": SERVER_VERSION, "node_id": "",
                            "server_time": lock(state).now()}}),
            None,
        ),
        _ => (
            fail(
                &seq,
                "api.web_socket_router.bad_action.app_error",
                "Unable to complete the request: unknown action.",
                500,
            ),
            None,
        ),
    }
}
