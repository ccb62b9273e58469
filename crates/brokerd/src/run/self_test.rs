//! Where a call's host leads: through the system resolver ([`super::resolve`]), or, in the
//! hostile self-test's shadow only (`[broker.self_test]`, docs/verify.md), to the sink's
//! loopback address whatever the host, so a hostile model's egress never reaches the
//! network. The configuration refuses any other address for the key; without it this is
//! the resolver's answer, unchanged.

use std::net::IpAddr;

use config::Config;
use grants::constraints::{Host, Reach};
use proto::Grant;

use super::resolve;

/// The addresses a call of `grant` to `host`:`port` may connect to.
pub fn addresses(
    config: &Config,
    host: &Host,
    port: u16,
    grant: &Grant,
) -> Result<Vec<IpAddr>, resolve::Error> {
    reached(config, host, port, &Reach::of(grant))
}

/// [`addresses`] under `reach` (a remote MCP server's host, for a call or the owner's probe).
pub fn reached(
    config: &Config,
    host: &Host,
    port: u16,
    reach: &Reach,
) -> Result<Vec<IpAddr>, resolve::Error> {
    match &config.broker.self_test {
        Some(t) => Ok(vec![t.resolve]),
        None => resolve::addresses(host, port, reach),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const MINIMAL: &str = "[sockets]\nloop_broker = \"/run/b/loop-broker\"\n\
        admin_broker = \"/run/b/admin-broker\"\n[peers]\nloopd = { user = \"l\" }\n\
        admin = { group = \"a\" }\n";

    fn web() -> Grant {
        proto::from_toml(
            "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"public\"\n\
             [constraints]\nhosts = [\"localhost\", \"api.example.org\"]\n",
        )
        .expect("grant")
    }

    /// The shadow's key sends every host to the sink's address; without it a name that
    /// resolves to loopback (`localhost`) is refused as before: the production path.
    #[test]
    fn self_test_sends_every_host_to_the_sink_and_only_with_its_key() {
        let plain = Config::parse(Path::new("c.toml"), MINIMAL).expect("config");
        let localhost = Host::Name("localhost".into());
        let err = addresses(&plain, &localhost, 80, &web()).expect_err("loopback refused");
        assert!(
            err.to_string()
                .contains("resolves only to addresses a host name may not lead to"),
            "{err}"
        );
        let text = format!(
            "{MINIMAL}[broker]\nrunner = \"direct\"\n[broker.self_test]\nresolve = \"127.0.0.1\"\n"
        );
        let shadow = Config::parse(Path::new("c.toml"), &text).expect("config");
        let sink: IpAddr = "127.0.0.1".parse().expect("ip");
        for host in [localhost, Host::Name("api.example.org".into())] {
            assert_eq!(
                addresses(&shadow, &host, 8080, &web()).expect("sink"),
                [sink]
            );
        }
    }
}
