//! `patterns`: shell-style globs matched against the whole subject.
//!
//! Written here rather than taken from a regex crate: the language is four rules long and a
//! grant file should not be able to express anything slower than linear-times-length.

use super::PatternError;

/// One element of a parsed pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `?`: exactly one character.
    One,
    /// `*`: any run of characters, `/` included.
    Star,
}

/// A validated pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pattern(Vec<Token>);

impl Pattern {
    pub(super) fn parse(text: &str) -> Result<Self, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        let mut tokens = Vec::with_capacity(text.len());
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            let token = match c {
                '*' => Token::Star,
                '?' => Token::One,
                '\\' => match chars.next() {
                    Some(e @ ('*' | '?' | '\\')) => Token::Literal(e),
                    Some(escaped) => {
                        return Err(PatternError::Escape {
                            pattern: text.to_owned(),
                            escaped,
                        });
                    }
                    None => {
                        return Err(PatternError::LoneBackslash {
                            pattern: text.to_owned(),
                        });
                    }
                },
                other => Token::Literal(other),
            };
            // `**` means the same as `*`; one star keeps the matcher's bound tight.
            if !(token == Token::Star && tokens.last() == Some(&Token::Star)) {
                tokens.push(token);
            }
        }
        Ok(Self(tokens))
    }

    pub(super) fn matches(&self, subject: &str) -> bool {
        let mut steps = 0;
        self.matches_counting(subject, &mut steps)
    }

    /// The classic two-pointer glob match: on a mismatch, only the most recent `*` is retried
    /// one character further on. Earlier stars never need retrying, because the text between
    /// two stars can be placed at its leftmost occurrence, so the work is at most
    /// (subject length + 1) × (pattern length + 1) steps, never exponential.
    fn matches_counting(&self, subject: &str, steps: &mut u64) -> bool {
        let p = &self.0;
        let s: Vec<char> = subject.chars().collect();
        let (mut pi, mut si) = (0, 0);
        // (index of the last star, subject index it currently stands for up to)
        let mut retry: Option<(usize, usize)> = None;
        while si < s.len() {
            *steps += 1;
            match p.get(pi) {
                Some(Token::Star) => {
                    retry = Some((pi, si));
                    pi += 1;
                    continue;
                }
                Some(Token::One) => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                Some(Token::Literal(c)) if *c == s[si] => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                _ => {}
            }
            match retry {
                Some((star, from)) => {
                    pi = star + 1;
                    si = from + 1;
                    retry = Some((star, from + 1));
                }
                None => return false,
            }
        }
        p[pi..].iter().all(|t| *t == Token::Star)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, subject: &str) -> bool {
        Pattern::parse(pattern).expect(pattern).matches(subject)
    }

    #[test]
    fn literals_are_anchored_at_both_ends() {
        assert!(m("/a/b", "/a/b"));
        assert!(!m("/a/b", "/a/b/c"));
        assert!(!m("/a/b", "/x/a/b"));
        assert!(!m("/a/b", "/a/"));
        assert!(!m("/a/B", "/a/b"), "case matters");
        assert!(!m("a", ""));
    }

    #[test]
    fn star_matches_any_run_including_slashes_and_nothing() {
        assert!(m("*", ""));
        assert!(m("*", "anything / at all"));
        assert!(m("/a/*", "/a/"));
        assert!(m("/a/*", "/a/b/c/d"));
        assert!(m("*.md", "/notes/x.md"));
        assert!(!m("*.md", "/notes/x.md.bak"));
        assert!(m(
            "https://example.org/docs/*",
            "https://example.org/docs/a?b=c"
        ));
        assert!(m("a*b*c", "abc"));
        assert!(m("a*b*c", "aXXbYYbZc"));
        assert!(!m("a*b*c", "aXXbYYbZ"));
        assert!(m("a**b", "ab"));
        assert!(m("*a", "aaa"));
        assert!(!m("*a", "aab"));
    }

    #[test]
    fn question_mark_is_exactly_one_character() {
        assert!(m("/a/?", "/a/b"));
        assert!(!m("/a/?", "/a/"));
        assert!(!m("/a/?", "/a/bc"));
        assert!(m("/a/?", "/a//"), "? matches a slash too");
        assert!(m("??", "ü€"), "characters, not bytes");
        assert!(!m("???", "ü€"));
    }

    #[test]
    fn escapes_are_literal() {
        assert!(m(r"a\*b", "a*b"));
        assert!(!m(r"a\*b", "aXb"));
        assert!(m(r"a\?b", "a?b"));
        assert!(!m(r"a\?b", "aXb"));
        assert!(m(r"a\\b", r"a\b"));
        assert!(!m(r"a\\b", r"a\\b"));
        assert!(m(r"*\**", "x*y"));
        assert!(!m(r"*\**", "xy"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for (bad, word) in [
            ("", "empty"),
            ("abc\\", "lone backslash"),
            ("\\", "lone backslash"),
            (r"a\b", "only"),
            (r"\.md", "only"),
        ] {
            let err = Pattern::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(word), "{bad:?}: {err}");
        }
    }

    #[test]
    fn pathological_patterns_stay_polynomial() {
        let pattern = Pattern::parse("*a*a*a*a*a*a*a*a*b").expect("pattern");
        let subject = "a".repeat(10_000);
        let mut steps = 0;
        assert!(!pattern.matches_counting(&subject, &mut steps));
        let bound = (subject.len() as u64 + 1) * (pattern.0.len() as u64 + 1);
        assert!(steps <= bound, "{steps} steps, bound {bound}");

        let long_stars = Pattern::parse(&"*a".repeat(200)).expect("pattern");
        let mut steps = 0;
        assert!(!long_stars.matches_counting(&"a".repeat(199), &mut steps));
        assert!(long_stars.matches(&"a".repeat(5_000)));
    }
}
