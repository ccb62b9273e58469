//! From an allowed decision to what the runner needs: the invocation the tool reads, the
//! one path to bind (resolved by [`crate::run::bind`]), the addresses it may reach (resolved by
//! [`crate::run::resolve`]), the secret to hand over, and the limits.

use std::net::IpAddr;
use std::path::PathBuf;

use config::Config;
use proto::ToolRequest;
use proto::toolrun::{ConsultTarget, ToolInvocation};
use proto::tools::ToolArgs;

use crate::policy::Decision;
use crate::run::bind::{self, BindError};
use crate::run::runner::{CheckError, Limits, RunSpec, Runner, Secret, unit_name};
use grants::constraints::{UrlError, normalize_url};

/// Why an allowed call has no run: its text is the failed result the model and the audit
/// see. Each text is whole: it prints what it wraps (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The decision carries no grant (a bug: only an allow is built).
    #[error("internal: no grant")]
    NoGrant,
    /// A consult call, but `[broker.consult]` is missing.
    #[error("consult is not configured (broker.consult)")]
    ConsultNotConfigured,
    /// The consult grant names no secret for the API key.
    #[error("the consult grant names no secret for the API key")]
    ConsultNoSecret,
    /// `broker.consult.url` is not a URL brokerd accepts.
    #[error("broker.consult.url: {0}")]
    ConsultUrl(UrlError),
    /// The URL has neither a port nor a scheme with a known one.
    #[error("the URL has no port and no known default")]
    NoPort,
    /// The host gives nothing to connect to.
    #[error("{0}")]
    Resolve(crate::run::resolve::Error),
    /// The covered path cannot be bound.
    #[error("{0}")]
    Bind(BindError),
    /// The grant names a secret, but brokerd was given no credentials.
    #[error(
        "the grant names a secret, but brokerd has no $CREDENTIALS_DIRECTORY \
         (services.boxmaker.secrets)"
    )]
    NoCredentials,
    /// An MCP grant's host entry that makes no host to resolve.
    #[error("constraints.hosts: {0}")]
    McpHost(UrlError),
    /// A remote MCP server's `url` is not one brokerd reaches.
    #[error("the MCP server's url: {0}")]
    McpUrl(UrlError),
    /// The grant deciding a remote MCP server's call does not list the server's host.
    #[error(
        "the MCP server {server:?} is reached at {host}, which the deciding grant's \
         constraints.hosts do not list: not called"
    )]
    McpRemoteHost { server: String, host: String },
    /// The owner's probe of an MCP server has no unit (its name makes no unit name).
    #[error("cannot list the server's tools: {0}")]
    Probe(String),
}

/// Why `--print-tool-unit` has no unit to print.
#[derive(Debug, thiserror::Error)]
pub enum UnitError {
    /// The direct runner starts no units.
    #[error("broker.runner is not \"systemd\": the direct runner has no unit")]
    NotSystemd,
    /// No grant has this id.
    #[error("no grant {grant:?} in {}", dir.display())]
    NoGrant { grant: String, dir: PathBuf },
    /// The grant id makes no valid session id for the example unit name.
    #[error("{0}")]
    Session(proto::InvalidValue),
    /// An MCP grant whose server is not configured, or whose calls get no unit (a remote
    /// server's host the grant does not list).
    #[error("the grant's MCP server: {0}")]
    McpServer(String),
    /// The systemd runner refuses the example run.
    #[error("{0}")]
    Refused(CheckError),
}

/// The run of an allowed call: the arguments it authorises ([`Decision::args`], as the
/// grant covered them), bound and limited as its grant says.
pub fn build(
    config: &Config,
    req: &ToolRequest,
    decision: &Decision,
) -> Result<RunSpec, SpecError> {
    let (grant, covered) = decision.grant().ok_or(SpecError::NoGrant)?;
    let args = decision.args().ok_or(SpecError::NoGrant)?.clone();
    let b = &config.broker;
    let consult = match &args {
        ToolArgs::Consult(_) => Some(consult_target(config, grant.secret.as_deref())?),
        _ => None,
    };
    let target_host = match (&covered.host, &covered.url, &consult) {
        (Some(host), Some(url), _) => Some((host.clone(), url.port_or_known_default())),
        (_, _, Some(c)) => {
            let (url, host) = normalize_url(&c.url).map_err(SpecError::ConsultUrl)?;
            Some((host, url.port_or_known_default()))
        }
        _ => None,
    };
    let mut addresses = Vec::new();
    let mut sockets = Vec::new();
    if let Some((host, port)) = target_host {
        let port = port.ok_or(SpecError::NoPort)?;
        addresses = crate::run::self_test::addresses(config, &host, port, grant)
            .map_err(SpecError::Resolve)?;
        sockets = addresses
            .iter()
            .map(|ip| std::net::SocketAddr::new(*ip, port).to_string())
            .collect();
    }
    // The covered path alone is bound, resolved as the tool resolves it.
    let bind = match &covered.path {
        Some(path) => Some(bind::resolve(path, &grant.constraints.paths).map_err(SpecError::Bind)?),
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
            notes: None,
            index: Vec::new(),
        },
        bind,
        write_bind: None,
        index_binds: Vec::new(),
        addresses,
        secret,
        limits: limits(b),
        mcp: None,
        stage: None,
    })
}

fn consult_target(config: &Config, secret: Option<&str>) -> Result<ConsultTarget, SpecError> {
    let c = config
        .broker
        .consult
        .as_ref()
        .ok_or(SpecError::ConsultNotConfigured)?;
    let credential = secret.ok_or(SpecError::ConsultNoSecret)?;
    Ok(ConsultTarget {
        url: c.url.clone(),
        model: c.model.clone(),
        credential: credential.to_owned(),
    })
}

/// The limits every tool unit gets, from `[broker]`.
pub(crate) fn limits(b: &config::Broker) -> Limits {
    Limits {
        max_result_bytes: b.max_result_bytes,
        time_limit: b.tool_time_limit,
        memory_max_bytes: b.tool_memory_mib.saturating_mul(1024 * 1024),
        tasks_max: b.tool_tasks_max,
    }
}

/// brokerd's own credentials, from systemd's LoadCredential=.
pub(crate) fn credentials_dir() -> Result<PathBuf, SpecError> {
    std::env::var_os("CREDENTIALS_DIRECTORY")
        .map(PathBuf::from)
        .ok_or(SpecError::NoCredentials)
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
) -> Result<String, UnitError> {
    let Runner::Systemd(systemd) = runner else {
        return Err(UnitError::NotSystemd);
    };
    let grant = snapshot.get(grant_id).ok_or_else(|| UnitError::NoGrant {
        grant: grant_id.to_owned(),
        dir: config.grants.clone(),
    })?;
    // An MCP grant's unit reaches the network only through its hosts (a remote server's,
    // its URL's host alone).
    let networked = !grant.constraints.hosts.is_empty() || grant.tool == "consult";
    let b = &config.broker;
    let session = proto::SessionId::new(format!("print-{grant_id}").replace('_', "-"))
        .map_err(UnitError::Session)?;
    let secret = grant.secret.as_ref().map(|name| Secret {
        name: name.clone(),
        source: credentials_dir()
            .unwrap_or_else(|_| PathBuf::from("/run/credentials/boxmaker-brokerd.service"))
            .join(name),
    });
    let mut spec = RunSpec {
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
            notes: None,
            index: Vec::new(),
        },
        write_bind: None,
        index_binds: Vec::new(),
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
        mcp: None,
        stage: None,
    };
    // An MCP grant's unit: its server's, as a call gets it (`run::mcp::build`).
    if let Some(server) = grant
        .tool
        .strip_prefix("mcp:")
        .and_then(|t| t.split_once('/'))
        .map(|(server, _)| server)
    {
        let server_config = config
            .mcp
            .iter()
            .find(|s| s.name == server)
            .ok_or_else(|| UnitError::McpServer(format!("no [[mcp]] server {server:?}")))?;
        spec = crate::run::mcp::example(
            config,
            grant,
            server_config,
            spec.unit.clone(),
            EXAMPLE_ADDRESS,
            spec.secret.take(),
        )
        .map_err(|e| UnitError::McpServer(e.to_string()))?;
    }
    // The hands' units: a write grant's commit (its look is the same, read-only), a run
    // grant's program.
    if let Some(stage) = crate::run::hands::example(config, grant) {
        spec.bind = None;
        spec.limits = stage.1;
        spec.stage = Some(stage.0);
    }
    systemd.check(&spec).map_err(UnitError::Refused)?;
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
    if spec.stage.is_some() {
        out.push_str(
            "# The hands' unit: for a write the commit (the look is the same with the root \
             bound read-only), for a run the program; binds show the grant's first path and \
             program as an example.\n",
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
