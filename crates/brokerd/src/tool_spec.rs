//! From an allowed decision to what the runner needs: the invocation the tool reads, the
//! one path to bind (resolved by [`crate::bind`]), the addresses it may reach (resolved by
//! [`crate::resolve`]), the secret to hand over, and the limits.

use std::net::IpAddr;
use std::path::PathBuf;

use daemon::config::Config;
use proto::ToolRequest;
use proto::toolrun::{ConsultTarget, ToolInvocation};
use proto::tools::{HttpFetchArgs, ListDirArgs, ReadFileArgs, ToolArgs};

use crate::bind;
use crate::policy::Decision;
use crate::runner::{Limits, RunSpec, Runner, Secret, unit_name};
use grants::constraints::{Covered, Reach, normalize_url};

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
        addresses =
            crate::resolve::addresses(&host, port, &Reach::of(grant)).map_err(|e| e.to_string())?;
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

/// An example address for `--print-tool-unit` of a grant with network: the real addresses
/// are resolved per call. 192.0.2.1 is TEST-NET-1 (RFC 5737), never a real host.
const EXAMPLE_ADDRESS: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

/// The unit a grant's tool runs get, as a file, for `systemd-analyze security`.
pub fn print_unit(
    config: &Config,
    runner: &Runner,
    snapshot: &grants::Snapshot,
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
