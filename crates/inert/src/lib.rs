//! Foreign text made inert for a screen: the one rule for what the model, a tool or a peer
//! wrote, wherever boxmaker shows it (bxctl's terminal output, gatewayd's Mattermost posts).
//!
//! A character that would be invisible or would move other text ([`hidden`]: controls,
//! including ESC, CR and newline; line and paragraph separators; bidi overrides and
//! isolates; zero-width, format and default-ignorable characters; unusual spaces; private
//! use and unassigned code points) is shown as `\u{…}`, and so is the backslash of a `\u{`
//! already in the text, so no escape can be faked. The set is derived from Unicode's own
//! character properties (the Unicode Consortium's ICU4X data, compiled in), not from a list
//! kept by hand. A single-line field (a tool name, an id, a grant name, a detail) is shown
//! with [`line`]: it stays one line. Text of several lines (a model reply, a message) is
//! shown with [`block`] or [`Block`]: every line starts with [`MARK`], so it can never draw
//! a line that looks like one the program writes itself. [`breaks_line`] says which
//! characters end a line for a reader (the model included), for rules that look at the
//! start of each line.

use std::fmt::Write as _;

use icu_properties::props::{
    DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup, LineBreak, WhiteSpace,
};
use icu_properties::{CodePointMapData, CodePointSetData};

/// What starts every line of foreign multi-line text (`|` alone on an empty line).
pub const MARK: &str = "| ";

/// The general categories of code points that are not a visible character: controls (Cc:
/// C0 with ESC, CR and LF, DEL, C1 with NEL), format characters (Cf: zero-width spaces and
/// joiners, the byte-order mark, every bidi embedding, override, isolate and mark, the soft
/// hyphen, tag characters, the invisible operators), the line and paragraph separators
/// (Zl, Zp), private use (Co: a font decides what it is), surrogates (Cs) and unassigned
/// code points (Cn: what a later Unicode makes of them is unknown here).
const HIDDEN_CATEGORIES: GeneralCategoryGroup = GeneralCategoryGroup::Control
    .union(GeneralCategoryGroup::Format)
    .union(GeneralCategoryGroup::LineSeparator)
    .union(GeneralCategoryGroup::ParagraphSeparator)
    .union(GeneralCategoryGroup::PrivateUse)
    .union(GeneralCategoryGroup::Surrogate)
    .union(GeneralCategoryGroup::Unassigned);

/// Whether `c` would be invisible or move other text when shown: a code point of
/// [`HIDDEN_CATEGORIES`], any `White_Space` but the plain space (tabs, line ends, no-break
/// and other unusual spaces), any `Default_Ignorable_Code_Point` (variation selectors, the
/// combining grapheme joiner, Hangul and Mongolian fillers and selectors, whatever Unicode
/// reserves to be ignored), and a few visible-looking blanks and overlays Unicode gives
/// no such property (the braille blank U+2800, which renders as a space, and the combining
/// overlays U+0334..U+0338 and U+20D2..U+20D3, which strike through the character before).
pub fn hidden(c: char) -> bool {
    if c.is_ascii() {
        // The same answer as below, without a table look-up for the common case.
        return c.is_ascii_control();
    }
    HIDDEN_CATEGORIES.contains(CodePointMapData::<GeneralCategory>::new().get(c))
        || CodePointSetData::new::<WhiteSpace>().contains(c)
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || matches!(c, '\u{2800}' | '\u{0334}'..='\u{0338}' | '\u{20d2}'..='\u{20d3}')
}

/// Whether `c` ends a line: Unicode's mandatory line breaks (UAX #14's classes BK, CR, LF
/// and NL: LF, CR, VT, FF, NEL, U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR). A
/// reader, a model's tokenizer included, may start a new line after any of them, not only
/// after `\n`. Every one of them is also [`hidden`].
pub fn breaks_line(c: char) -> bool {
    matches!(
        CodePointMapData::<LineBreak>::new().get(c),
        LineBreak::MandatoryBreak
            | LineBreak::CarriageReturn
            | LineBreak::LineFeed
            | LineBreak::NextLine
    )
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
