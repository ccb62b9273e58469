use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::InvalidValue;

/// A session's name: 1 to 64 characters of `[a-z0-9-]`. It is used as a directory name,
/// so nothing else (no dot, no slash, no upper case) is ever accepted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(String);

impl SessionId {
    pub const MAX_LEN: usize = 64;

    pub fn new(value: impl Into<String>) -> Result<Self, InvalidValue> {
        let value = value.into();
        if value.is_empty() || value.len() > Self::MAX_LEN {
            return Err(InvalidValue::new(
                "session id",
                format!("must be 1 to {} characters long", Self::MAX_LEN),
            ));
        }
        if let Some(bad) = value
            .chars()
            .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-'))
        {
            return Err(InvalidValue::new(
                "session id",
                format!("character {bad:?} is not one of [a-z0-9-]"),
            ));
        }
        Ok(Self(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SessionId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::error::deserialize_str(d, |text| Self::new(text))
    }
}

/// An epoch of a session: the log file `sessions/<id>/<epoch>.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Epoch(pub u32);

/// A tool call's number, assigned by loopd, increasing within a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallId(pub u64);

/// A SHA-256 digest. JSON: exactly 64 lower-case hex characters.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hash32([u8; 32]);

impl Hash32 {
    /// The `prev` of the first audit record ever written.
    pub const ZERO: Self = Self([0; 32]);

    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// SHA-256 of `bytes`.
    pub fn digest(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// SHA-256 over the parts, each preceded by its length (8 bytes, big-endian), so that
    /// no two different lists of parts hash alike.
    pub fn of_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update(u64::try_from(part.len()).unwrap_or(u64::MAX).to_be_bytes());
            hasher.update(part);
        }
        Self(hasher.finalize().into())
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    pub fn from_hex(text: &str) -> Result<Self, InvalidValue> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return Err(InvalidValue::new(
                "hash",
                format!("must be 64 hex characters, got {}", bytes.len()),
            ));
        }
        // Branch-free over the 64 characters (the audit verifier decodes one or two hashes
        // a line); only a bad hash goes back to find the character to name.
        let mut out = [0u8; 32];
        let mut bad = 0u8;
        for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            let (hi, lo) = (NIBBLE[usize::from(pair[0])], NIBBLE[usize::from(pair[1])]);
            bad |= hi | lo;
            *slot = (hi << 4) | (lo & 0x0f);
        }
        if bad & NOT_HEX != 0 {
            let c = bytes
                .iter()
                .copied()
                .find(|&c| NIBBLE[usize::from(c)] == NOT_HEX)
                .unwrap_or_default();
            return Err(InvalidValue::new(
                "hash",
                format!(
                    "character {:?} is not lower-case hex",
                    char::from(c).escape_default().to_string()
                ),
            ));
        }
        Ok(Self(out))
    }
}

/// `bytes` as lower-case hex, two characters a byte.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

/// Each byte's value as a lower-case hex digit, or `NOT_HEX`.
const NIBBLE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};
const NOT_HEX: u8 = 0x10;

impl fmt::Debug for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash32({})", self.to_hex())
    }
}

impl fmt::Display for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Hash32 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Hash32 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::error::deserialize_str(d, Self::from_hex)
    }
}
