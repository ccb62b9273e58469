use serde::{Deserialize, Serialize};

use crate::{ToolRequest, ToolResponse};

/// The only protocol version this build speaks. A frame with another `v` is answered with
/// [`ErrorCode::BadVersion`] and the connection is closed.
pub const PROTOCOL_VERSION: u32 = 1;

/// One frame's content: `{"v":1,"id":7,"final":true,"msg":{"kind":…,"body":…}}`.
///
/// `id` is chosen by the requester and echoed on every frame of the response; a response
/// may span several frames and only the last has `final: true`. Requests are single frames
/// with `final: true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    pub v: u32,
    pub id: u64,
    pub r#final: bool,
    pub msg: Message,
}

impl Envelope {
    /// A single-frame message (a request, or the last frame of a response).
    pub fn last(id: u64, msg: Message) -> Self {
        Self {
            v: PROTOCOL_VERSION,
            id,
            r#final: true,
            msg,
        }
    }

    /// A frame of a response that more frames will follow.
    pub fn partial(id: u64, msg: Message) -> Self {
        Self {
            v: PROTOCOL_VERSION,
            id,
            r#final: false,
            msg,
        }
    }
}

/// Every message kind, adjacently tagged: `{"kind":"tool_request","body":{…}}`.
/// A new kind is one new variant here and its body type in a module of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    content = "body",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum Message {
    ToolRequest(ToolRequest),
    ToolResponse(ToolResponse),
    Error(WireError),
}

/// A typed refusal. `detail` is for a person; programs act on `code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireError {
    pub code: ErrorCode,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The length prefix was zero, over `MAX_FRAME`, or the body was cut short.
    BadFrame,
    /// The envelope's `v` is not [`PROTOCOL_VERSION`].
    BadVersion,
    /// The body is not a valid envelope (bad JSON, unknown field, wrong type, bad value).
    BadMessage,
    /// The receiver failed; the detail is in its own log, never on the wire.
    Internal,
}
