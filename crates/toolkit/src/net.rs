//! The HTTP client both network tools share: ureq, with a resolver that answers only with the
//! addresses brokerd resolved and never asks DNS.
//!
//! brokerd resolves a granted host through the system resolver and the unit's firewall
//! (IPAddressAllow) admits exactly those addresses. The tool connecting to the same list is
//! what makes the two agree: a second lookup here could get other answers (DNS rebinding),
//! and inside the unit there is no resolver to ask anyway. TLS is unaffected: rustls still
//! verifies the certificate against the URL's host name, with the webpki roots.

use std::net::SocketAddr;
use std::time::Duration;

use proto::toolrun::ToolInvocation;
use ureq::Agent;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use url::Url;

use crate::NetError;

/// Parses `text` as an http or https URL, the only schemes the network tools speak.
pub fn parse_url(text: &str) -> Result<Url, NetError> {
    let mut url = Url::parse(text).map_err(|source| NetError::InvalidUrl {
        text: text.to_owned(),
        error: source,
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(NetError::Scheme { text: text.into() });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(NetError::NoHost { text: text.into() });
    }
    // The fragment is for the client, never sent.
    url.set_fragment(None);
    Ok(url)
}

/// An agent that reaches `url`'s host only at the invocation's addresses for `url`'s port,
/// follows no redirects, ignores proxy variables, and gives up after `timeout_ms` in all.
pub fn agent_for(url: &Url, inv: &ToolInvocation) -> Result<Agent, NetError> {
    let host = url.host_str().unwrap_or_default().to_owned();
    let port = url
        .port_or_known_default()
        .ok_or_else(|| NetError::NoPort { url: url.clone() })?;
    let mut addrs = Vec::new();
    for text in &inv.addresses {
        let addr: SocketAddr = text.parse().map_err(|source| NetError::BadAddress {
            text: text.clone(),
            error: source,
        })?;
        if addr.port() == port {
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(if inv.addresses.is_empty() {
            NetError::NoAddresses { host }
        } else {
            NetError::WrongPort { host, port }
        });
    }
    let config = Config::builder()
        // A redirect target needs its own grant check; the caller reports it instead.
        .max_redirects(0)
        .max_redirects_will_error(false)
        // Status codes are for the tool to report, not transport errors.
        .http_status_as_error(false)
        // A proxy from the environment would be a connection to somewhere not granted.
        .proxy(None)
        .timeout_global(Some(Duration::from_millis(inv.timeout_ms)))
        .user_agent(concat!("boxmaker-tool/", env!("CARGO_PKG_VERSION")))
        .max_idle_connections(0)
        .build();
    let resolver = FixedResolver { host, addrs };
    Ok(Agent::with_parts(config, DefaultConnector::new(), resolver))
}

/// Answers every lookup of the one expected host with the fixed addresses; any other host
/// is not found. Never performs DNS.
#[derive(Debug)]
struct FixedResolver {
    host: String,
    addrs: Vec<SocketAddr>,
}

impl Resolver for FixedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let asked = uri.host().unwrap_or_default();
        if !same_host(asked, &self.host) {
            return Err(ureq::Error::HostNotFound);
        }
        let mut out = self.empty();
        // ureq keeps at most 16 addresses; brokerd's list is far shorter in practice, and
        // the rest are dropped rather than panicking in `push`.
        for addr in &self.addrs {
            if out.try_push(*addr).is_err() {
                break;
            }
        }
        Ok(out)
    }
}

/// Host names compare case-insensitively; IPv6 literals with or without their brackets.
fn same_host(a: &str, b: &str) -> bool {
    let strip = |h: &str| h.trim_start_matches('[').trim_end_matches(']').to_owned();
    strip(a).eq_ignore_ascii_case(&strip(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(addresses: &[&str]) -> ToolInvocation {
        ToolInvocation {
            call: proto::tools::ToolArgs::HttpFetch(proto::tools::HttpFetchArgs {
                url: "http://h/".into(),
            }),
            max_bytes: 10,
            roots: vec![],
            addresses: addresses.iter().map(|s| (*s).to_owned()).collect(),
            consult: None,
            timeout_ms: 100,
            notes: None,
            index: Vec::new(),
        }
    }

    #[test]
    fn only_http_and_https_urls() {
        assert!(parse_url("https://example.com/a#frag").is_ok());
        assert_eq!(
            parse_url("https://example.com/a#frag")
                .expect("valid")
                .as_str(),
            "https://example.com/a"
        );
        for bad in [
            "file:///etc/passwd",
            "ftp://x/",
            "not a url",
            "data:text/plain,hi",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses_must_parse_and_match_the_port() {
        let url = parse_url("https://example.com/").expect("valid");
        assert!(agent_for(&url, &invocation(&["93.184.216.34:443"])).is_ok());
        assert!(agent_for(&url, &invocation(&["[2001:db8::1]:443"])).is_ok());
        let err = agent_for(&url, &invocation(&["93.184.216.34:80"])).expect_err("port");
        assert!(err.to_string().contains("port 443"), "{err}");
        assert!(
            matches!(&err, NetError::WrongPort { host, port: 443 } if host == "example.com"),
            "{err:?}"
        );
        let err = agent_for(&url, &invocation(&[])).expect_err("none");
        assert!(err.to_string().contains("no addresses"), "{err}");
        assert!(
            matches!(&err, NetError::NoAddresses { host } if host == "example.com"),
            "{err:?}"
        );
        let err = agent_for(&url, &invocation(&["example.com:443"])).expect_err("name");
        assert!(err.to_string().contains("not a socket address"), "{err}");
        assert!(
            matches!(&err, NetError::BadAddress { text, .. } if text == "example.com:443"),
            "{err:?}"
        );
    }

    #[test]
    fn the_resolver_answers_only_its_host_and_never_asks_dns() {
        let r = FixedResolver {
            host: "example.test".into(),
            addrs: vec!["127.0.0.1:9".parse().expect("addr")],
        };
        let config = Config::default();
        let ok: Uri = "http://EXAMPLE.test:9/x".parse().expect("uri");
        let got = r
            .resolve(&ok, &config, NextTimeout::default())
            .expect("resolves");
        assert_eq!(got.len(), 1);
        let other: Uri = "http://localhost:9/x".parse().expect("uri");
        assert!(r.resolve(&other, &config, NextTimeout::default()).is_err());
        assert!(same_host("[::1]", "::1"));
    }
}
