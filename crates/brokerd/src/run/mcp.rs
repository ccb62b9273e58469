//! An MCP server's unit: for a call, from its decision (the grant's hosts resolved to the
//! only addresses the unit reaches, its paths bound read-only, its secret as a credential
//! the server gets in `[[mcp]] secret_env`) and the pin's hash the live list must have; for
//! the owner's probe, the server alone (no network, nothing bound, no secret).
//!
//! A remote server (`[[mcp]] url`) is not started: the tool speaks Streamable HTTP to its
//! URL from the unit, which reaches the URL host's resolved addresses and nothing else.
//! The deciding grant must list that host; the owner's probe admits it alone (decisions
//! P21, P22).

use config::{Config, McpServer};
use proto::mcp::{McpArgs, McpCallInvocation, McpEnv, McpPinInvocation};
use proto::toolrun::ToolInvocation;
use proto::tools::ToolArgs;
use proto::{Hash32, ToolRequest};

use crate::policy::Decision;
use crate::run::bind::Bind;
use crate::run::runner::{McpInput, McpRun, RunSpec, Secret, unit_name};
use crate::run::tool_spec::{self, SpecError};
use grants::constraints::{Host, Reach, lists_host, normalize_url};
use proto::mcp::{McpHeader, McpRemote};

/// The server as the tool starts it: its argv and environment, with the grant's secret
/// (when the grant names one and the server takes it) as the variable `secret_env`.
fn server(s: &McpServer, secret: Option<&str>) -> proto::mcp::McpServer {
    if let Some(url) = &s.url {
        // Addresses are the caller's: resolved for the call's grant or the probe. The
        // grant's secret goes in the header the server names, if it names one.
        let header = match (&s.secret_header, secret) {
            (Some(name), Some(credential)) => Some(McpHeader {
                name: name.clone(),
                credential: credential.to_owned(),
            }),
            _ => None,
        };
        return proto::mcp::McpServer {
            name: s.name.clone(),
            command: Vec::new(),
            env: Vec::new(),
            remote: Some(McpRemote {
                url: url.clone(),
                addresses: Vec::new(),
                header,
            }),
        };
    }
    let mut env: Vec<McpEnv> = s
        .env
        .iter()
        .map(|(name, value)| McpEnv::Value {
            name: name.clone(),
            value: value.clone(),
        })
        .collect();
    if let (Some(name), Some(credential)) = (&s.secret_env, secret) {
        env.push(McpEnv::Credential {
            name: name.clone(),
            credential: credential.to_owned(),
        });
    }
    proto::mcp::McpServer {
        name: s.name.clone(),
        command: s.command.clone(),
        env,
        remote: None,
    }
}

/// A remote server's URL host and port.
fn remote_host(url: &str) -> Result<(Host, u16), SpecError> {
    let (parsed, host) = normalize_url(url).map_err(SpecError::McpUrl)?;
    let port = parsed.port_or_known_default().ok_or(SpecError::NoPort)?;
    Ok((host, port))
}

/// The addresses of a remote server's host under `reach` (in the hostile self-test's
/// shadow, its sink's: `self_test`), and the same at its port for the tool; the
/// invocation's `remote` gets the latter.
fn reach_remote(
    config: &Config,
    call: &mut proto::mcp::McpServer,
    host: &Host,
    port: u16,
    reach: &Reach,
) -> Result<Vec<std::net::IpAddr>, SpecError> {
    let found =
        crate::run::self_test::reached(config, host, port, reach).map_err(SpecError::Resolve)?;
    if let Some(remote) = &mut call.remote {
        remote.addresses = found
            .iter()
            .map(|ip| std::net::SocketAddr::new(*ip, port).to_string())
            .collect();
    }
    Ok(found)
}

/// The MCP session's own deadline inside the run's time limit: the server is stopped
/// (stdin closed, SIGTERM, SIGKILL) within it, and `mcp-call` answers `timeout` before the
/// runner's limit would end it without an answer.
fn session_ms(config: &Config) -> u64 {
    let limit = config.broker.tool_time_limit;
    let margin = (limit / 4).min(std::time::Duration::from_secs(5));
    u64::try_from(limit.saturating_sub(margin).as_millis()).unwrap_or(u64::MAX)
}

/// The invocation the runner's door compares with the decision.
fn invocation(config: &Config, call: ToolArgs) -> ToolInvocation {
    ToolInvocation {
        call,
        max_bytes: config.broker.max_result_bytes,
        roots: Vec::new(),
        addresses: Vec::new(),
        consult: None,
        timeout_ms: session_ms(config),
        notes: None,
        index: Vec::new(),
    }
}

/// The unit of an allowed call of `server`'s tool, checked against the pin `pin`.
pub fn build(
    config: &Config,
    req: &ToolRequest,
    decision: &Decision,
    server_config: &McpServer,
    pin: Hash32,
) -> Result<RunSpec, SpecError> {
    let (grant, _) = decision.grant().ok_or(SpecError::NoGrant)?;
    let Some(ToolArgs::Mcp(args)) = decision.args() else {
        return Err(SpecError::NoGrant);
    };
    let McpArgs {
        arguments, tool, ..
    } = args;
    if let Some(url) = &server_config.url {
        // A remote server: the URL's host alone, and only when the grant lists it; no
        // path; the grant's secret only for a server that names its `secret_header`.
        let (host, port) = remote_host(url)?;
        if !lists_host(grant, &host) {
            return Err(SpecError::McpRemoteHost {
                server: server_config.name.clone(),
                host: host.to_string(),
            });
        }
        let secret = match (&grant.secret, &server_config.secret_header) {
            (Some(name), Some(_)) => Some(Secret {
                name: name.clone(),
                source: tool_spec::credentials_dir()?.join(name),
            }),
            _ => None,
        };
        let mut server = server(server_config, secret.as_ref().map(|s| s.name.as_str()));
        let addresses = reach_remote(config, &mut server, &host, port, &Reach::of(grant))?;
        let call = McpCallInvocation {
            server,
            tool: tool.clone(),
            arguments: arguments.clone(),
            pin,
            max_bytes: config.broker.max_result_bytes,
            timeout_ms: session_ms(config),
        };
        return Ok(spec(
            config,
            req,
            ToolArgs::Mcp(args.clone()),
            addresses,
            secret,
            McpRun {
                input: McpInput::Call(call),
                binds: Vec::new(),
                closure: Vec::new(),
            },
        ));
    }
    let mut addresses = Vec::new();
    for entry in &grant.constraints.hosts {
        // A grant's entry is a name or an address (no suffix: grants refuse it for MCP);
        // the port is the resolver's formality, the unit admits addresses.
        let literal = if entry.contains(':') {
            format!("https://[{entry}]/")
        } else {
            format!("https://{entry}/")
        };
        let (_, host) = normalize_url(&literal).map_err(SpecError::McpHost)?;
        // The hostile self-test's shadow leads every host to its sink (`self_test`).
        let found = crate::run::self_test::addresses(config, &host, 443, grant)
            .map_err(SpecError::Resolve)?;
        for ip in found {
            if !addresses.contains(&ip) {
                addresses.push(ip);
            }
        }
    }
    // The grant's secret reaches the unit only for a server that names its `secret_env`:
    // a credential in the unit is readable by the server whatever its environment says.
    let secret = match (&grant.secret, &server_config.secret_env) {
        (Some(name), Some(_)) => Some(Secret {
            name: name.clone(),
            source: tool_spec::credentials_dir()?.join(name),
        }),
        _ => None,
    };
    let call = McpCallInvocation {
        server: server(server_config, secret.as_ref().map(|s| s.name.as_str())),
        tool: tool.clone(),
        arguments: arguments.clone(),
        pin,
        max_bytes: config.broker.max_result_bytes,
        timeout_ms: session_ms(config),
    };
    let run = McpRun {
        input: McpInput::Call(call),
        binds: grant
            .constraints
            .paths
            .iter()
            .map(|p| Bind {
                source: p.clone(),
                target: p.clone(),
            })
            .collect(),
        closure: closure(server_config),
    };
    Ok(spec(
        config,
        req,
        ToolArgs::Mcp(args.clone()),
        addresses,
        secret,
        run,
    ))
}

/// A call's spec: its unit's name, the invocation the door compares, what it reaches.
fn spec(
    config: &Config,
    req: &ToolRequest,
    call: ToolArgs,
    addresses: Vec<std::net::IpAddr>,
    secret: Option<Secret>,
    run: McpRun,
) -> RunSpec {
    RunSpec {
        unit: unit_name(&req.session, req.call),
        invocation: invocation(config, call),
        bind: None,
        write_bind: None,
        index_binds: Vec::new(),
        addresses,
        secret,
        limits: tool_spec::limits(&config.broker),
        stage: None,
        mcp: Some(run),
    }
}

fn closure(s: &McpServer) -> Vec<String> {
    s.binds.iter().map(|p| p.display().to_string()).collect()
}

/// The unit of the owner's probe of `server`: its tool list only. `nonce` makes the unit's
/// name its own (`boxmaker-tool-mcp-pin-<server>-<nonce>`).
pub fn probe(config: &Config, server_config: &McpServer, nonce: u64) -> Result<RunSpec, SpecError> {
    let session = proto::SessionId::new(format!("mcp-pin-{}", server_config.name))
        .map_err(|e| SpecError::Probe(e.to_string()))?;
    let listed = McpArgs {
        arguments: "{}".into(),
        server: server_config.name.clone(),
        tool: String::new(),
    };
    let mut server = server(server_config, None);
    // A remote server's probe reaches its URL's host and nothing else, as a grant listing
    // only that host would (a name to public addresses, an IP literal as written).
    let addresses = match &server_config.url {
        Some(url) => {
            let (host, port) = remote_host(url)?;
            let reach = Reach::of_host(&host);
            reach_remote(config, &mut server, &host, port, &reach)?
        }
        None => Vec::new(),
    };
    Ok(RunSpec {
        unit: unit_name(&session, proto::CallId(nonce)),
        // No tool is called: the door (`Runner::run_mcp`) refuses a pin input.
        invocation: invocation(config, ToolArgs::Mcp(listed)),
        bind: None,
        write_bind: None,
        index_binds: Vec::new(),
        addresses,
        secret: None,
        limits: tool_spec::limits(&config.broker),
        stage: None,
        mcp: Some(McpRun {
            input: McpInput::Pin(McpPinInvocation {
                server,
                timeout_ms: session_ms(config),
            }),
            binds: Vec::new(),
            closure: closure(server_config),
        }),
    })
}

/// The unit a call under `grant` of `server_config`'s tools gets, for `brokerd
/// --print-tool-unit`: as [`build`] makes it, with `example` standing in for the addresses
/// each call resolves. `Err`: a remote server whose host the grant does not list (its calls
/// get no unit).
pub fn example(
    config: &Config,
    grant: &proto::Grant,
    server_config: &McpServer,
    unit: String,
    example: std::net::IpAddr,
    secret: Option<Secret>,
) -> Result<RunSpec, SpecError> {
    let tool = grant
        .tool
        .split_once('/')
        .map_or_else(String::new, |(_, t)| t.to_owned());
    let args = McpArgs {
        arguments: "{}".into(),
        server: server_config.name.clone(),
        tool: tool.clone(),
    };
    let (server, addresses, secret, binds, closure) = match &server_config.url {
        Some(url) => {
            let (host, port) = remote_host(url)?;
            if !lists_host(grant, &host) {
                return Err(SpecError::McpRemoteHost {
                    server: server_config.name.clone(),
                    host: host.to_string(),
                });
            }
            let secret = secret.filter(|_| server_config.secret_header.is_some());
            let mut server = server(server_config, secret.as_ref().map(|s| s.name.as_str()));
            if let Some(remote) = &mut server.remote {
                remote.addresses = vec![std::net::SocketAddr::new(example, port).to_string()];
            }
            (server, vec![example], secret, Vec::new(), Vec::new())
        }
        None => (
            server(server_config, grant.secret.as_deref()),
            if grant.constraints.hosts.is_empty() {
                Vec::new()
            } else {
                vec![example]
            },
            secret,
            grant
                .constraints
                .paths
                .iter()
                .map(|p| Bind {
                    source: p.clone(),
                    target: p.clone(),
                })
                .collect(),
            closure(server_config),
        ),
    };
    let call = McpCallInvocation {
        server,
        tool,
        arguments: args.arguments.clone(),
        pin: Hash32::ZERO,
        max_bytes: config.broker.max_result_bytes,
        timeout_ms: session_ms(config),
    };
    let mut spec = spec(
        config,
        &ToolRequest {
            session: proto::SessionId::new("print").map_err(|e| SpecError::Probe(e.to_string()))?,
            call: proto::CallId(0),
            tool: String::new(),
            arguments: String::new(),
            witness: None,
        },
        ToolArgs::Mcp(args),
        addresses,
        secret,
        McpRun {
            input: McpInput::Call(call),
            binds,
            closure,
        },
    );
    spec.unit = unit;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use proto::mcp::McpEnv;

    use super::server;

    /// The configuration's `[[mcp]]` entries named `with` (takes a secret in `API_TOKEN`) and
    /// `without` (takes none), each with the value `TZ`.
    fn servers() -> config::Config {
        config::Config::parse(
            Path::new("c.toml"),
            "[sockets]\nloop_broker = \"/run/b/l\"\nadmin_broker = \"/run/b/a\"\n\
             [peers]\nloopd = { user = \"boxmaker-loopd\" }\nadmin = { group = \"boxmaker-admin\" }\n\
             [[mcp]]\nname = \"with\"\ncommand = [\"/opt/mcp/bin/srv\"]\nenv = { TZ = \"UTC\" }\n\
             secret_env = \"API_TOKEN\"\n\
             [[mcp]]\nname = \"without\"\ncommand = [\"/opt/mcp/bin/srv\"]\nenv = { TZ = \"UTC\" }\n",
        )
        .expect("config")
    }

    fn tz() -> McpEnv {
        McpEnv::Value {
            name: "TZ".into(),
            value: "UTC".into(),
        }
    }

    /// The deciding grant's secret reaches the server as the variable its `secret_env`
    /// names, by the credential's name (its content is read inside the unit, never written
    /// in the invocation); without a grant's secret, or to a server that names no
    /// `secret_env`, no credential is passed at all.
    #[test]
    fn a_grants_secret_becomes_the_servers_secret_env_and_nothing_else_does() {
        let config = servers();
        let (with, without) = (&config.mcp[0], &config.mcp[1]);
        let given = server(with, Some("gh-token"));
        assert_eq!(given.name, "with");
        assert_eq!(given.command, ["/opt/mcp/bin/srv"]);
        assert_eq!(
            given.env,
            [
                tz(),
                McpEnv::Credential {
                    name: "API_TOKEN".into(),
                    credential: "gh-token".into()
                }
            ]
        );
        assert_eq!(
            server(with, None).env,
            [tz()],
            "no grant secret, no credential"
        );
        assert_eq!(
            server(without, Some("gh-token")).env,
            [tz()],
            "a server that names no secret_env is given no secret"
        );
    }
}
