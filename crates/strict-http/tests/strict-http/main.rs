//! strict-http's tests, one module per concern (heads, bodies, the client, SSE): every
//! refusal and edge, each input also fed one byte per read (so no parser depends on how the
//! bytes were split).

mod body;
mod client;
mod head;
mod sse;

use std::io::{self, BufReader, Read};

/// What a refusal case expects of the error.
type Expect = fn(&strict_http::HttpError) -> bool;

/// Hands out one byte per `read`.
struct OneByte<'a>(&'a [u8]);

impl Read for OneByte<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((&b, rest)), Some(slot)) => {
                *slot = b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

/// `input` fed whole, and one byte per read through a one-byte buffer.
fn both_ways(input: &[u8]) -> [Box<dyn io::BufRead + '_>; 2] {
    [
        Box::new(input),
        Box::new(BufReader::with_capacity(1, OneByte(input))),
    ]
}

/// Hands out `data`, then fails every further read with `WouldBlock`, like a socket whose
/// peer has sent no more yet (with a read timeout).
struct ThenWait<'a>(&'a [u8]);

impl Read for ThenWait<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = self.0.read(buf)?;
        Ok(n)
    }
}
