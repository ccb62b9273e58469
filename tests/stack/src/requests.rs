//! Tool requests as loopd sends them on the loopd side of `broker.sock`, each call first
//! witnessed on the home's witness.sock as inferproxy would have (or, for a compromised
//! loopd, naming whatever witness the test gives).

use std::path::Path;

use daemon::conn::Conn;
use proto::attest::WitnessRef;
use proto::{Envelope, Message, SessionId, ToolRequest};

use crate::witness::{witness_sock_of, witnessed};

/// One tool request on the loopd side; every frame of the answer, the final one last.
pub fn tool(sock: &Path, session: &str, call: u64, tool: &str, arguments: &str) -> Vec<Envelope> {
    let mut conn = Conn::connect(sock).expect("connect loop side");
    request(&mut conn, session, call, tool, arguments)
}

/// [`tool`] on an open connection to the loopd side `broker.sock` of a [`Home`]: the call is
/// first witnessed ([`witnessed`]) on that home's witness.sock, as inferproxy would have.
pub fn request(
    conn: &mut Conn,
    session: &str,
    call: u64,
    tool: &str,
    arguments: &str,
) -> Vec<Envelope> {
    let witness = witnessed(&witness_sock_of(conn), tool, arguments);
    request_as(conn, session, call, tool, arguments, witness)
}

/// One tool request naming `witness` (or none, `None`: the pre-M1 shape), as loopd (or a
/// compromised loopd) sends it.
pub fn request_as(
    conn: &mut Conn,
    session: &str,
    call: u64,
    tool: &str,
    arguments: &str,
    witness: impl Into<Option<WitnessRef>>,
) -> Vec<Envelope> {
    let msg = Message::ToolRequest(ToolRequest {
        session: SessionId::new(session).expect("session id"),
        call: proto::CallId(call),
        tool: tool.to_owned(),
        arguments: arguments.to_owned(),
        witness: witness.into(),
    });
    let mut frames = Vec::new();
    let last = conn
        .call(call, msg, |e| frames.push(e.clone()))
        .expect("tool request");
    frames.push(last);
    frames
}

/// The final frame's tool response.
pub fn response(frames: &[Envelope]) -> &proto::ToolResponse {
    match frames.last().map(|e| &e.msg) {
        Some(Message::ToolResponse(r)) => r,
        other => panic!("not a tool response: {other:?}"),
    }
}
