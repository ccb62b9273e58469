//! inferproxy is the witness (issue 17, docs/decisions.md W1–W4). A chat request is
//! forwarded only if it is witnessable (`proto::attest::witnessable`: every field on the
//! fixed list, proto's tools, no prefill); its answer is relayed byte for byte while a copy
//! is parsed ([`Tee`]) with the same assembly loopd uses. The event that ends the stream,
//! `data: [DONE]`, is held back at the blank line that completes it: inferproxy first
//! reports the completion to brokerd on `witness.sock` and waits (bounded by
//! `infer.witness_timeout`) for `witness_recorded`. Only then does loopd get `[DONE]`;
//! without the acknowledgement the stream ends without it, which loopd takes as a cut (its
//! calls are never sent to brokerd).

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use daemon::conn::{CallError, Conn};
use proto::attest::{Answer, CompletionId, Piece, WitnessReport};
use proto::composed::streamed::AnswerDigests;
use proto::{Hash32, Message};
use strict_http::{EventParser, HttpError, MAX_SSE_EVENT, MAX_SSE_LINE, sse_line};

/// A chat request that will be witnessed: its completion's id and its messages' digests.
#[derive(Debug, Clone)]
pub(crate) struct Witnessing {
    pub completion: CompletionId,
    pub prompt: Vec<Hash32>,
}

impl Witnessing {
    /// A fresh completion id for a request whose messages have these digests.
    pub fn start(prompt: Vec<Hash32>) -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        Ok(Self {
            completion: CompletionId::from_random(bytes),
            prompt,
        })
    }
}

/// Why a completion was not witnessed (the stream is then cut, without `[DONE]`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum WitnessError {
    /// The copy of the stream is not a stream loopd would read (its own readers refuse it),
    /// or an event is not part of an answer (a server's error chunk, not a chunk at all).
    #[error("{0}")]
    Copy(WitnessErrorKind),
    /// brokerd's witness socket cannot be reached.
    #[error("brokerd's witness.sock: {0}")]
    Connect(std::io::Error),
    /// brokerd did not acknowledge the report (in time).
    #[error("reporting to brokerd: {0}")]
    Report(CallError),
    /// brokerd answered otherwise than `witness_recorded` for this completion.
    #[error("brokerd answered the report with {0}")]
    Answered(String),
}

/// What a piece of the answer gives to forward.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// These bytes go on now.
    Forward(Vec<u8>),
    /// The `[DONE]` event is complete: `before` goes on now, `held` (its blank line and
    /// anything after it) only once brokerd has the report.
    Done { before: Vec<u8>, held: Vec<u8> },
    /// The copy cannot be witnessed: `before` goes on, then the stream is cut.
    Broken {
        before: Vec<u8>,
        why: WitnessErrorKind,
    },
}

/// [`WitnessError`]'s stream cases, comparable for tests.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WitnessErrorKind {
    #[error("the answer's stream: {0}")]
    Stream(String),
    #[error("the answer: {0}")]
    Answer(String),
}

/// The copy of an answer's stream: whole lines parsed as loopd's reader parses them, the
/// answer assembled and its digests kept up, and the bytes of a line not yet whole kept
/// back until it is. Bytes that already went on ([`Tee::seen`]) are not given back again.
#[derive(Debug)]
pub(crate) struct Tee {
    partial: Vec<u8>,
    /// How many bytes at the front of `partial` already went on.
    ahead: usize,
    first: bool,
    events: EventParser,
    pub answer: Answer,
    digests: AnswerDigests,
}

impl Tee {
    /// The copy of an answer to a prompt that asked for a summary (`summary`,
    /// `composed::asks_summary`) or not.
    pub fn new(summary: bool) -> Self {
        Self {
            partial: Vec::new(),
            ahead: 0,
            first: true,
            events: EventParser::new(MAX_SSE_EVENT),
            answer: Answer::default(),
            digests: AnswerDigests::new(summary),
        }
    }

    /// Takes the next bytes of the body: what goes on now, and whether the stream ends here.
    pub fn push(&mut self, bytes: &[u8]) -> Pushed {
        let mut pushed = self.lines(bytes);
        match &mut pushed {
            Pushed::Forward(before) | Pushed::Broken { before, .. } => self.strip(before),
            Pushed::Done { before, held } => {
                self.strip(before);
                self.strip(held);
            }
        }
        pushed
    }

    /// Takes bytes of the body that already went on, which cannot hold the end of the stream
    /// (they do not hold `[DONE]`): `Err` when the copy cannot be witnessed.
    pub fn seen(&mut self, bytes: &[u8]) -> Result<(), WitnessErrorKind> {
        match self.lines(bytes) {
            Pushed::Forward(_) => {
                self.ahead = self.partial.len();
                Ok(())
            }
            Pushed::Broken { why, .. } => Err(why),
            Pushed::Done { .. } => Err(WitnessErrorKind::Stream(
                "the stream's end went on before it was witnessed".into(),
            )),
        }
    }

    /// Whether no event is half taken: none of its data lines was read without the blank
    /// line that ends it.
    pub fn between_events(&self) -> bool {
        self.events.data().is_none()
    }

    /// Whether the line kept back (not yet whole) holds `bytes`.
    pub fn kept_back_holds(&self, bytes: &[u8]) -> bool {
        memchr::memmem::find(&self.partial, bytes).is_some()
    }

    /// The bytes kept back that did not go on yet, which go on now: before the copy takes
    /// the rest of the body with [`Tee::seen`], or at the body's end (a last line without
    /// its end).
    pub fn release(&mut self) -> Vec<u8> {
        let out = self.partial[self.ahead..].to_vec();
        self.ahead = self.partial.len();
        out
    }

    /// Drops from the front of `out` the bytes that already went on.
    fn strip(&mut self, out: &mut Vec<u8>) {
        let n = self.ahead.min(out.len());
        out.drain(..n);
        self.ahead -= n;
    }

    /// The next bytes of the body, every byte they complete given back.
    fn lines(&mut self, bytes: &[u8]) -> Pushed {
        let mut data = std::mem::take(&mut self.partial);
        data.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(lf) = data[start..].iter().position(|&b| b == b'\n') {
            let end = start + lf + 1;
            let first = std::mem::take(&mut self.first);
            let broken = |why, data: &mut Vec<u8>| {
                data.truncate(end);
                Pushed::Broken {
                    before: std::mem::take(data),
                    why,
                }
            };
            let line = match sse_line(&data[start..end], first, MAX_SSE_LINE) {
                Ok(line) => line,
                Err(e) => return broken(WitnessErrorKind::Stream(e.to_string()), &mut data),
            };
            if line.is_empty() && self.events.data() == Some("[DONE]\n") {
                let held = data.split_off(start);
                return Pushed::Done { before: data, held };
            }
            match self.events.line(line) {
                Ok(Some(event)) => {
                    let digests = &mut self.digests;
                    let text = |piece: Piece<'_>| {
                        if let Piece::Text(t) = piece {
                            digests.text(t);
                        }
                    };
                    if let Err(e) = self.answer.feed(&event.data, text) {
                        return broken(WitnessErrorKind::Answer(e.to_string()), &mut data);
                    }
                }
                Ok(None) => {}
                Err(e) => return broken(WitnessErrorKind::Stream(e.to_string()), &mut data),
            }
            start = end;
        }
        self.partial = data.split_off(start);
        if self.partial.len() > MAX_SSE_LINE + 2 {
            let why = WitnessErrorKind::Stream(
                HttpError::SseLineTooLong {
                    limit: MAX_SSE_LINE,
                }
                .to_string(),
            );
            data.append(&mut self.partial);
            return Pushed::Broken { before: data, why };
        }
        Pushed::Forward(data)
    }

    /// The report of this answer.
    pub fn report(&self, w: &Witnessing) -> WitnessReport {
        let (answer, forms) = self.digests.finish(&self.answer);
        WitnessReport {
            completion: w.completion.clone(),
            prompt: w.prompt.clone(),
            answer,
            calls: self.answer.tool_calls.clone(),
            finish: self.answer.finish.clone().unwrap_or_else(|| "none".into()),
            runnable: self.answer.runnable(),
            forms,
        }
    }
}

/// Sends `report` to brokerd at `sock` and waits for its acknowledgement, each step within
/// `timeout`.
pub(crate) fn report(
    sock: &Path,
    timeout: Duration,
    report: WitnessReport,
) -> Result<(), WitnessError> {
    let stream = UnixStream::connect(sock).map_err(WitnessError::Connect)?;
    let mut conn = Conn::new(stream, timeout, timeout);
    let completion = report.completion.clone();
    let answer = conn
        .call(1, Message::WitnessReport(report), |_| {})
        .map_err(WitnessError::Report)?;
    match answer.msg {
        Message::WitnessRecorded(r) if r.completion == completion => Ok(()),
        Message::Error(e) => Err(WitnessError::Answered(format!(
            "error {}: {}",
            e.code.name(),
            e.detail
        ))),
        other => Err(WitnessError::Answered(other.kind().to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forwarded(p: Pushed) -> Vec<u8> {
        match p {
            Pushed::Forward(b) => b,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_done_event_is_held_at_its_blank_line_and_every_byte_goes_on_in_order() {
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n",
            "data: [DONE]\n\n"
        )
        .as_bytes();
        // Cut at every place: what goes on, then what is held, is the stream itself.
        for cut in 0..stream.len() {
            let mut tee = Tee::new(false);
            let mut out = forwarded(tee.push(&stream[..cut]));
            match tee.push(&stream[cut..]) {
                Pushed::Done { before, held } => {
                    out.extend(before);
                    assert!(out.ends_with(b"data: [DONE]\n"), "{cut}");
                    assert_eq!(held, b"\n", "{cut}");
                    out.extend(held);
                }
                Pushed::Forward(b) => panic!("{cut}: no [DONE] seen: {b:?}"),
                other => panic!("{cut}: {other:?}"),
            }
            assert_eq!(out, stream, "{cut}");
            assert_eq!(tee.answer.content.as_deref(), Some("Hi"));
            assert!(tee.answer.runnable());
        }
    }

    #[test]
    fn a_line_loopd_would_refuse_or_an_error_chunk_breaks_the_witness() {
        let mut tee = Tee::new(false);
        let got = tee.push(b"data: {\"error\":{\"code\":500}}\n\ndata: [DONE]\n\n");
        assert!(
            matches!(&got, Pushed::Broken { before, why: WitnessErrorKind::Answer(_) }
                if before == b"data: {\"error\":{\"code\":500}}\n\n"),
            "{got:?}"
        );
        let mut tee = Tee::new(false);
        let got = tee.push(b"data: x\rdata: [DONE]\n\n");
        assert!(
            matches!(
                got,
                Pushed::Broken {
                    why: WitnessErrorKind::Stream(_),
                    ..
                }
            ),
            "{got:?}"
        );
        // A [DONE] spread over two data lines is not the end loopd reads: not held.
        let mut tee = Tee::new(false);
        let got = tee.push(b"data: [DONE]\ndata: x\n\n");
        assert!(matches!(got, Pushed::Broken { .. }), "{got:?}");
    }
}
