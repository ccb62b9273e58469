//! Model text made inert for Mattermost, and split into posts (`render`).

use gatewayd::render::{code, inert, split};

#[test]
fn images_and_links_become_inert() {
    let out = inert("see ![](http://evil?data) and [x](http://e/a b) www.e.com ok.");
    assert_eq!(
        out,
        "see `![](http://evil?data)` and `[x](http://e/a` b) `www.e.com` ok."
    );
    assert!(!inert("![a][r]\n[r]: /x").contains("!["));
    assert_eq!(inert("`a http://x b`"), "\\`a `http://x` b\\`");
    assert_eq!(code("a`b``c"), "```a`b``c```");
    assert_eq!(code("`x"), "`` `x ``");
    assert_eq!(code("a\u{202e}b\nc"), "`a\\u{202e}b\\u{000a}c`");
}

#[test]
fn long_text_splits_within_the_limit() {
    let text = "word ".repeat(10);
    let parts = split(&text, 12);
    assert!(parts.iter().all(|p| p.chars().count() <= 12), "{parts:?}");
    assert_eq!(parts.concat().replace(' ', ""), text.replace(' ', ""));
    assert_eq!(split("short", 12), vec!["short"]);
}
