//! inferproxy's section, `[infer]`: where llama-server listens and how long to wait for it.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde::Deserialize;

use super::Invalid;
use super::duration::duration;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Infer {
    /// llama-server: `http://` on a loopback address only (127.0.0.0/8, `[::1]`, or
    /// `localhost`, which means 127.0.0.1 and is never looked up).
    pub upstream: Upstream,
    /// The largest request body loopd may send (a whole conversation).
    pub max_request_bytes: u64,
    #[serde(deserialize_with = "duration")]
    pub connect_timeout: Duration,
    /// How long a client may take to send its whole request.
    #[serde(deserialize_with = "duration")]
    pub request_timeout: Duration,
    /// How long llama-server may think before the first byte of its answer.
    #[serde(deserialize_with = "duration")]
    pub first_byte_timeout: Duration,
    /// How long llama-server may fall silent between pieces of its answer, and how long a
    /// write to either side may block.
    #[serde(deserialize_with = "duration")]
    pub idle_timeout: Duration,
    pub max_connections: usize,
    /// How long inferproxy waits for brokerd to record a completion's witness report
    /// before it forwards `[DONE]`; past it the stream ends without `[DONE]`.
    #[serde(deserialize_with = "duration")]
    pub witness_timeout: Duration,
}

impl Default for Infer {
    fn default() -> Self {
        Self {
            upstream: Upstream {
                url: "http://127.0.0.1:8080".into(),
                addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 8080)),
                host: "127.0.0.1:8080".into(),
            },
            max_request_bytes: 4 * 1024 * 1024,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            first_byte_timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(120),
            max_connections: 16,
            witness_timeout: Duration::from_secs(5),
        }
    }
}

impl Infer {
    pub(super) fn validate(&self) -> Result<(), Invalid> {
        for (name, zero) in [
            ("infer.max_request_bytes", self.max_request_bytes == 0),
            ("infer.connect_timeout", self.connect_timeout.is_zero()),
            ("infer.request_timeout", self.request_timeout.is_zero()),
            (
                "infer.first_byte_timeout",
                self.first_byte_timeout.is_zero(),
            ),
            ("infer.idle_timeout", self.idle_timeout.is_zero()),
            ("infer.max_connections", self.max_connections == 0),
            ("infer.witness_timeout", self.witness_timeout.is_zero()),
        ] {
            if zero {
                return Err(Invalid::Zero { name });
            }
        }
        Ok(())
    }
}

/// A validated upstream URL.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Upstream {
    /// As configured, for messages.
    pub url: String,
    pub addr: SocketAddr,
    /// What inferproxy sends as `Host:` (the URL's authority).
    pub host: String,
}

impl fmt::Display for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

/// Why `infer.upstream` is not an upstream inferproxy may use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("infer.upstream {url:?}: {}", self.reason())]
pub struct UpstreamError {
    /// As configured.
    pub url: String,
    pub why: BadUpstream,
}

/// What is wrong with an upstream URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadUpstream {
    NotHttp,
    /// A user, path or query, or no host at all.
    NotHostPort,
    UnclosedBracket,
    JunkAfterBracket,
    NotIpv6,
    /// A name other than `localhost`, or an IPv4 address not written in full.
    NotIp,
    NotLoopback,
    PortOutOfRange,
    PortNotNumber,
}

impl UpstreamError {
    /// What is wrong with the URL, without naming the setting it came from (a command-line
    /// flag says its own name).
    pub fn reason(&self) -> &'static str {
        match self.why {
            BadUpstream::NotHttp => "must start with http:// (llama-server on loopback)",
            BadUpstream::NotHostPort => "must be http://HOST[:PORT] without user, path or query",
            BadUpstream::UnclosedBracket => "unclosed [",
            BadUpstream::JunkAfterBracket => "junk after ]",
            BadUpstream::NotIpv6 => "not an IPv6 address",
            BadUpstream::NotIp => "host must be a loopback IP address or localhost",
            BadUpstream::NotLoopback => {
                "only a loopback address (127.0.0.0/8, [::1], localhost) is allowed"
            }
            BadUpstream::PortOutOfRange => "port out of range",
            BadUpstream::PortNotNumber => "port is not a number",
        }
    }
}

impl TryFrom<String> for Upstream {
    type Error = UpstreamError;

    fn try_from(url: String) -> Result<Self, UpstreamError> {
        let bad = |why| UpstreamError {
            url: url.clone(),
            why,
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad(BadUpstream::NotHttp))?;
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.is_empty() || authority.contains(['/', '?', '#', '@']) {
            return Err(bad(BadUpstream::NotHostPort));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| bad(BadUpstream::UnclosedBracket))?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| bad(BadUpstream::JunkAfterBracket))?,
                ),
            };
            let ip: IpAddr = host.parse().map_err(|_| bad(BadUpstream::NotIpv6))?;
            (ip, port)
        } else {
            let (host, port) = match authority.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            };
            let ip = if host.eq_ignore_ascii_case("localhost") {
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            } else {
                let ip: Ipv4Addr = host.parse().map_err(|_| bad(BadUpstream::NotIp))?;
                IpAddr::V4(ip)
            };
            (ip, port)
        };
        // std's is_loopback: 127.0.0.0/8, or ::1 itself (an IPv4-mapped 127.x is not a
        // loopback address to the kernel).
        if !host.is_loopback() {
            return Err(bad(BadUpstream::NotLoopback));
        }
        let port = match port {
            None => 80,
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| bad(BadUpstream::PortOutOfRange))?,
            Some(_) => return Err(bad(BadUpstream::PortNotNumber)),
        };
        Ok(Self {
            host: authority.to_owned(),
            addr: SocketAddr::new(host, port),
            url,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_upstreams_only() {
        for (url, addr, host) in [
            ("http://127.0.0.1:8080", "127.0.0.1:8080", "127.0.0.1:8080"),
            ("http://127.1.2.3:9/", "127.1.2.3:9", "127.1.2.3:9"),
            ("http://localhost:8081", "127.0.0.1:8081", "localhost:8081"),
            ("http://LOCALHOST", "127.0.0.1:80", "LOCALHOST"),
            ("http://[::1]:8080", "[::1]:8080", "[::1]:8080"),
            ("http://[::1]", "[::1]:80", "[::1]"),
        ] {
            let up = Upstream::try_from(url.to_owned()).expect(url);
            assert_eq!(up.addr.to_string(), addr, "{url}");
            assert_eq!(up.host, host, "{url}");
        }
        use BadUpstream::*;
        for (url, word, why) in [
            ("https://127.0.0.1:8080", "http://", NotHttp),
            ("127.0.0.1:8080", "http://", NotHttp),
            ("http://10.0.0.1:8080", "loopback", NotLoopback),
            ("http://0.0.0.0:8080", "loopback", NotLoopback),
            ("http://[::ffff:127.0.0.1]:8080", "loopback", NotLoopback),
            ("http://[fe80::1]:8080", "loopback", NotLoopback),
            ("http://example.com:8080", "loopback IP", NotIp),
            ("http://127.1:8080", "loopback IP", NotIp),
            ("http://0x7f.0.0.1:8080", "loopback IP", NotIp),
            ("http://127.0.0.1:8080/v1", "without user", NotHostPort),
            ("http://user@127.0.0.1:8080", "without user", NotHostPort),
            ("http://127.0.0.1:8080?x", "without user", NotHostPort),
            ("http://", "without user", NotHostPort),
            ("http://127.0.0.1:", "port", PortNotNumber),
            ("http://127.0.0.1:0", "port", PortOutOfRange),
            ("http://127.0.0.1:65536", "port", PortOutOfRange),
            ("http://127.0.0.1:+80", "port", PortNotNumber),
            ("http://127.0.0.1:80:80", "port", PortNotNumber),
            ("http://[::1]x", "junk", JunkAfterBracket),
            ("http://[::1", "unclosed", UnclosedBracket),
            ("http://[::g]:80", "IPv6", NotIpv6),
        ] {
            let err = Upstream::try_from(url.to_owned()).expect_err(url);
            assert_eq!(err.why, why, "{url}");
            assert_eq!(err.url, url);
            let text = err.to_string();
            assert!(text.contains(word), "{url}: {text}");
            assert!(
                text.starts_with(&format!("infer.upstream {url:?}: ")),
                "{text}"
            );
        }
    }
}
