//! The copy of a witnessed answer, parsed beside the relay once the answer is long, rather
//! than in its way (issue 17's measure: witnessing costs a long stream at most 5%).
//!
//! The first [`ALONE`] bytes are parsed on the relay's own thread, every byte going through
//! [`Tee::push`] before it goes on: most answers end there, and a thread would cost them
//! more than it saves. Past that, from a read after which no event is half taken and the
//! line kept back does not hold `[DONE]` (either could be the end's data line), and until the
//! stream can end, the bytes read go on at once,
//! as they would unwitnessed, and a thread of the exchange's own parses them
//! ([`Tee::seen`]), taking them in batches. The end is the `data: [DONE]` event, whose data
//! line holds the bytes `[DONE]` whole: the first read that holds them (counting a match
//! across reads) brings the copy back to the relay, which waits for the thread to catch up;
//! from there on every byte goes through [`Tee::push`] again, so that the event's closing
//! blank line is held until brokerd has the report. A copy that cannot be witnessed stops
//! its thread; the relay sees it at its next read, or at the end of the body, and cuts the
//! stream there.

use std::sync::mpsc::{self, SyncSender};
use std::thread::{self, JoinHandle};

use memchr::memmem;

use crate::witness::{Pushed, Tee, WitnessErrorKind};

/// The bytes the end of the stream must hold.
const END: &[u8] = b"[DONE]";
/// How much of the body is parsed on the relay's thread before the copy gets its own.
const ALONE: usize = 64 * 1024;
/// How much is handed to the thread at once.
const BATCH: usize = 64 * 1024;
/// How many batches may wait for the thread before the relay waits for it.
const QUEUED: usize = 4;

/// A witnessed answer's copy.
#[derive(Debug)]
pub(crate) struct Watch {
    at: At,
    /// Body bytes read so far.
    read: usize,
    /// The last bytes read, for a match of [`END`] across reads.
    last: Vec<u8>,
}

#[derive(Debug)]
enum At {
    /// Parsed here, before the answer is long.
    Start(Tee),
    /// Parsed on its thread.
    Behind {
        batch: Vec<u8>,
        queue: SyncSender<Vec<u8>>,
        thread: JoinHandle<(Tee, Result<(), WitnessErrorKind>)>,
    },
    /// Parsed here, once the stream can end (or when no thread could start).
    End(Tee),
    /// The copy is gone: its thread stopped on a copy that cannot be witnessed, or panicked.
    Lost,
}

impl Watch {
    /// The copy of an answer to a prompt that asked for a summary (`summary`) or not.
    pub fn new(summary: bool) -> Self {
        Self {
            at: At::Start(Tee::new(summary)),
            read: 0,
            last: Vec::new(),
        }
    }

    /// Takes the next bytes read from the body: `None` when they all go on now, as they
    /// are; else what the [`Tee`] says.
    pub fn push(&mut self, bytes: &[u8]) -> Option<Pushed> {
        let ends = memmem::find(bytes, END).is_some() || across(&self.last, bytes);
        keep_last(&mut self.last, bytes);
        self.read += bytes.len();
        match &mut self.at {
            At::Start(tee) if !ends && self.read > ALONE => {
                let pushed = tee.push(bytes);
                // Only once these bytes are taken, and only where no event is half taken and
                // the line kept back does not hold the end: else the end's data line may be
                // behind us, its blank line still to come.
                let Pushed::Forward(mut out) = pushed else {
                    return Some(pushed);
                };
                if tee.between_events() && !tee.kept_back_holds(END) {
                    out.extend(tee.release());
                    self.behind();
                }
                Some(Pushed::Forward(out))
            }
            At::Start(tee) | At::End(tee) => Some(tee.push(bytes)),
            At::Behind {
                batch,
                queue,
                thread,
            } if !ends && !thread.is_finished() => {
                batch.extend_from_slice(bytes);
                if batch.len() >= BATCH {
                    let full = std::mem::replace(batch, Vec::with_capacity(BATCH));
                    // A closed queue is a thread that stopped: seen at the next read.
                    let _ = queue.send(full);
                }
                None
            }
            At::Behind { .. } | At::Lost => Some(match self.here() {
                Ok(tee) => tee.push(bytes),
                Err(why) => Pushed::Broken {
                    before: Vec::new(),
                    why,
                },
            }),
        }
    }

    /// Hands the copy to a thread of its own (or keeps it here when none can start).
    fn behind(&mut self) {
        let At::Start(tee) = std::mem::replace(&mut self.at, At::Lost) else {
            return;
        };
        let (queue, batches) = mpsc::sync_channel::<Vec<u8>>(QUEUED);
        // The copy goes to the thread once it runs, so that it stays here if none can start.
        let (give, take) = mpsc::channel::<Tee>();
        let spawned = thread::Builder::new()
            .name("witness".into())
            .spawn(move || {
                let Ok(mut tee) = take.recv() else {
                    return (Tee::new(false), Err(lost()));
                };
                for batch in batches {
                    if let Err(why) = tee.seen(&batch) {
                        return (tee, Err(why));
                    }
                }
                (tee, Ok(()))
            });
        self.at = match spawned {
            Ok(thread) => match give.send(tee) {
                Ok(()) => At::Behind {
                    batch: Vec::with_capacity(BATCH),
                    queue,
                    thread,
                },
                Err(mpsc::SendError(tee)) => At::End(tee),
            },
            Err(_) => At::End(tee),
        };
    }

    /// The copy, here, once the thread has taken every batch: `Err` when it cannot be
    /// witnessed.
    pub fn here(&mut self) -> Result<&mut Tee, WitnessErrorKind> {
        if let At::Behind { .. } = self.at {
            let At::Behind {
                batch,
                queue,
                thread,
            } = std::mem::replace(&mut self.at, At::Lost)
            else {
                return Err(lost());
            };
            if !batch.is_empty() {
                let _ = queue.send(batch);
            }
            drop(queue);
            match thread.join() {
                Ok((tee, Ok(()))) => self.at = At::End(tee),
                Ok((_, Err(why))) => return Err(why),
                Err(_) => return Err(lost()),
            }
        }
        match &mut self.at {
            At::Start(tee) | At::End(tee) => Ok(tee),
            At::Behind { .. } | At::Lost => Err(lost()),
        }
    }

    /// What is still kept back at the end of the body and did not go on yet; `Err` when
    /// the copy could not be witnessed, so that the stream is cut rather than ended.
    pub fn rest(mut self) -> Result<Vec<u8>, WitnessErrorKind> {
        Ok(self.here()?.release())
    }
}

fn lost() -> WitnessErrorKind {
    WitnessErrorKind::Stream("the copy's thread stopped".into())
}

/// Whether [`END`] starts in `last` (at most its length less one) and ends in `bytes`.
fn across(last: &[u8], bytes: &[u8]) -> bool {
    let mut seam = [0u8; 2 * END.len()];
    let from = &bytes[..bytes.len().min(END.len() - 1)];
    let len = last.len() + from.len();
    seam[..last.len()].copy_from_slice(last);
    seam[last.len()..len].copy_from_slice(from);
    memmem::find(&seam[..len], END).is_some()
}

/// Keeps the last bytes read that could start [`END`].
fn keep_last(last: &mut Vec<u8>, bytes: &[u8]) {
    let keep = END.len() - 1;
    last.extend_from_slice(&bytes[bytes.len().saturating_sub(keep)..]);
    let extra = last.len().saturating_sub(keep);
    last.drain(..extra);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `events` as a stream, ended by a finish and `[DONE]`.
    fn stream(texts: &[String]) -> Vec<u8> {
        let mut out = String::new();
        for t in texts {
            let delta = serde_json::json!({"choices": [{"delta": {"content": t}}]});
            out.push_str(&format!("data: {delta}\n\n"));
        }
        out.push_str("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
        out.push_str("data: [DONE]\n\n");
        out.into_bytes()
    }

    /// Pushes `stream` in reads of `size`: every byte that goes on, in order, up to the
    /// held end; the held bytes; whether the copy was on its thread at some read.
    fn run(stream: &[u8], size: usize) -> (Vec<u8>, Vec<u8>, bool, Watch) {
        let mut watch = Watch::new(false);
        let mut out = Vec::new();
        let mut behind = false;
        for read in stream.chunks(size) {
            behind |= matches!(watch.at, At::Behind { .. });
            match watch.push(read) {
                None => out.extend_from_slice(read),
                Some(Pushed::Forward(b)) => out.extend(b),
                Some(Pushed::Done { before, held }) => {
                    out.extend(before);
                    return (out, held, behind, watch);
                }
                Some(Pushed::Broken { why, .. }) => panic!("{why:?}"),
            }
        }
        panic!("no end");
    }

    /// The end's data line read up to the copy's 64 KiB alone, the rest of its event after
    /// (every way an event's lines can end and follow): its closing blank line is held.
    #[test]
    fn an_end_begun_before_the_copy_could_move_is_held() {
        let tails: [&[&[u8]]; 5] = [
            &[b"\n", b"\n"],
            &[b"\r", b"\n", b"\r\n"],
            &[b"\n", b"id: 1\n", b"\n"],
            &[b"\n", b": c\n", b"\n"],
            &[b"\n\n"],
        ];
        let head = b"data: [DONE]";
        for tail in tails {
            // The first read ends with the end's data line, at exactly 64 KiB of body.
            let framing = stream(&[String::new()]).len() - "data: [DONE]\n\n".len();
            let mut first = stream(&["x".repeat(ALONE - head.len() - framing)]);
            first.truncate(first.len() - "\n\n".len());
            assert!(
                first.ends_with(head) && first.len() == ALONE,
                "{}",
                first.len()
            );
            let reads: Vec<&[u8]> = std::iter::once(&first[..])
                .chain(tail.iter().copied())
                .collect();
            let mut watch = Watch::new(false);
            let mut out = Vec::new();
            let mut held = None;
            for read in &reads {
                assert!(held.is_none(), "{tail:?}: bytes after the end");
                match watch.push(read) {
                    None => out.extend_from_slice(read),
                    Some(Pushed::Forward(b)) => out.extend(b),
                    Some(Pushed::Done { before, held: h }) => {
                        out.extend(before);
                        held = Some(h);
                    }
                    Some(Pushed::Broken { why, .. }) => panic!("{tail:?}: {why:?}"),
                }
            }
            let held = held.unwrap_or_else(|| panic!("{tail:?}: the end went on unheld"));
            assert!(!held.is_empty(), "{tail:?}");
            out.extend(held);
            assert!(out == reads.concat(), "{tail:?}: every byte once, in order");
        }
    }

    #[test]
    fn a_long_answer_goes_on_whole_its_end_held_and_its_copy_the_same() {
        // `[DONE]` in the text, past the first reads: the copy comes back early.
        let texts: Vec<String> = (0..1000)
            .map(|i| {
                let end = if i == 800 { "[DONE]" } else { "" };
                format!("{i} \"é\\ {end} {}", "x".repeat(i % 700))
            })
            .collect();
        let stream = stream(&texts);
        let mut alone = Tee::new(false);
        let Pushed::Done { .. } = alone.push(&stream) else {
            panic!("no end")
        };
        for size in [1, 5, 6, 7, 420, 4096, 70_000, stream.len()] {
            let (mut out, held, behind, mut watch) = run(&stream, size);
            assert_eq!(held, b"\n", "{size}");
            out.extend(held);
            assert!(out == stream, "{size}: every byte once, in order");
            let whole = size == stream.len();
            assert_eq!(
                behind, !whole,
                "{size}: on the thread past the first 64 KiB"
            );
            let tee = watch.here().expect("the copy");
            assert_eq!(tee.answer, alone.answer, "{size}");
        }
    }
}
