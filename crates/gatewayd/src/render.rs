//! What reaches Mattermost, made inert (BRIEF decision 12): model text can carry data out
//! through markdown images (fetched by clients) and links (previewed by the server). Every
//! token that could be a link is shown as inline code; backslashes, backticks and `[` are
//! escaped elsewhere, so no image, link or code span can be formed from model text.
//! Which characters are shown escaped is `inert`'s rule, the same as in bxctl.

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
    let mut text = inert::line(text);
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
