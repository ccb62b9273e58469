//! Foreign text made inert for a screen: the one rule for what the model, a tool or a peer
//! wrote, wherever boxmaker shows it (bxctl's terminal output, gatewayd's Mattermost posts).
//!
//! A character that would be invisible or would move other text ([`hidden`]: controls,
//! including ESC, CR and newline; bidi overrides and isolates; zero-width and format
//! characters) is shown as `\u{…}`, and so is the backslash of a `\u{` already in the text,
//! so no escape can be faked. A single-line field (a tool name, an id, a grant name, a
//! detail) is shown with [`line`]: it stays one line. Text of several lines (a model reply,
//! a message) is shown with [`block`] or [`Block`]: every line starts with [`MARK`], so it
//! can never draw a line that looks like one the program writes itself.

use std::fmt::Write as _;

/// What starts every line of foreign multi-line text (`|` alone on an empty line).
pub const MARK: &str = "| ";

/// Whether `c` would be invisible or move other text when shown: controls, format and bidi
/// characters, zero-width and unusual spaces, tag characters.
pub fn hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c,
            '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}'
            | '\u{17b5}' | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}' | '\u{ffa0}' | '\u{fff0}'..='\u{fffb}' | '\u{e0000}'..='\u{e0fff}'
            // Format characters elsewhere, blanks, overlays, private use.
            | '\u{0600}'..='\u{0605}' | '\u{06dd}' | '\u{070f}' | '\u{0890}'..='\u{0891}'
            | '\u{08e2}' | '\u{110bd}' | '\u{110cd}' | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}' | '\u{2800}'
            | '\u{0334}'..='\u{0338}' | '\u{20d2}'..='\u{20d3}' | '\u{e000}'..='\u{f8ff}'
            | '\u{f0000}'..='\u{10ffff}')
}

/// The escaper's memory of a `\` or `\u` not yet shown (the next character decides whether
/// it starts a `\u{`, which must be escaped). Text arrives in pieces, so it is kept across.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Held {
    #[default]
    Nothing,
    Backslash,
    BackslashU,
}

#[derive(Debug, Default)]
struct Escaper {
    held: Held,
}

impl Escaper {
    fn push(&mut self, c: char, out: &mut String) {
        match (self.held, c) {
            (Held::Backslash, 'u') => self.held = Held::BackslashU,
            (Held::BackslashU, '{') => {
                out.push_str("\\u{005c}u{");
                self.held = Held::Nothing;
            }
            (Held::Nothing, '\\') => self.held = Held::Backslash,
            (Held::Nothing, c) => {
                if hidden(c) {
                    let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
                } else {
                    out.push(c);
                }
            }
            (Held::Backslash | Held::BackslashU, c) => {
                self.flush(out);
                self.push(c, out);
            }
        }
    }

    /// Shows what is held as it is: no `{` follows.
    fn flush(&mut self, out: &mut String) {
        match std::mem::take(&mut self.held) {
            Held::Nothing => {}
            Held::Backslash => out.push('\\'),
            Held::BackslashU => out.push_str("\\u"),
        }
    }
}

/// `text` as one line: every hidden character (a newline too) shown as `\u{…}`.
pub fn line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escaper = Escaper::default();
    for c in text.chars() {
        escaper.push(c, &mut out);
    }
    escaper.flush(&mut out);
    out
}

/// `text` set apart as a block: every line starts with [`MARK`] and shows its hidden
/// characters escaped; the block ends with a newline. Empty text is no block at all.
pub fn block(text: &str) -> String {
    let mut b = Block::default();
    let mut out = b.push(text);
    out.push_str(&b.end());
    out
}

/// [`block`] for text that arrives in pieces (a reply as it streams): each piece is shown
/// as soon as it arrives.
#[derive(Debug)]
pub struct Block {
    escaper: Escaper,
    /// Whether the next character starts a line (so [`MARK`] comes first).
    at_start: bool,
}

impl Default for Block {
    fn default() -> Self {
        Self {
            escaper: Escaper::default(),
            at_start: true,
        }
    }
}

impl Block {
    /// The next piece, as it is to be shown.
    pub fn push(&mut self, piece: &str) -> String {
        let mut out = String::with_capacity(piece.len() + MARK.len());
        for c in piece.chars() {
            if c == '\n' {
                self.escaper.flush(&mut out);
                if self.at_start {
                    out.push_str(MARK.trim_end());
                }
                out.push('\n');
                self.at_start = true;
            } else {
                if self.at_start {
                    out.push_str(MARK);
                    self.at_start = false;
                }
                self.escaper.push(c, &mut out);
            }
        }
        out
    }

    /// Ends the block: what is held, and a newline unless the last line is ended. The
    /// next piece starts a new line (with [`MARK`]).
    pub fn end(&mut self) -> String {
        let mut out = String::new();
        self.escaper.flush(&mut out);
        if !self.at_start {
            out.push('\n');
            self.at_start = true;
        }
        out
    }
}
