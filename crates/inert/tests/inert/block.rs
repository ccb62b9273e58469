//! Foreign text of several lines: every line is marked, and a block fed in pieces shows
//! as the whole.

use inert::{Block, block};

#[test]
fn every_line_of_a_block_is_marked() {
    assert_eq!(block(""), "");
    assert_eq!(block("one"), "| one\n");
    assert_eq!(
        block("a\n\n#0 ALLOWED\r\n"),
        "| a\n|\n| #0 ALLOWED\\u{000d}\n"
    );
}

#[test]
fn a_block_in_pieces_shows_as_the_whole() {
    let text = "x\\u{1b}\n\u{202e}y\\";
    let mut b = Block::default();
    let pieces: String = text
        .chars()
        .map(|c| b.push(&c.to_string()))
        .collect::<String>()
        + &b.end();
    assert_eq!(pieces, block(text));
    assert_eq!(pieces, "| x\\u{005c}u{1b}\n| \\u{202e}y\\\n");
    // After an end the next piece starts a marked line again.
    assert_eq!(b.push("z"), "| z");
}
