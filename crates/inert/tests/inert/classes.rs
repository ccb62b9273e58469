//! Every class of invisible or line-breaking code point is hidden (shown as its escape, so
//! a line stays one line and nothing hides in it), and visible text of any script is not.

use inert::{Block, block, breaks_line, hidden, line};

/// Each of `chars` is hidden, and shown as its escape, alone and inside a word.
fn all_hidden(class: &str, chars: &[char]) {
    for &c in chars {
        let code = u32::from(c);
        assert!(hidden(c), "{class}: U+{code:04X} is not hidden");
        assert_eq!(
            line(&format!("a{c}b")),
            format!("a\\u{{{code:04x}}}b"),
            "{class}: U+{code:04X}"
        );
    }
}

#[test]
fn zero_width_characters_are_hidden() {
    all_hidden(
        "zero width",
        &[
            '\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{2061}', '\u{2062}', '\u{2063}',
            '\u{2064}', '\u{180e}',
        ],
    );
}

#[test]
fn the_byte_order_mark_is_hidden() {
    all_hidden("byte-order mark", &['\u{feff}']);
}

#[test]
fn bidi_controls_are_hidden() {
    all_hidden(
        "bidi",
        &[
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
        ],
    );
}

#[test]
fn line_and_paragraph_separators_and_every_line_break_are_hidden() {
    let breaks = [
        '\n', '\r', '\u{0b}', '\u{0c}', '\u{85}', '\u{2028}', '\u{2029}',
    ];
    all_hidden("line break", &breaks);
    // So a block never starts a line a reader could take for one of the program's own,
    // whatever breaks it: only `\n` starts a (marked) line.
    assert_eq!(
        block("a\u{2028}b\u{2029}c\u{85}d\re\u{0b}f\u{0c}g"),
        "| a\\u{2028}b\\u{2029}c\\u{0085}d\\u{000d}e\\u{000b}f\\u{000c}g\n"
    );
    let mut b = Block::default();
    assert_eq!(b.push("x\u{2028}#0 ALLOWED"), "| x\\u{2028}#0 ALLOWED");
}

#[test]
fn breaks_line_is_exactly_unicodes_mandatory_breaks() {
    let breaks: Vec<u32> = (0..=0x10_ffff_u32)
        .filter_map(char::from_u32)
        .filter(|&c| breaks_line(c))
        .map(u32::from)
        .collect();
    assert_eq!(breaks, [0x0a, 0x0b, 0x0c, 0x0d, 0x85, 0x2028, 0x2029]);
    assert!(breaks.iter().filter_map(|&c| char::from_u32(c)).all(hidden));
}

#[test]
fn other_controls_are_hidden() {
    all_hidden(
        "control",
        &[
            '\0', '\u{07}', '\u{08}', '\t', '\u{1b}', '\u{7f}', '\u{80}', '\u{9b}', '\u{9f}',
        ],
    );
}

#[test]
fn other_format_characters_are_hidden() {
    all_hidden(
        "format",
        &[
            '\u{00ad}',
            '\u{0600}',
            '\u{0605}',
            '\u{06dd}',
            '\u{070f}',
            '\u{0890}',
            '\u{08e2}',
            '\u{206a}',
            '\u{206f}',
            '\u{fff9}',
            '\u{fffb}',
            '\u{110bd}',
            '\u{13430}',
            '\u{1343f}',
            '\u{1bca0}',
            '\u{1d173}',
            '\u{1d17a}',
        ],
    );
}

#[test]
fn the_soft_hyphen_is_hidden() {
    all_hidden("soft hyphen", &['\u{00ad}']);
}

#[test]
fn variation_selectors_are_hidden() {
    all_hidden(
        "variation selector",
        &[
            '\u{fe00}',
            '\u{fe0f}',
            '\u{e0100}',
            '\u{e01ef}',
            '\u{180b}',
            '\u{180d}',
            '\u{180f}',
        ],
    );
}

#[test]
fn tag_characters_are_hidden() {
    all_hidden(
        "tag",
        &[
            '\u{e0001}',
            '\u{e0020}',
            '\u{e0041}',
            '\u{e007e}',
            '\u{e007f}',
        ],
    );
}

#[test]
fn other_default_ignorable_characters_are_hidden() {
    // The combining grapheme joiner, Hangul fillers, Khmer inherent vowels, reserved ones.
    all_hidden(
        "default ignorable",
        &[
            '\u{034f}',
            '\u{115f}',
            '\u{1160}',
            '\u{3164}',
            '\u{ffa0}',
            '\u{17b4}',
            '\u{17b5}',
            '\u{fff0}',
            '\u{e0080}',
            '\u{e0fff}',
        ],
    );
}

#[test]
fn unusual_spaces_are_hidden_and_the_plain_space_is_not() {
    all_hidden(
        "space",
        &[
            '\u{a0}', '\u{1680}', '\u{2000}', '\u{2007}', '\u{200a}', '\u{202f}', '\u{205f}',
            '\u{3000}',
        ],
    );
    assert!(!hidden(' '));
}

#[test]
fn private_use_and_unassigned_code_points_are_hidden() {
    all_hidden(
        "private use",
        &['\u{e000}', '\u{f8ff}', '\u{f0000}', '\u{10fffd}'],
    );
    // Unassigned (and noncharacters): nothing says how they will look.
    all_hidden(
        "unassigned",
        &[
            '\u{0378}',
            '\u{fdd0}',
            '\u{ffff}',
            '\u{50000}',
            '\u{10ffff}',
        ],
    );
}

#[test]
fn blanks_and_overlays_without_a_property_are_hidden() {
    all_hidden(
        "blank or overlay",
        &['\u{2800}', '\u{0334}', '\u{0338}', '\u{20d2}', '\u{20d3}'],
    );
}

#[test]
fn visible_text_of_any_script_stays_as_it_is() {
    let text = "Ab9 ~\\| é é ß Ωμέγα Привет עברית العربية हिन्दी ไทย 中文 日本語 한국어 \
                ✓ € 😀 🫨 🇫🇷 ∑";
    for c in text.chars() {
        assert!(!hidden(c), "U+{:04X} is hidden", u32::from(c));
    }
    assert_eq!(line(text), text);
}
