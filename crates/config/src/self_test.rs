//! `[broker.self_test]`: the shadow stack of `bxctl verify --hostile` (issue 27 point 3,
//! docs/verify.md). Written only into the shadow's own configuration, never the owner's:
//! every host a tool call names is taken to be `resolve`, a loopback address where the
//! self-test's sink listens, so a hostile model's egress reaches the sink and never the
//! network. Anything but a loopback address is refused, so the key cannot send the owner's
//! calls elsewhere.

use std::net::IpAddr;

use serde::Deserialize;

/// The self-test's setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelfTest {
    /// The address every call's host is taken to resolve to: a loopback address.
    pub resolve: IpAddr,
}

/// Why `[broker.self_test]` cannot be used. The key turns off brokerd's refusal of loopback
/// for every host a fetch or a consult names, so it is taken only where the self-test's
/// shadow runs: the direct runner, never a deployment's systemd runner.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelfTestInvalid {
    #[error(
        "broker.self_test.resolve must be a loopback address (127.0.0.0/8 or ::1), not \
         {found}: the key is the hostile self-test's, whose sink listens on this host \
         (docs/verify.md)"
    )]
    NotLoopback { found: IpAddr },
    #[error(
        "broker.self_test needs broker.runner = \"direct\": the key is the hostile \
         self-test's shadow stack, never a deployment's (it lets every granted host reach \
         this host's loopback services; docs/verify.md)"
    )]
    NotDirect,
}

/// Checks the key: a loopback address, under the direct runner.
pub fn validate(t: Option<&SelfTest>, runner: crate::RunnerKind) -> Result<(), SelfTestInvalid> {
    let Some(t) = t else { return Ok(()) };
    if !t.resolve.is_loopback() {
        return Err(SelfTestInvalid::NotLoopback { found: t.resolve });
    }
    if runner != crate::RunnerKind::Direct {
        return Err(SelfTestInvalid::NotDirect);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{Config, Invalid};

    const MINIMAL: &str = "[sockets]\nloop_broker = \"/run/b/loop-broker\"\n\
        admin_broker = \"/run/b/admin-broker\"\n[peers]\nloopd = { user = \"l\" }\n\
        admin = { group = \"a\" }\n";

    fn with_key(ip: &str, runner: &str) -> String {
        format!(
            "{MINIMAL}[broker]\nrunner = \"{runner}\"\n[broker.self_test]\nresolve = \"{ip}\"\n"
        )
    }

    /// Absent: the production path, no self-test. A loopback address (v4 or v6) is taken;
    /// anything else is refused at load with its own variant.
    #[test]
    fn self_test_resolves_only_to_loopback() {
        let c = Config::parse(Path::new("c.toml"), MINIMAL).expect("valid");
        assert_eq!(c.broker.self_test, None);
        for ip in ["127.0.0.1", "127.3.4.5", "::1"] {
            let text = with_key(ip, "direct");
            let c = Config::parse(Path::new("c.toml"), &text).expect("loopback");
            assert_eq!(
                c.broker.self_test.map(|t| t.resolve.to_string()),
                Some(ip.into())
            );
        }
        for ip in ["10.0.0.1", "93.184.216.34", "0.0.0.0", "::"] {
            let text = with_key(ip, "direct");
            let err = Config::parse(Path::new("c.toml"), &text).expect_err(ip);
            let crate::ConfigError::Invalid { reason, .. } = &err else {
                panic!("{err}");
            };
            assert!(matches!(reason, Invalid::SelfTest(_)), "{err}");
            assert!(
                err.to_string().contains("must be a loopback address"),
                "{err}"
            );
        }
    }

    /// The key is the shadow's alone: refused under the systemd runner, a deployment's.
    #[test]
    fn self_test_only_under_the_direct_runner() {
        let err = Config::parse(Path::new("c.toml"), &with_key("127.0.0.1", "systemd"))
            .expect_err("systemd runner");
        let crate::ConfigError::Invalid { reason, .. } = &err else {
            panic!("{err}");
        };
        assert!(matches!(reason, Invalid::SelfTest(_)), "{err}");
        assert!(
            err.to_string().contains("needs broker.runner = \"direct\""),
            "{err}"
        );
    }
}
