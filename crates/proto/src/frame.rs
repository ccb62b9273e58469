//! The frame codec: a 4-byte big-endian length `N`, then `N` bytes of UTF-8 JSON holding one
//! [`Envelope`]. No policy here, and no I/O beyond the stream the caller supplies.

use std::io::{self, Read, Write};

use serde::Deserialize;

use crate::{Envelope, ErrorCode, PROTOCOL_VERSION};

/// The largest frame body, in bytes.
pub const MAX_FRAME: usize = 1_048_576;

/// Why a frame could not be read or written. Its text prints the I/O error, which
/// `source()` does not return (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The stream ended cleanly before the first byte of a frame.
    #[error("the stream closed between frames")]
    Closed,
    /// The length prefix was 0. Nothing after it was read.
    #[error("zero-length frame")]
    Empty,
    /// The length prefix exceeds [`MAX_FRAME`]. Nothing after it was read or allocated.
    #[error("frame of {len} bytes exceeds the limit of {MAX_FRAME}")]
    TooLarge { len: u64 },
    /// The stream ended inside the 4-byte length prefix.
    #[error("stream ended after {got} of 4 length bytes")]
    TruncatedHeader { got: usize },
    /// The stream ended before the body was complete.
    #[error("stream ended after {got} of {expected} body bytes")]
    TruncatedBody { expected: usize, got: usize },
    #[error("frame i/o: {0}")]
    Io(io::Error),
}

/// Reads one frame body. The length is checked before anything else is read or allocated.
pub fn read_frame<R: Read>(r: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut header = [0u8; 4];
    let got = read_full(r, &mut header)?;
    match got {
        0 => return Err(FrameError::Closed),
        1..=3 => return Err(FrameError::TruncatedHeader { got }),
        _ => {}
    }
    let len = u32::from_be_bytes(header);
    let len = usize::try_from(len).map_err(|_| FrameError::TooLarge {
        len: u64::from(len),
    })?;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge {
            len: u64::try_from(len).unwrap_or(u64::MAX),
        });
    }
    let mut body = vec![0u8; len];
    let got = read_full(r, &mut body)?;
    if got < len {
        return Err(FrameError::TruncatedBody { expected: len, got });
    }
    Ok(body)
}

/// Writes one frame. A body that is empty or over [`MAX_FRAME`] is refused before any byte
/// is written, so a writer never sends what a reader must reject.
pub fn write_frame<W: Write>(w: &mut W, body: &[u8]) -> Result<(), FrameError> {
    let len = frame_len(body.len())?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len);
    frame.extend_from_slice(body);
    send(w, &frame)
}

/// The length prefix for a body of `len` bytes, or why such a body must not be sent.
fn frame_len(len: usize) -> Result<[u8; 4], FrameError> {
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge {
            len: u64::try_from(len).unwrap_or(u64::MAX),
        });
    }
    let len = u32::try_from(len).map_err(|_| FrameError::TooLarge { len: u64::MAX })?;
    Ok(len.to_be_bytes())
}

/// Writes a whole frame (prefix and body) in one `write_all`, then flushes.
fn send<W: Write>(w: &mut W, frame: &[u8]) -> Result<(), FrameError> {
    w.write_all(frame).map_err(FrameError::Io)?;
    w.flush().map_err(FrameError::Io)
}

/// Fills `buf` unless the stream ends first; returns how many bytes were read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, FrameError> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(filled)
}

/// Why an envelope could not be read. [`ReadError::code`] is the code to answer with.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{0}")]
    Frame(FrameError),
    /// `v` is not [`PROTOCOL_VERSION`]. `id` is the envelope's id when it could be read,
    /// so that the answer can carry it.
    #[error("protocol version {v} is not {PROTOCOL_VERSION}")]
    BadVersion { id: Option<u64>, v: u64 },
    /// The body is not a valid envelope.
    #[error("bad message: {detail}")]
    BadMessage { id: Option<u64>, detail: String },
}

impl ReadError {
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Frame(_) => ErrorCode::BadFrame,
            Self::BadVersion { .. } => ErrorCode::BadVersion,
            Self::BadMessage { .. } => ErrorCode::BadMessage,
        }
    }

    /// The id of the offending envelope, when it could be read.
    pub fn id(&self) -> Option<u64> {
        match self {
            Self::Frame(_) => None,
            Self::BadVersion { id, .. } | Self::BadMessage { id, .. } => *id,
        }
    }
}

impl From<FrameError> for ReadError {
    fn from(e: FrameError) -> Self {
        Self::Frame(e)
    }
}

/// Only the version and id, read when the strict parse fails, so that a frame from another
/// protocol version is answered with `bad_version` rather than with its first parse error.
#[derive(Deserialize)]
struct Probe {
    v: Option<u64>,
    id: Option<u64>,
}

/// Whether the first non-whitespace byte opens a JSON object. serde's derived structs also
/// accept an array of the field values in order; a message is always an object.
pub(crate) fn starts_with_object(text: &[u8]) -> bool {
    text.iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .is_some_and(|&b| b == b'{')
}

/// Decodes one frame body into an envelope, strictly.
pub fn decode_envelope(body: &[u8]) -> Result<Envelope, ReadError> {
    if !starts_with_object(body) {
        return Err(ReadError::BadMessage {
            id: None,
            detail: "invalid type: an envelope must be a JSON object".into(),
        });
    }
    let strict = match serde_json::from_slice::<Envelope>(body) {
        Ok(envelope) if envelope.v == PROTOCOL_VERSION => return Ok(envelope),
        Ok(envelope) => {
            return Err(ReadError::BadVersion {
                id: Some(envelope.id),
                v: u64::from(envelope.v),
            });
        }
        Err(e) => e,
    };
    // The strict parse failed: the probe says whether the version is the reason, and
    // recovers the id for the answer.
    let probe: Probe = serde_json::from_slice(body).map_err(|e| ReadError::BadMessage {
        id: None,
        detail: e.to_string(),
    })?;
    if let Some(v) = probe.v
        && v != u64::from(PROTOCOL_VERSION)
    {
        return Err(ReadError::BadVersion { id: probe.id, v });
    }
    Err(ReadError::BadMessage {
        id: probe.id,
        detail: strict.to_string(),
    })
}

/// Reads one frame and decodes it.
pub fn read_envelope<R: Read>(r: &mut R) -> Result<Envelope, ReadError> {
    let body = read_frame(r)?;
    decode_envelope(&body)
}

/// Encodes and writes one envelope as a frame.
pub fn write_envelope<W: Write>(w: &mut W, envelope: &Envelope) -> Result<(), FrameError> {
    // Serialised once, after 4 bytes kept for the length prefix.
    let mut frame = vec![0u8; 4];
    serde_json::to_writer(&mut frame, envelope).map_err(|e| FrameError::Io(io::Error::other(e)))?;
    let len = frame_len(frame.len() - 4)?;
    frame[..4].copy_from_slice(&len);
    send(w, &frame)
}
