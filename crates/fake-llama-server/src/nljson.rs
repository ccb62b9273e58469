//! The parse error llama-server's JSON library (nlohmann::json) reports for a text that is
//! not JSON, word for word: the real server refuses to render a history whose tool-call
//! arguments do not parse, with "Failed to parse tool call arguments as JSON: " and this
//! text. A lexer and parser that follow nlohmann's (its position counting, its `last read`
//! token text, its context and expected-token wording), for JSON text only: comments, BOMs
//! and number overflow are not modelled (a number is any number literal).

/// nlohmann's error for `text`, or `None` when it is JSON.
pub fn parse_error(text: &str) -> Option<String> {
    if text.is_empty() {
        return Some(
            "[json.exception.parse_error.101] parse error at line 1, column 1: attempting to \
             parse an empty input; check that your input string or stream contains the \
             expected JSON"
                .into(),
        );
    }
    let mut p = Parser {
        lx: Lexer {
            bytes: text.as_bytes(),
            next: 0,
            current: None,
            unget: false,
            lines: 0,
            column: 0,
            token: Vec::new(),
            error: String::new(),
        },
        last: Token::End,
    };
    p.advance();
    if let Err(e) = p.value() {
        return Some(e);
    }
    p.advance();
    (p.last != Token::End).then(|| p.fail(Some(Token::End), "value"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    True,
    False,
    Null,
    String,
    Number,
    BeginArray,
    BeginObject,
    EndArray,
    EndObject,
    NameSeparator,
    ValueSeparator,
    Error,
    End,
    LiteralOrValue,
}

fn name(t: Token) -> &'static str {
    match t {
        Token::True => "true literal",
        Token::False => "false literal",
        Token::Null => "null literal",
        Token::String => "string literal",
        Token::Number => "number literal",
        Token::BeginArray => "'['",
        Token::BeginObject => "'{'",
        Token::EndArray => "']'",
        Token::EndObject => "'}'",
        Token::NameSeparator => "':'",
        Token::ValueSeparator => "','",
        Token::Error => "<parse error>",
        Token::End => "end of input",
        Token::LiteralOrValue => "'[', '{', or a literal",
    }
}

struct Lexer<'a> {
    bytes: &'a [u8],
    next: usize,
    /// The character last read; `None` at the end of the input.
    current: Option<u8>,
    unget: bool,
    lines: usize,
    /// Characters read on the current line, the end of input counting as one.
    column: usize,
    /// What `last read` shows: the characters read since the last string or number began.
    token: Vec<u8>,
    error: String,
}

impl Lexer<'_> {
    fn get(&mut self) -> Option<u8> {
        self.column += 1;
        if self.unget {
            self.unget = false;
        } else {
            self.current = self.bytes.get(self.next).copied();
            if self.current.is_some() {
                self.next += 1;
            }
        }
        if let Some(c) = self.current {
            self.token.push(c);
            if c == b'\n' {
                self.lines += 1;
                self.column = 0;
            }
        }
        self.current
    }

    fn unget(&mut self) {
        self.unget = true;
        if self.column == 0 {
            self.lines = self.lines.saturating_sub(1);
        } else {
            self.column -= 1;
        }
        if self.current.is_some() {
            self.token.pop();
        }
    }

    fn reset(&mut self) {
        self.token.clear();
        self.token.extend(self.current);
    }

    fn fail(&mut self, why: impl Into<String>) -> Token {
        self.error = why.into();
        Token::Error
    }

    fn scan(&mut self) -> Token {
        while matches!(self.get(), Some(b' ' | b'\t' | b'\n' | b'\r')) {}
        match self.current {
            Some(b'[') => Token::BeginArray,
            Some(b']') => Token::EndArray,
            Some(b'{') => Token::BeginObject,
            Some(b'}') => Token::EndObject,
            Some(b':') => Token::NameSeparator,
            Some(b',') => Token::ValueSeparator,
            Some(b't') => self.literal(b"true", Token::True),
            Some(b'f') => self.literal(b"false", Token::False),
            Some(b'n') => self.literal(b"null", Token::Null),
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            None | Some(0) => Token::End,
            Some(_) => self.fail("invalid literal"),
        }
    }

    fn literal(&mut self, word: &[u8], token: Token) -> Token {
        for &want in &word[1..] {
            if self.get() != Some(want) {
                return self.fail("invalid literal");
            }
        }
        token
    }

    fn hex4(&mut self) -> Option<u32> {
        let mut n = 0;
        for _ in 0..4 {
            let d = char::from(self.get()?).to_digit(16)?;
            n = n * 16 + d;
        }
        Some(n)
    }

    fn string(&mut self) -> Token {
        const HEX: &str = "invalid string: '\\u' must be followed by 4 hex digits";
        self.reset();
        loop {
            match self.get() {
                None => return self.fail("invalid string: missing closing quote"),
                Some(b'"') => return Token::String,
                Some(b'\\') => match self.get() {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {}
                    Some(b'u') => {
                        let Some(first) = self.hex4() else {
                            return self.fail(HEX);
                        };
                        if (0xD800..=0xDBFF).contains(&first) {
                            if self.get() != Some(b'\\') || self.get() != Some(b'u') {
                                return self.fail(
                                    "invalid string: surrogate U+D800..U+DBFF must be \
                                     followed by U+DC00..U+DFFF",
                                );
                            }
                            match self.hex4() {
                                None => return self.fail(HEX),
                                Some(low) if (0xDC00..=0xDFFF).contains(&low) => {}
                                Some(_) => {
                                    return self.fail(
                                        "invalid string: surrogate U+D800..U+DBFF must be \
                                         followed by U+DC00..U+DFFF",
                                    );
                                }
                            }
                        } else if (0xDC00..=0xDFFF).contains(&first) {
                            return self.fail(
                                "invalid string: surrogate U+DC00..U+DFFF must follow \
                                 U+D800..U+DBFF",
                            );
                        }
                    }
                    _ => return self.fail("invalid string: forbidden character after backslash"),
                },
                Some(c @ 0..=0x1F) => return self.fail(control(c)),
                Some(_) => {}
            }
        }
    }

    fn number(&mut self) -> Token {
        const DIGIT: fn(Option<u8>) -> bool = |c| matches!(c, Some(b'0'..=b'9'));
        self.reset();
        let mut c = self.current;
        if c == Some(b'-') {
            c = self.get();
            if !DIGIT(c) {
                return self.fail("invalid number; expected digit after '-'");
            }
        }
        if c != Some(b'0') {
            while DIGIT(self.get()) {}
        } else {
            self.get();
        }
        if self.current == Some(b'.') {
            if !DIGIT(self.get()) {
                return self.fail("invalid number; expected digit after '.'");
            }
            while DIGIT(self.get()) {}
        }
        if matches!(self.current, Some(b'e' | b'E')) {
            match self.get() {
                Some(b'+' | b'-') => {
                    if !DIGIT(self.get()) {
                        return self.fail("invalid number; expected digit after exponent sign");
                    }
                }
                c if DIGIT(c) => {}
                _ => {
                    return self.fail("invalid number; expected '+', '-', or digit after exponent");
                }
            }
            while DIGIT(self.get()) {}
        }
        self.unget();
        Token::Number
    }

    /// The `last read` text: control characters as `<U+XXXX>`.
    fn token_text(&self) -> String {
        let mut out = String::new();
        for chunk in String::from_utf8_lossy(&self.token).chars() {
            if u32::from(chunk) <= 0x1F {
                out.push_str(&format!("<U+{:04X}>", u32::from(chunk)));
            } else {
                out.push(chunk);
            }
        }
        out
    }
}

/// nlohmann's words for a control character inside a string.
fn control(c: u8) -> String {
    const NAMES: [&str; 32] = [
        "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "HT", "LF", "VT", "FF", "CR",
        "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB",
        "ESC", "FS", "GS", "RS", "US",
    ];
    let short = match c {
        0x08 => " or \\b",
        0x09 => " or \\t",
        0x0A => " or \\n",
        0x0C => " or \\f",
        0x0D => " or \\r",
        _ => "",
    };
    format!(
        "invalid string: control character U+{c:04X} ({}) must be escaped to \\u{c:04X}{short}",
        NAMES[usize::from(c)]
    )
}

struct Parser<'a> {
    lx: Lexer<'a>,
    last: Token,
}

impl Parser<'_> {
    fn advance(&mut self) {
        self.last = self.lx.scan();
    }

    fn fail(&self, expected: Option<Token>, context: &str) -> String {
        let mut msg = format!("syntax error while parsing {context} - ");
        if self.last == Token::Error {
            msg.push_str(&format!(
                "{}; last read: '{}'",
                self.lx.error,
                self.lx.token_text()
            ));
        } else {
            msg.push_str(&format!("unexpected {}", name(self.last)));
        }
        if let Some(e) = expected {
            msg.push_str(&format!("; expected {}", name(e)));
        }
        format!(
            "[json.exception.parse_error.101] parse error at line {}, column {}: {msg}",
            self.lx.lines + 1,
            self.lx.column
        )
    }

    fn expect(&mut self, want: Token, context: &str) -> Result<(), String> {
        self.advance();
        if self.last == want {
            Ok(())
        } else {
            Err(self.fail(Some(want), context))
        }
    }

    /// Parses the value that starts with the token just scanned.
    fn value(&mut self) -> Result<(), String> {
        match self.last {
            Token::BeginObject => {
                self.advance();
                if self.last == Token::EndObject {
                    return Ok(());
                }
                loop {
                    if self.last != Token::String {
                        return Err(self.fail(Some(Token::String), "object key"));
                    }
                    self.expect(Token::NameSeparator, "object separator")?;
                    self.advance();
                    self.value()?;
                    self.advance();
                    match self.last {
                        Token::ValueSeparator => self.advance(),
                        Token::EndObject => return Ok(()),
                        _ => return Err(self.fail(Some(Token::EndObject), "object")),
                    }
                }
            }
            Token::BeginArray => {
                self.advance();
                if self.last == Token::EndArray {
                    return Ok(());
                }
                loop {
                    self.value()?;
                    self.advance();
                    match self.last {
                        Token::ValueSeparator => self.advance(),
                        Token::EndArray => return Ok(()),
                        _ => return Err(self.fail(Some(Token::EndArray), "array")),
                    }
                }
            }
            Token::True | Token::False | Token::Null | Token::String | Token::Number => Ok(()),
            Token::Error => Err(self.fail(None, "value")),
            _ => Err(self.fail(Some(Token::LiteralOrValue), "value")),
        }
    }
}
