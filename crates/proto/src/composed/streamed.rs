//! The digests of an answer's forms ([`super::answer_forms`] and [`Answer::message`]),
//! kept up as its text streams in, so that little is left to hash when the stream ends.
//!
//! Every form whose content is the answer's text has canonical bytes `{"content":"`, a head
//! (empty, or [`SUMMARY_HEAD`]), the escaped text, then the rest of the message: `content`
//! is the first key in sorted order, and serde_json escapes a string character by
//! character, so the text's pieces can be escaped and hashed one by one as they arrive.
//! What follows the text (reasoning, role, calls) is known only at the end and hashed then.

use sha2::{Digest, Sha256};

use super::{Form, SUMMARY_HEAD, distinct, forms};
use crate::Hash32;
use crate::attest::{Answer, ChatMessage};

/// What a form's canonical bytes start with when it has text.
const OPEN: &[u8] = b"{\"content\":\"";

/// The running digests of an answer's text under each head.
#[derive(Debug, Clone)]
pub struct AnswerDigests {
    /// `OPEN` and the text so far.
    plain: Sha256,
    /// `OPEN`, the summary's head and the text so far, when the prompt asked for a summary.
    summary: Option<Sha256>,
    escaped: Vec<u8>,
}

impl AnswerDigests {
    /// The digests of an answer to a prompt that asked for a summary (`summary`,
    /// [`super::asks_summary`]) or not.
    pub fn new(summary: bool) -> Self {
        let mut plain = Sha256::new();
        plain.update(OPEN);
        let summary = summary.then(|| {
            let mut state = plain.clone();
            state.update(escape(SUMMARY_HEAD, &mut Vec::new()));
            state
        });
        Self {
            plain,
            summary,
            escaped: Vec::new(),
        }
    }

    /// Takes the next piece of the answer's text, as [`Answer::feed`] hands it over.
    pub fn text(&mut self, piece: &str) {
        let escaped = escape(piece, &mut self.escaped);
        self.plain.update(escaped);
        if let Some(state) = &mut self.summary {
            state.update(escaped);
        }
    }

    /// The digest of the answer's message and its other forms' ([`super::answer_forms`]),
    /// for the answer whose every text piece this took.
    pub fn finish(&self, answer: &Answer) -> (Hash32, Vec<Hash32>) {
        let text = answer.content.as_deref();
        let (whole, others) = forms(answer, self.summary.is_some());
        let digest = |f: &Form| {
            let state = match text {
                Some(_) if f.head.is_empty() => Some(&self.plain),
                Some(_) => self.summary.as_ref(),
                None => None,
            };
            // No text (the content is null: nothing big in the message), or a form no state
            // was kept up for: digested whole.
            let Some(state) = state else {
                return f.digest(text);
            };
            let mut state = state.clone();
            state.update(after_text(&f.message));
            Hash32::from_bytes(state.finalize().into())
        };
        let whole = digest(&whole);
        (whole, distinct(whole, others.iter().map(digest)))
    }
}

/// `text` escaped as serde_json writes it inside a string, without the quotes: itself when
/// it holds nothing serde_json escapes (a control character, `"`, `\`), as most text does.
fn escape<'a>(text: &'a str, buf: &'a mut Vec<u8>) -> &'a [u8] {
    if !text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        return text.as_bytes();
    }
    buf.clear();
    // Writing a string to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *buf, text);
    let end = buf.len().saturating_sub(1);
    &buf[1.min(end)..end]
}

/// The canonical bytes of `message` (its content empty) after its content's opening quote.
fn after_text(message: &ChatMessage) -> Vec<u8> {
    let mut bytes = message.canonical();
    debug_assert!(bytes.starts_with(OPEN), "content is the first key");
    bytes.drain(..OPEN.len());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::composed::answer_forms;
    use crate::composed::tests::call;

    /// Every kind of answer: text or none, empty or blank, characters serde_json escapes,
    /// reasoning, calls kept and withdrawn, every finish.
    #[test]
    fn the_streamed_digests_are_the_forms_digests() {
        let texts: [Option<&[&str]>; 8] = [
            None,
            Some(&[]),
            Some(&[""]),
            Some(&["  ", "\n"]),
            Some(&["Hi", " there"]),
            Some(&[
                "quote \" back\\slash ",
                "\u{1}\t\r\n",
                "é✓\u{2028}",
                "</script>",
            ]),
            Some(&["a"; 300]),
            // Each character serde_json escapes alone in its piece, and one it does not.
            Some(&["say \"hi\"", "back\\slash", "tab\t", "\u{1f}", "\u{7f} del"]),
        ];
        let reasonings = [None, Some("thinking \"hard\"\n".to_owned())];
        let calls = [
            vec![],
            vec![call("c1", "{\"url\":\"https://a.example/\"}")],
            vec![call("c1", "{\"url\":1}"), call("c2", "{not json")],
        ];
        let mut seen = 0;
        for text in texts {
            for reasoning in &reasonings {
                for calls in &calls {
                    for (finish, asked) in [None, Some("stop"), Some("tool_calls"), Some("length")]
                        .into_iter()
                        .flat_map(|f| [(f, false), (f, true)])
                    {
                        let mut answer = Answer::default();
                        let mut digests = AnswerDigests::new(asked);
                        for piece in text.into_iter().flatten() {
                            digests.text(piece);
                            answer
                                .content
                                .get_or_insert_with(String::new)
                                .push_str(piece);
                        }
                        answer.reasoning = reasoning.clone();
                        answer.tool_calls = calls.clone();
                        answer.finish = finish.map(str::to_owned);
                        let (whole, others) = digests.finish(&answer);
                        assert_eq!(whole, answer.message().digest(), "{answer:?}");
                        assert_eq!(others, answer_forms(&answer, asked), "{answer:?}");
                        seen += others.len();
                    }
                }
            }
        }
        // The replay and the summary forms are among those compared.
        assert!(seen > 50, "{seen}");
    }
}
