//! What reaches Mattermost, made inert (BRIEF decision 12): model text can carry data out
//! through markdown images (fetched by clients) and links (previewed by the server). Every
//! token that could be a link is shown as inline code; backslashes, backticks and `[` are
//! escaped elsewhere, so no image, link or code span can be formed from model text.

/// Mattermost refuses posts over 16383 characters; a little room is left.
pub const POST_LIMIT: usize = 16_000;

/// The longest link-like token shown; longer ones are cut (a split could open them).
const TOKEN_LIMIT: usize = 1000;

fn link_like(token: &str) -> bool {
    let b = token.as_bytes();
    token.contains("://")
        || token.to_ascii_lowercase().contains("www.")
        || (1..b.len().saturating_sub(1)).any(|i| {
            b[i] == b'.' && b[i - 1].is_ascii_alphanumeric() && b[i + 1].is_ascii_alphabetic()
        })
}

/// Whether `c` would be invisible or move other text when shown: controls, format and bidi
/// characters, zero-width and unusual spaces, tag characters.
fn hidden(c: char) -> bool {
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

/// `text` with every hidden character shown as `\u{…}`, so what is shown is what is there
/// (a backslash that starts `u{` is shown so too, so no escape can be faked).
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if hidden(c) || (c == '\\' && chars.peek() == Some(&'u')) {
            out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// The longest run of backticks in `text`: a fence must be longer.
pub fn longest_run(text: &str) -> usize {
    let (mut run, mut longest) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// A link to one post of `server` (Mattermost finds its team).
pub fn permalink(server: &str, post: &str) -> String {
    format!("{}/_redirect/pl/{post}", server.trim_end_matches('/'))
}

/// `text` as inline code (hidden characters shown), fenced by more backticks than any run
/// inside it.
pub fn code(text: &str) -> String {
    let mut text = visible(text);
    if text.chars().count() > TOKEN_LIMIT {
        text = text.chars().take(TOKEN_LIMIT).collect::<String>() + "…";
    }
    let fence = "`".repeat(longest_run(&text) + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Model text, inert.
pub fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        if link_like(token) {
            out.push_str(&code(token));
        } else {
            for c in token.chars() {
                if matches!(c, '\\' | '`' | '[') {
                    out.push('\\');
                }
                out.push(c);
            }
        }
        token.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() {
            flush(&mut token, &mut out);
            out.push(c);
        } else {
            token.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// Splits `text` into posts of at most `limit` characters, at a newline or a space when
/// there is one (inline code never holds either, so no split opens one).
pub fn split(text: &str, limit: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.chars().count() > limit {
        let end = rest
            .char_indices()
            .nth(limit)
            .map_or(rest.len(), |(i, _)| i);
        let window = &rest[..end];
        let cut = window
            .rfind('\n')
            .or_else(|| window.rfind(' '))
            .filter(|&i| i > 0)
            .unwrap_or(end);
        parts.push(rest[..cut].to_owned());
        rest = rest[cut..].trim_start_matches(['\n', ' ']);
    }
    parts.push(rest.to_owned());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(visible("a b\u{200b}"), "a b\\u{200b}");
        assert_eq!(visible("\\u{202e} \\n"), "\\u{005c}u{202e} \\n");
    }

    #[test]
    fn long_text_splits_within_the_limit() {
        let text = "word ".repeat(10);
        let parts = split(&text, 12);
        assert!(parts.iter().all(|p| p.chars().count() <= 12), "{parts:?}");
        assert_eq!(parts.concat().replace(' ', ""), text.replace(' ', ""));
        assert_eq!(split("short", 12), vec!["short"]);
    }
}
