//! Reading Rust source as text: comments and literals blanked, the `crate::` paths of a
//! module file, and the names a crate root brings in with `use`.

use std::collections::{BTreeMap, BTreeSet};

/// The top-level names after `crate::` in `text`, with their 1-based line, outside comments
/// and literals.
pub fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let code: Vec<char> = blank_comments_and_literals(text).chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if !is_ident(code[i]) {
            i += 1;
            continue;
        }
        let (word, end) = ident_at(&code, i);
        i = end;
        if word != "crate" {
            continue;
        }
        let mut j = skip_space(&code, end);
        if !(code.get(j) == Some(&':') && code.get(j + 1) == Some(&':')) {
            continue;
        }
        j = skip_space(&code, j + 2);
        let line = |at: usize| 1 + code[..at].iter().filter(|&&c| c == '\n').count();
        match code.get(j) {
            Some('{') => {
                // A group: the first name of each item at depth one.
                let mut depth = 0;
                let mut expect_name = true;
                while j < code.len() {
                    let c = code[j];
                    match c {
                        '{' => {
                            depth += 1;
                            expect_name = depth == 1;
                        }
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        ',' if depth == 1 => expect_name = true,
                        c if is_ident(c) => {
                            let (name, end) = ident_at(&code, j);
                            if expect_name && depth == 1 && name != "self" {
                                found.push((line(j), name));
                            }
                            expect_name = false;
                            j = end;
                            continue;
                        }
                        c if !c.is_whitespace() => expect_name = false,
                        _ => {}
                    }
                    j += 1;
                }
                i = j;
            }
            Some(&c) if is_ident(c) => {
                let (name, end) = ident_at(&code, j);
                found.push((line(j), name));
                i = end;
            }
            _ => {}
        }
    }
    found
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident_at(code: &[char], start: usize) -> (String, usize) {
    let end = (start..code.len())
        .find(|&k| !is_ident(code[k]))
        .unwrap_or(code.len());
    (code[start..end].iter().collect(), end)
}

fn skip_space(code: &[char], from: usize) -> usize {
    (from..code.len())
        .find(|&k| !code[k].is_whitespace())
        .unwrap_or(code.len())
}

/// `text` with comments, string literals and character literals replaced by spaces
/// (newlines kept, so lines still count).
pub fn blank_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, part: &[char]| {
        out.extend(part.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let after_ident = i > 0 && is_ident(chars[i - 1]);
        let end = if c == '/' && next == Some('/') {
            (i..chars.len())
                .find(|&k| chars[k] == '\n')
                .unwrap_or(chars.len())
        } else if c == '/' && next == Some('*') {
            block_comment_end(&chars, i)
        } else if c == '"' {
            string_end(&chars, i + 1)
        } else if (c == 'r' || (c == 'b' && next == Some('r'))) && !after_ident {
            match raw_string_end(&chars, if c == 'b' { i + 2 } else { i + 1 }) {
                Some(end) => end,
                None => {
                    out.push(c);
                    i += 1;
                    continue;
                }
            }
        } else if c == '\'' {
            match char_literal_end(&chars, i) {
                Some(end) => end,
                None => {
                    out.push(c);
                    i += 1;
                    continue;
                }
            }
        } else {
            out.push(c);
            i += 1;
            continue;
        };
        blank(&mut out, &chars[i..end]);
        i = end;
    }
    out
}

/// The end (exclusive) of the block comment opening at `start`; they nest.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0;
    let mut k = start;
    while k + 1 < chars.len() {
        if chars[k] == '/' && chars[k + 1] == '*' {
            depth += 1;
            k += 2;
        } else if chars[k] == '*' && chars[k + 1] == '/' {
            depth -= 1;
            k += 2;
            if depth == 0 {
                return k;
            }
        } else {
            k += 1;
        }
    }
    chars.len()
}

/// The end (exclusive) of a string whose contents start at `from`, after the opening quote.
fn string_end(chars: &[char], from: usize) -> usize {
    let mut k = from;
    while k < chars.len() {
        match chars[k] {
            '\\' => k += 2,
            '"' => return k + 1,
            _ => k += 1,
        }
    }
    chars.len()
}

/// The end (exclusive) of a raw string whose hashes start at `from` (after `r`), if one
/// opens there.
fn raw_string_end(chars: &[char], from: usize) -> Option<usize> {
    let hashes = (from..chars.len())
        .find(|&k| chars[k] != '#')
        .unwrap_or(chars.len())
        - from;
    let quote = from + hashes;
    if chars.get(quote) != Some(&'"') {
        return None;
    }
    let mut k = quote + 1;
    while k < chars.len() {
        if chars[k] == '"' && (1..=hashes).all(|h| chars.get(k + h) == Some(&'#')) {
            return Some(k + 1 + hashes);
        }
        k += 1;
    }
    Some(chars.len())
}

/// The end (exclusive) of the character literal opening at `start`, or `None` for a
/// lifetime or label (`'a`, `'static`).
fn char_literal_end(chars: &[char], start: usize) -> Option<usize> {
    match chars.get(start + 1)? {
        '\\' => (start + 3..chars.len().min(start + 14))
            .find(|&k| chars[k] == '\'')
            .map(|k| k + 1),
        _ if chars.get(start + 2) == Some(&'\'') => Some(start + 3),
        _ => None,
    }
}

/// A token of a `use` tree.
#[derive(Debug, PartialEq, Eq)]
enum Token {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
}

/// The tokens of `code` (already blanked), as far as `use` trees need them.
fn tokens(code: &[char]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        if is_ident(c) {
            let (word, end) = ident_at(code, i);
            out.push(Token::Ident(word));
            i = end;
        } else if c == ':' && code.get(i + 1) == Some(&':') {
            out.push(Token::Path);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// The names the crate root `text` brings in with `use` from one of `modules`
/// (`pub use error::{Error, NetError};`, `use crate::desk::Desk as Front;`), each with its
/// module: a path `crate::Error` in any module reaches `error` through them.
pub fn root_names(text: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let code: Vec<char> = blank_comments_and_literals(text).chars().collect();
    let tokens = tokens(&code);
    let mut leaves = Vec::new();
    for (i, token) in tokens.iter().enumerate() {
        if *token == Token::Ident("use".to_owned()) {
            use_tree(&tokens, i + 1, None, &mut leaves);
        }
    }
    leaves
        .into_iter()
        .filter(|(module, _)| modules.contains(module))
        .map(|(module, name)| (name, module))
        .collect()
}

/// Reads the use tree at `tokens[i..]`, under the first segment `first` of the paths it
/// continues, pushing (first segment, name brought in) for each leaf; returns where it ends.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    mut first: Option<String>,
    leaves: &mut Vec<(String, String)>,
) -> usize {
    let mut last;
    loop {
        match tokens.get(i) {
            Some(Token::Ident(name)) => {
                if first.is_none() && name != "crate" && name != "self" {
                    first = Some(name.clone());
                }
                last = name.clone();
                i += 1;
            }
            Some(Token::Punct('{')) => {
                i += 1;
                while !matches!(tokens.get(i), None | Some(Token::Punct('}'))) {
                    i = use_tree(tokens, i, first.clone(), leaves);
                    if tokens.get(i) == Some(&Token::Punct(',')) {
                        i += 1;
                    } else {
                        break;
                    }
                }
                return i + 1;
            }
            // A glob brings in names this reading does not know.
            Some(Token::Punct('*')) => return i + 1,
            _ => return i,
        }
        if tokens.get(i) == Some(&Token::Path) {
            i += 1;
        } else {
            break;
        }
    }
    if tokens.get(i) == Some(&Token::Ident("as".to_owned()))
        && let Some(Token::Ident(alias)) = tokens.get(i + 1)
    {
        last = alias.clone();
        i += 2;
    }
    if let Some(first) = first
        && last != "self"
        && last != "_"
    {
        leaves.push((first, last));
    }
    i
}
