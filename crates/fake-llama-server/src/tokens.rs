//! The fake tokenizer behind the prompt-cache simulation, and the slot's view of tokens.
//!
//! `<|im_start|>` and `<|im_end|>` are one token each; the text between them is cut after
//! every newline, and each line into pieces of 4 bytes from its start (the last piece of a
//! line may be shorter). A real BPE tokenizer never merges across a special token either, and
//! a newline ends its pre-tokens, so here too a prompt that ends with
//! `<|im_start|>assistant\n` tokenizes as a prefix of itself followed by anything: the reply
//! the model generates after it keeps its own tokens when the next prompt replays it.
//!
//! What a slot holds is tokens, not text: a reply generated with a split the tokenizer would
//! not make (the script's `split_token`, as a model may sample `}` `}` where the tokenizer
//! makes `}}`) leaves tokens that the same text, replayed, does not tokenize to, and the next
//! request loses the cache from that token on, as on the real server.

/// Bytes per piece of a line.
pub const PIECE_BYTES: usize = 4;

const SPECIAL: [&str; 2] = ["<|im_start|>", "<|im_end|>"];

/// The tokens of `text`, as pieces of it.
pub fn tokenize(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let next_special = SPECIAL
            .iter()
            .filter_map(|s| rest.find(s).map(|at| (at, s.len())))
            .min();
        let (plain, special) = match next_special {
            Some((at, len)) => (&rest[..at], Some(&rest[at..at + len])),
            None => (rest, None),
        };
        for line in plain.split_inclusive('\n') {
            pieces(line, &mut out);
        }
        match special {
            Some(s) => {
                out.push(s);
                rest = &rest[plain.len() + s.len()..];
            }
            None => rest = "",
        }
    }
    out
}

/// Cuts one line into pieces of at most [`PIECE_BYTES`] bytes, on character boundaries.
fn pieces<'a>(line: &'a str, out: &mut Vec<&'a str>) {
    let mut start = 0;
    while start < line.len() {
        let mut end = (start + PIECE_BYTES).min(line.len());
        while !line.is_char_boundary(end) {
            end += 1;
        }
        out.push(&line[start..end]);
        start = end;
    }
}

/// The number of tokens of `text`.
pub fn count(text: &str) -> usize {
    tokenize(text).len()
}

/// The first `n` tokens of `text`, as text.
pub fn first(text: &str, n: usize) -> &str {
    let len: usize = tokenize(text).iter().take(n).map(|t| t.len()).sum();
    &text[..len]
}

/// Owned tokens, as a slot keeps them.
pub fn owned(text: &str) -> Vec<String> {
    tokenize(text).into_iter().map(str::to_owned).collect()
}

/// The tokens a reply is generated as: the tokenizer's own, except that with `split` the
/// first token at or after that index with more than one character is generated as two
/// (its first character, then the rest).
pub fn generated(text: &str, split: Option<usize>) -> Vec<String> {
    let mut tokens = owned(text);
    if let Some(from) = split
        && let Some(i) = (from..tokens.len()).find(|&i| tokens[i].chars().count() > 1)
    {
        let token = tokens.remove(i);
        let cut = token.chars().next().map_or(0, char::len_utf8);
        tokens.insert(i, token[cut..].to_owned());
        tokens.insert(i, token[..cut].to_owned());
    }
    tokens
}

/// How many tokens two token lists share from their start.
pub fn common_prefix(a: &[String], b: &[&str]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == *y).count()
}
