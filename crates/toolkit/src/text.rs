//! The one rule that turns bytes into content for the model, shared by every tool.

use std::io::Read;

use proto::toolrun::cap_str;

use crate::{Content, Failure};

/// How far to look for a NUL byte when deciding that content is binary (what `git` and
/// `grep` look at, roughly).
pub const BINARY_PROBE: usize = 8 * 1024;

/// Reads at most `max + 1` bytes from `source`: the extra byte only tells whether there was
/// more, so a huge file or body is never read past the cap.
pub fn read_capped(source: impl Read, max: usize) -> std::io::Result<(Vec<u8>, bool)> {
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::new();
    source.take(limit).read_to_end(&mut bytes)?;
    let more = bytes.len() > max;
    bytes.truncate(max);
    Ok((bytes, more))
}

/// Turns `bytes` (already cut to at most `max`; `more` says whether the source had more)
/// into content of at most `max` bytes of UTF-8.
///
/// A NUL in the first [`BINARY_PROBE`] bytes refuses the content as binary: lossy text of a
/// binary file only wastes the model's context. Otherwise invalid sequences become U+FFFD.
pub fn to_content(mut bytes: Vec<u8>, more: bool, max: usize) -> Result<Content, Failure> {
    let probe = bytes.len().min(BINARY_PROBE);
    if bytes[..probe].contains(&0) {
        return Err(Failure::Binary);
    }
    if more {
        // The cap may have split the last character; drop its start rather than show the
        // stump as U+FFFD.
        drop_split_tail(&mut bytes);
    }
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    // U+FFFD takes three bytes where the invalid byte took one, so the text can grow past
    // the cap again.
    let (content, cut) = cap_str(text, max);
    Ok(Content {
        content,
        truncated: more || cut,
    })
}

/// Removes an incomplete UTF-8 sequence at the very end of `bytes`, if there is one.
fn drop_split_tail(bytes: &mut Vec<u8>) {
    // A sequence is at most 4 bytes, so its lead byte is within the last 4.
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let b = bytes[len - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: keep looking for the lead
        }
        let need = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        if need > back {
            bytes.truncate(len - back);
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content(bytes: &[u8], more: bool, max: usize) -> (String, bool) {
        let c = to_content(bytes.to_vec(), more, max).expect("text");
        (c.content, c.truncated)
    }

    #[test]
    fn read_capped_reads_one_byte_past_the_cap_only() {
        let (b, more) = read_capped(&b"abcdef"[..], 4).expect("read");
        assert_eq!((b.as_slice(), more), (&b"abcd"[..], true));
        let (b, more) = read_capped(&b"abcd"[..], 4).expect("read");
        assert_eq!((b.as_slice(), more), (&b"abcd"[..], false));
        let (b, more) = read_capped(&b""[..], 0).expect("read");
        assert_eq!((b.len(), more), (0, false));
    }

    #[test]
    fn plain_text_passes_through() {
        assert_eq!(content(b"hello", false, 10), ("hello".into(), false));
        assert_eq!(content(b"", false, 0), (String::new(), false));
    }

    #[test]
    fn a_split_character_at_the_cap_is_dropped_not_replaced() {
        // "aé" is 61 C3 A9; cut after C3.
        assert_eq!(content(b"a\xC3", true, 2), ("a".into(), true));
        // A four-byte character cut after three bytes.
        assert_eq!(content(b"xy\xF0\x9F\x98", true, 5), ("xy".into(), true));
        // A complete character at the cap stays.
        assert_eq!(content("aé".as_bytes(), true, 3), ("aé".into(), true));
    }

    #[test]
    fn invalid_bytes_become_replacement_characters_within_the_cap() {
        assert_eq!(content(b"a\xFFb", false, 10), ("a\u{FFFD}b".into(), false));
        // U+FFFD is three bytes: "a" + FFFD = 4 bytes, more than the cap of 3.
        assert_eq!(content(b"a\xFFb", false, 3), ("a".into(), true));
    }

    #[test]
    fn nul_in_the_probe_is_binary_past_it_is_not() {
        let err = to_content(b"ab\0cd".to_vec(), false, 10).expect_err("binary");
        assert!(matches!(err, Failure::Binary), "{err:?}");
        assert!(err.to_string().contains("not UTF-8 text"));
        let mut late = vec![b'a'; BINARY_PROBE];
        late.push(0);
        let c = to_content(late, false, BINARY_PROBE + 1).expect("text");
        assert_eq!(c.content.len(), BINARY_PROBE + 1);
    }

    #[test]
    fn cap_str_cuts_at_a_boundary() {
        assert_eq!(cap_str("héllo".into(), 2), ("h".into(), true));
        assert_eq!(cap_str("héllo".into(), 3), ("hé".into(), true));
        assert_eq!(cap_str("hé".into(), 3), ("hé".into(), false));
    }
}
