//! The WebSocket at `/api/v4/websocket`: `authentication_challenge` with the token, then
//! `hello`, then events, each with the connection's next `seq`.

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use tungstenite::protocol::Role;
use tungstenite::{Message, WebSocket};

use crate::{Shared, lock};

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
    let mut authed = false;
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
                let reply_to = req["seq"].clone();
                let ok = req["action"] == "authentication_challenge"
                    && req["data"]["token"].as_str() == Some(lock(state).token.as_str());
                let answer = if ok {
                    json!({"status": "OK", "seq_reply": reply_to})
                } else {
                    json!({"status": "FAIL", "seq_reply": reply_to, "error": {
                        "id": "api.web_socket_router.not_authenticated.app_error",
                        "message": "Not authenticated", "status_code": 401}})
                };
                let _ = ws.send(Message::text(answer.to_string()));
                if ok && !authed {
                    authed = true;
                    let bot = lock(state).bot.clone();
                    let hello = json!({"event": "hello",
                        "data": {"server_version": "10.5.0.fake", "connection_id": "fakeconn"},
                        "broadcast": {"omit_users": null, "user_id": bot, "channel_id": "",
                                      "team_id": ""}});
                    if send(&mut ws, hello).is_err() {
                        return Ok(());
                    }
                    let mut s = lock(state);
                    s.sockets.push(tx.clone());
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
