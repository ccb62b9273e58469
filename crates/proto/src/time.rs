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
        // `0` in the shape stands for any digit.
        const SHAPE: &[u8; CANONICAL_LEN] = b"0000-00-00T00:00:00.000Z";
        let shape_ok = text.len() == CANONICAL_LEN
            && text.bytes().zip(SHAPE).all(|(b, &s)| match s {
                b'0' => b.is_ascii_digit(),
                _ => b == s,
            });
        if !shape_ok {
            return Err(InvalidValue::new(
                "timestamp",
                format!("{text:?} is not of the form 2026-09-17T08:05:00.000Z"),
            ));
        }
        // Every field in range (what humantime accepts and writes back as itself) is read
        // directly; anything else goes to humantime, which names what is wrong.
        match Self::from_fields(text.as_bytes()) {
            Some(ts) => Ok(ts),
            None => Self::by_humantime(text),
        }
    }

    /// The time a canonically shaped text names, when every field is in range: from 1970,
    /// month 1 to 12, the day within its month, hours to 23, minutes and seconds to 59.
    /// `None` otherwise (a test holds it to `by_humantime`'s verdict).
    fn from_fields(b: &[u8]) -> Option<Self> {
        let num = |at: std::ops::Range<usize>| {
            b[at]
                .iter()
                .fold(0u64, |n, d| n * 10 + u64::from(d.wrapping_sub(b'0')))
        };
        let (year, month, day) = (num(0..4), num(5..7), num(8..10));
        let (hour, minute, second, milli) = (num(11..13), num(14..16), num(17..19), num(20..23));
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let month_days = match month {
            2 => 28 + u64::from(leap),
            4 | 6 | 9 | 11 => 30,
            1..=12 => 31,
            _ => return None,
        };
        if year < 1970 || day == 0 || day > month_days || hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        // Days since 1970-01-01, counting years from March (Hinnant's days_from_civil).
        let (y, m) = if month <= 2 {
            (year - 1, month + 9)
        } else {
            (year, month - 3)
        };
        let (era, year_of_era) = (y / 400, y % 400);
        let day_of_year = (153 * m + 2) / 5 + day - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        let days = era * 146_097 + day_of_era - 719_468;
        let secs = days * 86_400 + hour * 3_600 + minute * 60 + second;
        Self::from_millis(secs * 1_000 + milli).ok()
    }

    /// humantime's reading of a canonically shaped text, held to write back as itself.
    fn by_humantime(text: &str) -> Result<Self, InvalidValue> {
        let parsed = humantime::parse_rfc3339(text)
            .map_err(|e| InvalidValue::new("timestamp", format!("{text:?}: {e}")))?;
        let millis = parsed
            .duration_since(UNIX_EPOCH)
            .map_err(|_| InvalidValue::new("timestamp", format!("{text:?} is before 1970")))?
            .as_millis();
        let millis = u64::try_from(millis)
            .map_err(|_| InvalidValue::new("timestamp", format!("{text:?} is out of range")))?;
        let ts = Self::from_millis(millis)?;
        if !writes_as(ts, text) {
            return Err(InvalidValue::new(
                "timestamp",
                format!("{text:?} does not write back as itself"),
            ));
        }
        Ok(ts)
    }
}

/// Whether `ts` is written as exactly `text`, compared as it is formatted (no copy: the
/// audit verifier checks a timestamp a line).
fn writes_as(ts: Timestamp, text: &str) -> bool {
    /// Consumes its text as the same text is written to it; fails on the first difference.
    struct Expect<'a>(&'a str);
    impl fmt::Write for Expect<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0 = self.0.strip_prefix(s).ok_or(fmt::Error)?;
            Ok(())
        }
    }
    let mut rest = Expect(text);
    fmt::write(&mut rest, format_args!("{ts}")).is_ok() && rest.0.is_empty()
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
        crate::error::deserialize_str(d, Self::parse)
    }
}

/// Needs the private direct reading and humantime's, side by side.
#[cfg(test)]
mod tests {
    use super::*;

    /// The direct reading accepts exactly what humantime accepts and writes back as
    /// itself, with the same time.
    #[test]
    fn fields_are_read_as_humantime_reads_them() {
        let mut texts: Vec<String> = (0..20_000u64)
            .map(|i| Timestamp(i * 12_670_002_737 % (MAX_MILLIS + 1)).to_string())
            .collect();
        for day in [
            "1970-01-01",
            "2000-02-29",
            "2024-02-29",
            "9999-12-31",
            "2026-12-31",
        ] {
            texts.push(format!("{day}T23:59:59.999Z"));
        }
        for bad in [
            "1969-12-31T23:59:59.999Z",
            "2023-02-29T00:00:00.000Z",
            "2100-02-29T00:00:00.000Z",
            "2026-04-31T00:00:00.000Z",
            "2026-13-01T00:00:00.000Z",
            "2026-00-01T00:00:00.000Z",
            "2026-01-00T00:00:00.000Z",
            "2026-01-32T00:00:00.000Z",
            "2026-01-01T24:00:00.000Z",
            "2026-01-01T00:60:00.000Z",
            "2016-12-31T23:59:60.000Z",
            "0000-01-01T00:00:00.000Z",
        ] {
            assert_eq!(Timestamp::from_fields(bad.as_bytes()), None, "{bad}");
            texts.push(bad.to_owned());
        }
        for text in &texts {
            assert_eq!(
                Timestamp::from_fields(text.as_bytes()),
                Timestamp::by_humantime(text).ok(),
                "{text}"
            );
        }
        let accepted = texts.iter().filter(|t| Timestamp::parse(t).is_ok()).count();
        assert_eq!(accepted, 20_005);
    }
}
