//! Reading the audit log's day files as they are stored: the files in name order, and each
//! line's bytes where they lie (never re-serialised), for the verification and the listing.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::Error;

/// The day files, in name (and so date) order.
pub(super) fn files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| Error::File {
            path: dir.to_owned(),
            error: source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Ok(files)
}

/// Calls `each(file name, 1-based line, bytes)` for every line; returns whether the last
/// byte of the last file was a newline. Lines are handed over where they lie in the read
/// buffer; only a line that straddles two reads is gathered into a copy.
pub(crate) fn lines(
    dir: &Path,
    mut each: impl FnMut(&str, u64, &[u8]) -> Result<(), Error>,
) -> Result<bool, Error> {
    let mut ended = true;
    let mut straddling = Vec::new();
    for path in files(dir)? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let io = |source| Error::File {
            path: path.clone(),
            error: source,
        };
        let mut reader = BufReader::with_capacity(1 << 16, File::open(&path).map_err(io)?);
        let mut n = 0u64;
        loop {
            let buf = reader.fill_buf().map_err(io)?;
            if buf.is_empty() {
                break;
            }
            let mut rest = buf;
            while let Some(i) = newline(rest) {
                n += 1;
                ended = true;
                if straddling.is_empty() {
                    each(&name, n, &rest[..i])?;
                } else {
                    straddling.extend_from_slice(&rest[..i]);
                    each(&name, n, &straddling)?;
                    straddling.clear();
                }
                rest = &rest[i + 1..];
            }
            straddling.extend_from_slice(rest);
            let read = buf.len();
            reader.consume(read);
        }
        if !straddling.is_empty() {
            n += 1;
            ended = false;
            each(&name, n, &straddling)?;
            straddling.clear();
        }
    }
    Ok(ended)
}

/// Where the first newline in `bytes` is, looking at eight bytes a step (std's memchr
/// is not public, and a byte-at-a-time search costs more than the copy it saves).
pub(super) fn newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut at = 0;
    for chunk in bytes.chunks_exact(8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        // A zero byte in `x` is a newline in `word`; the test has no false positives
        // below the first zero byte, and the exact place is found below.
        let x = u64::from_le_bytes(word) ^ (ONES * u64::from(b'\n'));
        if x.wrapping_sub(ONES) & !x & HIGHS != 0 {
            break;
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b == b'\n').map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_is_found_at_every_offset() {
        for len in 0..40 {
            let mut bytes = vec![b'x'; len];
            assert_eq!(newline(&bytes), None);
            for at in 0..len {
                bytes.fill(b'x');
                bytes[at] = b'\n';
                if at + 1 < len {
                    bytes[len - 1] = b'\n';
                }
                assert_eq!(newline(&bytes), Some(at), "len {len} at {at}");
                // Bytes one off a newline in every lane are not one.
                bytes.fill(b'\n' ^ 1);
                bytes[at] = b'\n';
                assert_eq!(newline(&bytes), Some(at), "len {len} at {at}");
            }
        }
    }

    /// Every line comes out whole and numbered, including those that straddle two reads
    /// of the buffer, across files and up to a torn last line.
    #[test]
    fn lines_straddling_reads_come_out_whole() {
        let dir = std::env::temp_dir().join(format!("bxctl-lines-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        // Lengths that do not divide the 64 KiB buffer, so lines land across its ends.
        let first: Vec<Vec<u8>> = (0..900u32)
            .map(|i| vec![b'a' + u8::try_from(i % 26).unwrap_or(0); 150 + (i as usize * 37) % 700])
            .collect();
        let mut text = first.join(&b'\n');
        text.push(b'\n');
        std::fs::write(dir.join("2026-09-17.jsonl"), &text).expect("write");
        std::fs::write(dir.join("2026-09-18.jsonl"), b"").expect("write");
        std::fs::write(dir.join("2026-09-19.jsonl"), b"one\n\ntorn").expect("write");
        let mut got = Vec::new();
        let ended = lines(&dir, |file, n, bytes| {
            got.push((file.to_owned(), n, bytes.to_vec()));
            Ok(())
        })
        .expect("lines");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(!ended, "the last line is torn");
        let mut want: Vec<(String, u64, Vec<u8>)> = first
            .into_iter()
            .zip(1..)
            .map(|(l, n)| ("2026-09-17.jsonl".to_owned(), n, l))
            .collect();
        for (n, l) in [(1, &b"one"[..]), (2, b""), (3, b"torn")] {
            want.push(("2026-09-19.jsonl".to_owned(), n, l.to_vec()));
        }
        assert_eq!(got.len(), want.len());
        assert!(got == want, "lines differ");
    }
}
