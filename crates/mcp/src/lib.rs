//! The Model Context Protocol as boxmaker's tools speak it: JSON-RPC 2.0 messages parsed
//! strictly, a bounded client of one server session (initialize, tools/list, tools/call;
//! every request the server makes refused and reported), the JSON Schema subset a tool's
//! input schema may use, the model's arguments checked and made canonical, the names the
//! model is offered, and the pin of a server's tool list.
//!
//! Transports: [`transport::Stdio`] (a server started as a child, over its stdin and stdout)
//! and [`http::StreamableHttp`] (`http://` or `https://`, one connection per message; what the
//! conformance suite's client scenarios speak). No I/O happens outside the transport a
//! caller hands in, and this crate starts no process.

pub mod args;
pub mod client;
pub mod content;
mod error;
pub mod http;
pub mod json;
pub mod jsonrpc;
pub mod names;
pub mod pin;
pub mod schema;
pub mod transport;

pub use client::{
    Client, ClientInfo, Declared, Limits, ListedTool, Report, ServerInfo, ServerRequest,
};
pub use content::CallResult;
pub use error::{MAX_SERVER_WORDS, McpError};
pub use pin::{Pin, PinError, canonical_tools, tools_hash};
pub use schema::Schema;

/// The protocol version this client asks for and accepts: the newest that the reference
/// servers and both official SDKs (Python `mcp` 2.3, TypeScript 1.32) reach through the
/// `initialize` handshake (docs/decisions.md P1).
pub const PROTOCOL_VERSION: &str = "2025-11-25";
