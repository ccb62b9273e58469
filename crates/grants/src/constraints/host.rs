//! `hosts`: which URLs `http_fetch` may reach, by host name or IP literal.
//!
//! Both sides are brought to one spelling before comparing: the url crate's WHATWG host
//! parsing for requests (lower case, percent-decoding, IDNA to punycode, every IPv4 spelling
//! to a dotted quad), and for grant entries a check that the owner already wrote that
//! spelling, so a look-alike never matches by accident of notation.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Url;

use super::{HostError, LabelError, UrlError};

/// The host of a covered request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// Lower case, punycode, no trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// One validated `hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Entry {
    Exact(String),
    /// `*.suffix`, stored without the `*.`.
    Below(String),
    Ip(IpAddr),
}

impl Entry {
    pub(super) fn parse(raw: &str) -> Result<Self, HostError> {
        let entry = || raw.to_owned();
        if raw.is_empty() {
            return Err(HostError::Empty);
        }
        if !raw.is_ascii() {
            return Err(HostError::NotAscii { entry: entry() });
        }
        if let Ok(ip) = raw.parse::<Ipv6Addr>() {
            return Ok(Self::Ip(IpAddr::V6(ip)));
        }
        if let Ok(ip) = raw.parse::<Ipv4Addr>() {
            return Ok(Self::Ip(IpAddr::V4(ip)));
        }
        let refusal = if raw.starts_with('[') {
            Some(HostError::Bracketed { entry: entry() })
        } else if raw.contains("://") {
            Some(HostError::Scheme { entry: entry() })
        } else if raw.contains('/') {
            Some(HostError::Path { entry: entry() })
        } else if raw.contains('@') {
            Some(HostError::UserName { entry: entry() })
        } else if raw.contains(':') && raw.contains('%') {
            Some(HostError::Zone { entry: entry() })
        } else if raw.contains(':') {
            Some(HostError::Port { entry: entry() })
        } else if raw == "*" || raw == "*." {
            Some(HostError::EveryHost { entry: entry() })
        } else {
            None
        };
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
        let lower = raw.to_ascii_lowercase();
        let (below, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, lower.as_str()),
        };
        if name.contains('*') {
            return Err(HostError::Wildcard { entry: entry() });
        }
        let name = name.strip_suffix('.').unwrap_or(name);
        check_labels(name).map_err(|source| HostError::Label {
            entry: entry(),
            error: source,
        })?;
        // The url crate is the parser requests go through: an entry must be a name it keeps
        // as that same name, or it could never match (or would match something else).
        match Url::parse(&format!("http://{name}/")).map(|u| u.host().map(|h| h.to_owned())) {
            Ok(Some(url::Host::Domain(d))) if d == name => {}
            Ok(Some(url::Host::Ipv4(ip))) if !below => {
                return Err(HostError::Ipv4Spelling { entry: entry(), ip });
            }
            Ok(seen) => {
                return Err(HostError::ReadsAs {
                    entry: entry(),
                    seen,
                });
            }
            Err(source) => {
                return Err(HostError::NotName {
                    entry: entry(),
                    error: source,
                });
            }
        }
        Ok(if below {
            Self::Below(name.to_owned())
        } else {
            Self::Exact(name.to_owned())
        })
    }

    pub(super) fn matches(&self, host: &Host) -> bool {
        match (self, host) {
            (Self::Exact(e), Host::Name(h)) => e == h,
            // Request labels are never empty, so whatever stands before `.suffix` is at
            // least one whole label: `example.org` and `badexample.org` are not below it.
            (Self::Below(suffix), Host::Name(h)) => h
                .strip_suffix(suffix.as_str())
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty()),
            (Self::Ip(e), Host::Ip(h)) => e == h,
            _ => false,
        }
    }
}

/// Only plain DNS labels: the WHATWG parser lets through `*`, `!`, `$` and others that no
/// resolver should be asked about and that a wildcard entry would otherwise cover.
fn check_labels(name: &str) -> Result<(), LabelError> {
    for label in name.split('.') {
        if label.is_empty() {
            return Err(LabelError::EmptyLabel);
        }
        if let Some(found) = label
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
        {
            return Err(LabelError::Char { found });
        }
    }
    Ok(())
}

/// Parses and normalises an `http_fetch` URL: http or https only, no user name or password,
/// the fragment dropped (it is never sent), one trailing dot of the host dropped,
/// percent-escapes of unreserved characters decoded and the rest written in upper case, and
/// paths that hide a `.` or `..` segment behind an escaped slash refused.
pub fn normalize_url(raw: &str) -> Result<(Url, Host), UrlError> {
    let raw_url = || raw.to_owned();
    let mut url = Url::parse(raw).map_err(|source| UrlError::NotUrl {
        url: raw_url(),
        error: source,
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UrlError::Scheme {
            url: raw_url(),
            scheme: url.scheme().to_owned(),
        });
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::UserInfo { url: raw_url() });
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => {
            let name = d.strip_suffix('.').unwrap_or(d).to_owned();
            check_labels(&name).map_err(|source| UrlError::Label {
                url: raw_url(),
                error: source,
            })?;
            Host::Name(name)
        }
        Some(url::Host::Ipv4(ip)) => Host::Ip(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Host::Ip(IpAddr::V6(ip)),
        None => return Err(UrlError::NoHost { url: raw_url() }),
    };
    if let Host::Name(name) = &host {
        url.set_host(Some(name))
            .map_err(|source| UrlError::RewriteHost {
                url: raw_url(),
                error: source,
            })?;
    }
    url.set_fragment(None);
    let path = normalize_escapes(url.path());
    url.set_path(&path);
    if let Some(query) = url.query().map(normalize_escapes) {
        url.set_query(Some(&query));
    }
    if hides_dot_segment(url.path()) {
        return Err(UrlError::HiddenDotSegment { url: raw_url() });
    }
    Ok((url, host))
}

/// RFC 3986 section 6.2.2: escapes of unreserved characters mean the character itself, and
/// hex digits are case-insensitive, so one spelling remains for patterns to match.
fn normalize_escapes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some(b) = escaped_byte(bytes, i) {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
            i += 3;
            continue;
        }
        // `%` and all else stand for themselves; step over whole characters.
        let c = text[i..].chars().next().unwrap_or('\u{fffd}');
        out.push(c);
        i += c.len_utf8().max(1);
    }
    out
}

/// The url crate resolves literal and `%2E` dot segments itself; what remains are segments
/// that only a server decoding `%2F`/`%5C` or dropping `;parameters` would see as dots.
fn hides_dot_segment(path: &str) -> bool {
    let decoded = percent_decode(path);
    decoded
        .split(|b| *b == b'/' || *b == b'\\')
        .map(|seg| seg.split(|b| *b == b';').next().unwrap_or(seg))
        .any(|seg| seg == b"." || seg == b"..")
}

/// The byte a `%XX` at `i` stands for. Both digits are checked by hand: `from_str_radix`
/// would also take a sign, reading `%+1` as an escape.
fn escaped_byte(bytes: &[u8], i: usize) -> Option<u8> {
    match bytes.get(i..i + 3)? {
        [b'%', hi, lo] if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() => {
            let digit = |d: u8| char::from(d).to_digit(16).map(|v| v as u8);
            Some(digit(*hi)? * 16 + digit(*lo)?)
        }
        _ => None,
    }
}

fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some(b) = escaped_byte(bytes, i) {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests;
