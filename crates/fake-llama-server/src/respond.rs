//! Answers in llama-server's manner: a JSON body, and an error status closes the connection
//! (the real server sends `Connection: close` with its errors).

use std::io;
use std::net::TcpStream;

use serde_json::Value;

use crate::api::ApiError;
use crate::http;

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
