use std::io::{self, Read};

use proto::{FrameError, MAX_FRAME, read_envelope, read_frame};

/// A reader that counts what it hands out, and has endless data behind any header.
struct Counting {
    header: [u8; 4],
    served: usize,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        buf[0] = if self.served < 4 {
            self.header[self.served]
        } else {
            b'x'
        };
        self.served += 1;
        Ok(1)
    }
}

#[test]
fn a_refused_length_reads_nothing_after_the_prefix() {
    let too_large = u32::try_from(MAX_FRAME + 1).expect("len");
    for (len, zero) in [(0u32, true), (too_large, false), (u32::MAX, false)] {
        let mut r = Counting {
            header: len.to_be_bytes(),
            served: 0,
        };
        let err = read_frame(&mut r).expect_err("refused");
        assert_eq!(r.served, 4, "read past the prefix for {len}");
        assert!(matches!(
            (zero, err),
            (true, FrameError::Empty) | (false, FrameError::TooLarge { .. })
        ));
    }
}

#[test]
fn the_largest_frame_is_accepted_and_one_more_byte_is_not() {
    let body = vec![b' '; MAX_FRAME];
    let mut wire = Vec::new();
    proto::write_frame(&mut wire, &body).expect("max frame is writable");
    assert_eq!(
        read_frame(&mut wire.as_slice()).expect("read").len(),
        MAX_FRAME
    );
    let over = vec![b' '; MAX_FRAME + 1];
    let mut sink = Vec::new();
    assert!(matches!(
        proto::write_frame(&mut sink, &over),
        Err(FrameError::TooLarge { .. })
    ));
    assert!(sink.is_empty(), "a refused frame wrote bytes");
    assert!(matches!(
        proto::write_frame(&mut sink, b""),
        Err(FrameError::Empty)
    ));
}

/// A deterministic property test: any byte string, and any mutation of a valid frame, is
/// either an envelope or a typed error; the decoder never panics and never asks for more
/// than the length prefix allows. (The cargo-fuzz target `frame` explores the same property
/// with coverage guidance and an allocation limit.)
#[test]
fn the_decoder_never_panics_on_random_or_mutated_input() {
    let valid =
        std::fs::read(crate::fixture_dir().join("message_tool_request.json")).expect("fixture");
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..20_000u32 {
        let mut bytes = if round % 2 == 0 {
            let mut f = u32::try_from(valid.len())
                .expect("len")
                .to_be_bytes()
                .to_vec();
            f.extend_from_slice(&valid);
            for _ in 0..(next() % 4 + 1) {
                let at = usize::try_from(next() % 200).expect("small") % f.len();
                f[at] = u8::try_from(next() & 0xff).expect("byte");
            }
            f
        } else {
            let len = usize::try_from(next() % 64).expect("small");
            (0..len)
                .map(|_| u8::try_from(next() & 0xff).expect("byte"))
                .collect()
        };
        if round % 7 == 0 {
            let keep = usize::try_from(next()).expect("usize") % (bytes.len() + 1);
            bytes.truncate(keep);
        }
        let _ = read_envelope(&mut bytes.as_slice());
    }
}
