//! From an allowed decision to what the runner needs: the invocation the tool reads, the
//! one path to bind (resolved by [`crate::bind`]), the addresses it may reach (resolved here, through the system resolver),
//! the secret to hand over, and the limits.

use std::net::{IpAddr, ToSocketAddrs};
use std::path::PathBuf;

use daemon::config::Config;
use proto::ToolRequest;
use proto::toolrun::{ConsultTarget, ToolInvocation};
use proto::tools::{HttpFetchArgs, ListDirArgs, ReadFileArgs, ToolArgs};

use crate::bind;
use crate::policy::Decision;
use crate::runner::{Limits, RunSpec, Runner, Secret, unit_name};
use daemon::constraints::{Covered, Host, normalize_url};

/// The arguments as the grant covered them: the normalised path or URL. This is what the
/// approval binds to, the audit keeps as canonical, and the tool runs with, so that what
/// was checked is what runs.
pub fn effective(args: &ToolArgs, covered: &Covered) -> ToolArgs {
    match (args, &covered.path, &covered.url) {
        (ToolArgs::ReadFile(_), Some(path), _) => {
            ToolArgs::ReadFile(ReadFileArgs { path: path.clone() })
        }
        (ToolArgs::ListDir(_), Some(path), _) => {
            ToolArgs::ListDir(ListDirArgs { path: path.clone() })
        }
        (ToolArgs::HttpFetch(_), _, Some(url)) => ToolArgs::HttpFetch(HttpFetchArgs {
            url: url.as_str().to_owned(),
        }),
        _ => args.clone(),
    }
}

/// The run of an allowed call; `args` are [`effective`] already.
pub fn build(
    config: &Config,
    req: &ToolRequest,
    args: ToolArgs,
    decision: &Decision,
) -> Result<RunSpec, String> {
    let (grant, covered) = decision
        .grant()
        .ok_or_else(|| "internal: no grant".to_owned())?;
    let b = &config.broker;
    let consult = match &args {
        ToolArgs::Consult(_) => Some(consult_target(config, grant.secret.as_deref())?),
        _ => None,
    };
    let target_host = match (&covered.host, &covered.url, &consult) {
        (Some(host), Some(url), _) => Some((host.clone(), url.port_or_known_default())),
        (_, _, Some(c)) => {
            let (url, host) =
                normalize_url(&c.url).map_err(|e| format!("broker.consult.url: {e}"))?;
            Some((host, url.port_or_known_default()))
        }
        _ => None,
    };
    let mut addresses = Vec::new();
    let mut sockets = Vec::new();
    if let Some((host, port)) = target_host {
        let port = port.ok_or_else(|| "the URL has no port and no known default".to_owned())?;
        addresses = resolve(&host, port)?;
        sockets = addresses
            .iter()
            .map(|ip| std::net::SocketAddr::new(*ip, port).to_string())
            .collect();
    }
    // The covered path alone is bound, resolved as the tool resolves it.
    let bind = match &covered.path {
        Some(path) => Some(bind::resolve(path, &grant.constraints.paths)?),
        None => None,
    };
    let secret = match &grant.secret {
        Some(name) => Some(Secret {
            name: name.clone(),
            source: credentials_dir()?.join(name),
        }),
        None => None,
    };
    Ok(RunSpec {
        unit: unit_name(&req.session, req.call),
        invocation: ToolInvocation {
            call: args,
            max_bytes: b.max_result_bytes,
            roots: grant.constraints.paths.clone(),
            addresses: sockets,
            consult,
            timeout_ms: u64::try_from(b.tool_time_limit.as_millis()).unwrap_or(u64::MAX),
        },
        bind,
        addresses,
        secret,
        limits: limits(b),
    })
}

fn consult_target(config: &Config, secret: Option<&str>) -> Result<ConsultTarget, String> {
    let c = config
        .broker
        .consult
        .as_ref()
        .ok_or_else(|| "consult is not configured (broker.consult)".to_owned())?;
    let credential =
        secret.ok_or_else(|| "the consult grant names no secret for the API key".to_owned())?;
    Ok(ConsultTarget {
        url: c.url.clone(),
        model: c.model.clone(),
        credential: credential.to_owned(),
    })
}

/// The limits every tool unit gets, from `[broker]`.
fn limits(b: &daemon::config::Broker) -> Limits {
    Limits {
        max_result_bytes: b.max_result_bytes,
        time_limit: b.tool_time_limit,
        memory_max_bytes: b.tool_memory_mib.saturating_mul(1024 * 1024),
        tasks_max: b.tool_tasks_max,
    }
}

/// brokerd's own credentials, from systemd's LoadCredential=.
fn credentials_dir() -> Result<PathBuf, String> {
    std::env::var_os("CREDENTIALS_DIRECTORY")
        .map(PathBuf::from)
        .ok_or_else(|| {
            "the grant names a secret, but brokerd has no $CREDENTIALS_DIRECTORY \
             (services.boxmaker.secrets)"
                .to_owned()
        })
}

/// Resolves through the system resolver (on NixOS, systemd-resolved over AF_UNIX), once,
/// here: the tool connects only to these addresses and the unit admits only these. A name
/// must not lead to this host or its link (loopback, link-local, unspecified, multicast):
/// that is where llama-server and the sockets of boxmaker itself listen. An owner who
/// means such an address writes it as an IP literal in the grant.
fn resolve(host: &Host, port: u16) -> Result<Vec<IpAddr>, String> {
    resolve_with(host, port, RESOLVE_TIMEOUT, |name, port| {
        (name, port)
            .to_socket_addrs()
            .map(|addrs| addrs.map(|a| a.ip()).collect())
    })
}

/// How long a name may take to resolve. The system resolver's own timeouts and retries
/// can add up to much more, and the session's calls wait meanwhile (its lock is held).
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// [`resolve`] with the lookup given. The lookup runs on a thread of its own; one that
/// outlasts `timeout` fails the call (its thread ends when the resolver gives up).
fn resolve_with(
    host: &Host,
    port: u16,
    timeout: std::time::Duration,
    lookup: fn(&str, u16) -> std::io::Result<Vec<IpAddr>>,
) -> Result<Vec<IpAddr>, String> {
    let mut out: Vec<IpAddr> = match host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => {
            let (tx, rx) = std::sync::mpsc::channel();
            let owned = name.clone();
            std::thread::Builder::new()
                .name("resolve".into())
                .spawn(move || {
                    let _ = tx.send(lookup(owned.as_str(), port));
                })
                .map_err(|e| format!("cannot resolve {name}: {e}"))?;
            let all = match rx.recv_timeout(timeout) {
                Ok(found) => found.map_err(|e| format!("cannot resolve {name}: {e}"))?,
                Err(_) => {
                    return Err(format!(
                        "cannot resolve {name}: no answer within {timeout:?}"
                    ));
                }
            };
            let public: Vec<IpAddr> = all.iter().copied().filter(|ip| !local(ip)).collect();
            if public.is_empty() && !all.is_empty() {
                return Err(format!(
                    "{name} resolves only to local addresses; grant the IP itself to allow that"
                ));
            }
            public
        }
    };
    out.sort();
    out.dedup();
    if out.is_empty() {
        return Err("the host resolved to no address".into());
    }
    Ok(out)
}

fn local(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unicast_link_local()
                || v6.to_ipv4_mapped().is_some_and(|m| local(&IpAddr::V4(m)))
        }
    }
}

/// An example address for `--print-tool-unit` of a grant with network: the real addresses
/// are resolved per call. 192.0.2.1 is TEST-NET-1 (RFC 5737), never a real host.
const EXAMPLE_ADDRESS: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

/// The unit a grant's tool runs get, as a file, for `systemd-analyze security`.
pub fn print_unit(
    config: &Config,
    runner: &Runner,
    snapshot: &daemon::grants::Snapshot,
    grant_id: &str,
) -> Result<String, String> {
    let Runner::Systemd(systemd) = runner else {
        return Err("broker.runner is not \"systemd\": the direct runner has no unit".into());
    };
    let grant = snapshot
        .get(grant_id)
        .ok_or_else(|| format!("no grant {grant_id:?} in {}", config.grants.display()))?;
    let networked = !grant.constraints.hosts.is_empty() || grant.tool == "consult";
    let b = &config.broker;
    let session = proto::SessionId::new(format!("print-{grant_id}").replace('_', "-"))
        .map_err(|e| e.to_string())?;
    let secret = grant.secret.as_ref().map(|name| Secret {
        name: name.clone(),
        source: credentials_dir()
            .unwrap_or_else(|_| PathBuf::from("/run/credentials/boxmaker-brokerd.service"))
            .join(name),
    });
    let spec = RunSpec {
        unit: unit_name(&session, proto::CallId(0)),
        invocation: ToolInvocation {
            call: ToolArgs::Consult(proto::tools::ConsultArgs {
                prompt: String::new(),
            }),
            max_bytes: b.max_result_bytes,
            roots: grant.constraints.paths.clone(),
            addresses: Vec::new(),
            consult: None,
            timeout_ms: 0,
        },
        bind: grant.constraints.paths.first().map(|p| bind::Bind {
            source: p.clone(),
            target: p.clone(),
        }),
        addresses: if networked {
            vec![EXAMPLE_ADDRESS]
        } else {
            Vec::new()
        },
        secret,
        limits: limits(b),
    };
    systemd.check(&spec)?;
    let mut out = format!(
        "# grant {grant_id} ({}, mode {:?})\n",
        grant.tool, grant.mode
    );
    if networked {
        out.push_str(
            "# IPAddressAllow= shows 192.0.2.1 (TEST-NET-1) as an example: each call gets the \
             addresses brokerd resolved for its host.\n",
        );
    }
    if spec.bind.is_some() {
        out.push_str(
            "# BindReadOnlyPaths= shows the grant's first path as an example: each call gets \
             only the file or directory it names.\n",
        );
    }
    out.push_str(&systemd.unit_file(&spec));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_never_lead_to_this_host() {
        let err = resolve(&Host::Name("localhost".into()), 80).expect_err("loopback");
        assert!(err.contains("only to local addresses"), "{err}");
        let ip: IpAddr = "127.0.0.1".parse().expect("ip");
        assert_eq!(resolve(&Host::Ip(ip), 80), Ok(vec![ip]));
    }

    #[test]
    fn a_resolver_that_does_not_answer_fails_the_call_in_time() {
        let slow: fn(&str, u16) -> std::io::Result<Vec<IpAddr>> = |_, _| {
            std::thread::sleep(std::time::Duration::from_secs(5));
            Ok(vec![IpAddr::from([192, 0, 2, 7])])
        };
        let name = Host::Name("example.org".into());
        let short = std::time::Duration::from_millis(50);
        let err = resolve_with(&name, 443, short, slow).expect_err("no answer in time");
        assert!(err.contains("no answer within"), "{err}");
        let quick: fn(&str, u16) -> std::io::Result<Vec<IpAddr>> =
            |_, _| Ok(vec![IpAddr::from([192, 0, 2, 7])]);
        let long = std::time::Duration::from_secs(60);
        assert_eq!(
            resolve_with(&name, 443, long, quick),
            Ok(vec![IpAddr::from([192, 0, 2, 7])])
        );
        for bad in [
            "::1",
            "169.254.1.1",
            "fe80::1",
            "0.0.0.0",
            "224.0.0.1",
            "::ffff:127.0.0.1",
        ] {
            assert!(local(&bad.parse().expect("ip")), "{bad}");
        }
        for good in ["93.184.216.34", "2606:2800:220:1::1", "192.168.1.10"] {
            assert!(!local(&good.parse().expect("ip")), "{good}");
        }
    }
}
