//! One line of foreign text: every hidden character shows as an escape, and no escape
//! already in the text can pass for one.

use inert::line;

#[test]
fn every_hidden_character_shows_as_an_escape() {
    assert_eq!(line("a b\u{200b}"), "a b\\u{200b}");
    assert_eq!(
        line("\u{1b}[2J\r\n\t\u{7f}\u{9b}"),
        "\\u{001b}[2J\\u{000d}\\u{000a}\\u{0009}\\u{007f}\\u{009b}"
    );
    assert_eq!(
        line("\u{202a}\u{202e}\u{2066}\u{2069}\u{200d}\u{2060}\u{feff}"),
        "\\u{202a}\\u{202e}\\u{2066}\\u{2069}\\u{200d}\\u{2060}\\u{feff}"
    );
    assert_eq!(line("日本 é"), "日本 é");
}

#[test]
fn an_escape_already_in_the_text_cannot_pass_for_one() {
    assert_eq!(line("\\u{202e} \\n"), "\\u{005c}u{202e} \\n");
    // JSON's own escapes stay readable: only `\u{` could be taken for ours.
    assert_eq!(line("\"\\u001b\\\\\""), "\"\\u001b\\\\\"");
    assert_eq!(line("a\\"), "a\\");
    assert_eq!(line("\\u"), "\\u");
    assert_eq!(line("\\\\u{"), "\\\\u{005c}u{");
}
