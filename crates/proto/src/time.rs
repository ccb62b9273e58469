use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::InvalidValue;

/// A point in time, Unix milliseconds. JSON: `"2026-09-17T08:05:00.000Z"`, exactly that
/// form: four-digit year, three fraction digits, `Z`. Other RFC 3339 spellings (offsets,
/// other fraction lengths, leap seconds) are refused, so that every accepted text is the
/// one this type writes back and hashes over stored lines stay meaningful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(u64);

/// `9999-12-31T23:59:59.999Z`: the last instant with a four-digit year.
const MAX_MILLIS: u64 = 253_402_300_799_999;
/// `YYYY-MM-DDTHH:MM:SS.mmmZ`
const CANONICAL_LEN: usize = 24;

impl Timestamp {
    pub fn from_millis(millis: u64) -> Result<Self, InvalidValue> {
        if millis > MAX_MILLIS {
            return Err(InvalidValue::new(
                "timestamp",
                "after 9999-12-31T23:59:59.999Z, which cannot be written",
            ));
        }
        Ok(Self(millis))
    }

    pub fn as_millis(self) -> u64 {
        self.0
    }

    /// The current time, truncated to the millisecond.
    pub fn now() -> Self {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(MAX_MILLIS));
        Self(millis.min(MAX_MILLIS))
    }

    /// This time plus `d`, saturating at the last writable instant.
    pub fn saturating_add(self, d: Duration) -> Self {
        let add = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(add).min(MAX_MILLIS))
    }

    pub fn parse(text: &str) -> Result<Self, InvalidValue> {
        let shape_ok = text.len() == CANONICAL_LEN
            && text.bytes().enumerate().all(|(i, b)| match i {
                4 | 7 => b == b'-',
                10 => b == b'T',
                13 | 16 => b == b':',
                19 => b == b'.',
                23 => b == b'Z',
                _ => b.is_ascii_digit(),
            });
        if !shape_ok {
            return Err(InvalidValue::new(
                "timestamp",
                format!("{text:?} is not of the form 2026-09-17T08:05:00.000Z"),
            ));
        }
        let parsed = humantime::parse_rfc3339(text)
            .map_err(|e| InvalidValue::new("timestamp", format!("{text:?}: {e}")))?;
        let millis = parsed
            .duration_since(UNIX_EPOCH)
            .map_err(|_| InvalidValue::new("timestamp", format!("{text:?} is before 1970")))?
            .as_millis();
        let millis = u64::try_from(millis)
            .map_err(|_| InvalidValue::new("timestamp", format!("{text:?} is out of range")))?;
        let ts = Self::from_millis(millis)?;
        if ts.to_string() != text {
            return Err(InvalidValue::new(
                "timestamp",
                format!("{text:?} does not write back as itself"),
            ));
        }
        Ok(ts)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let time = UNIX_EPOCH + Duration::from_millis(self.0);
        write!(f, "{}", humantime::format_rfc3339_millis(time))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Self::parse(&raw).map_err(serde::de::Error::custom)
    }
}
