//! The `model` part: llama-server as the stack uses it.
//!
//! - `reach`: loopd reaches inferproxy, and the model answers `/health` through it (loopd's
//!   status, as `bxctl status` shows it);
//! - `props`, `tools`, `cache-reuse`, `context-shift`: what llama-server's `/props` says, read
//!   from `infer.upstream` itself (the body inferproxy forwards unchanged to loopd): its
//!   slots and context (loopd pins each session to a slot and compacts by the context), the
//!   chat template's tool support. Witnessing relies on an answer depending on the witnessed
//!   prompt alone, so no chunk reuse (`--cache-reuse`) and no context shift; llama.cpp's
//!   server does not report either in `/props` (checked against the real server in the
//!   real-peer tier), so those two say so as `warn` and never guess;
//! - `slots`: inferproxy refuses `/slots*` (`slots.rs`);
//! - `replay`: a few turns through the whole stack, each request wasting at most 8 tokens
//!   of prefill (`replay.rs`).

use std::net::TcpStream;
use std::time::Duration;

use config::Config;
use proto::Message;
use proto::approval::Empty;
use proto::status::{ModelHealth, Reach};
use serde_json::Value;

use super::access::{self, Side};
use super::report::{Check, Part};
use super::{replay, slots};

const P: Part = Part::Model;

/// How long llama-server may take to answer `/props`.
const PROPS_TIMEOUT: Duration = Duration::from_secs(10);

/// What `/props` says, as far as the checks read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Props {
    pub n_ctx: u64,
    pub total_slots: u64,
    pub build_info: String,
    pub model: Option<String>,
    /// `chat_template_caps.supports_tools` and `supports_tool_calls`, when reported.
    pub tools: Option<(bool, bool)>,
}

pub fn checks(config: &Config, with_replay: bool) -> Vec<Check> {
    let mut checks = vec![reach(config)];
    let props = read_props(config);
    checks.extend(judge_props(&props));
    checks.push(slots::check(config));
    if with_replay {
        checks.push(replay::check(config, props.as_ref().ok()));
    }
    checks
}

fn reach(config: &Config) -> Check {
    let status = match access::call(config, Side::Chat, Message::StatusQuery(Empty {})) {
        Ok(Message::LoopStatus(s)) => s,
        Ok(other) => return Check::fail(P, "reach", format!("loopd answered {}", other.kind())),
        Err(t) => return access::judged(P, "reach", t),
    };
    let version = match &status.inferproxy {
        Reach::Reachable { version } => version
            .as_deref()
            .map_or_else(String::new, |v| format!(" (version {v})")),
        Reach::Unreachable { reason } => {
            return Check::fail(
                P,
                "reach",
                format!("loopd does NOT REACH inferproxy: {reason}"),
            )
            .help(
                "under systemd see `systemctl status boxmaker-inferproxy.socket \
                 boxmaker-inferproxy`; `bxctl dev` starts it with the stack",
            );
        }
    };
    match &status.model {
        ModelHealth::Ok => Check::ok(
            P,
            "reach",
            format!(
                "loopd reaches inferproxy{version}, and llama-server answers /health through it"
            ),
        ),
        ModelHealth::Loading => Check::fail(
            P,
            "reach",
            "llama-server is still loading its model (/health through inferproxy: 503)",
        )
        .help("verify again once it has loaded"),
        ModelHealth::Unhealthy { reason } => Check::fail(
            P,
            "reach",
            format!("llama-server's /health through inferproxy: {reason}"),
        )
        .help(format!(
            "is llama-server running at {} (`infer.upstream`)? The NixOS module does not \
             start it",
            config.infer.upstream
        )),
    }
}

/// `GET /props` from llama-server itself.
pub fn read_props(config: &Config) -> Result<Props, String> {
    let up = &config.infer.upstream;
    let stream = TcpStream::connect_timeout(&up.addr, PROPS_TIMEOUT)
        .map_err(|e| format!("cannot reach llama-server at {up}: {e}"))?;
    let _ = stream.set_read_timeout(Some(PROPS_TIMEOUT));
    let _ = stream.set_write_timeout(Some(PROPS_TIMEOUT));
    let resp = strict_http::request(stream, "GET", "/props", &[("Host", &up.host)], b"")
        .map_err(|e| format!("GET {up}/props: {e}"))?;
    let status = resp.status;
    let body = resp
        .read_body(4 << 20)
        .map_err(|e| format!("GET {up}/props: {e}"))?;
    if status != 200 {
        return Err(format!(
            "GET {up}/props answered {status}: {}",
            String::from_utf8_lossy(&body)
                .chars()
                .take(200)
                .collect::<String>()
        ));
    }
    let v: Value =
        serde_json::from_slice(&body).map_err(|e| format!("GET {up}/props: not JSON ({e})"))?;
    parse_props(&v).map_err(|missing| {
        format!("GET {up}/props is not llama.cpp's server's: it has no {missing}")
    })
}

/// The fields read, or the first one missing.
pub fn parse_props(v: &Value) -> Result<Props, &'static str> {
    let n_ctx = v["default_generation_settings"]["n_ctx"]
        .as_u64()
        .ok_or("default_generation_settings.n_ctx")?;
    let total_slots = v["total_slots"].as_u64().ok_or("total_slots")?;
    let build_info = v["build_info"].as_str().ok_or("build_info")?.to_owned();
    let caps = &v["chat_template_caps"];
    let tools = match (
        caps["supports_tools"].as_bool(),
        caps["supports_tool_calls"].as_bool(),
    ) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    Ok(Props {
        n_ctx,
        total_slots,
        build_info,
        model: v["model_path"].as_str().map(str::to_owned),
        tools,
    })
}

pub fn judge_props(props: &Result<Props, String>) -> Vec<Check> {
    let p = match props {
        Ok(p) => p,
        Err(why) => {
            return vec![Check::fail(P, "props", why.clone()).help(
                "loopd reads the context size and the slots from /props, and refuses to \
                     go on without them: is `infer.upstream` llama.cpp's llama-server?",
            )];
        }
    };
    let mut checks = Vec::new();
    let model = p
        .model
        .as_deref()
        .map_or_else(String::new, |m| format!(", model {m}"));
    checks.push(if p.total_slots >= 1 && p.n_ctx > 0 {
        Check::ok(
            P,
            "props",
            format!(
                "llama.cpp's server {}{model}: {} slot(s) of {} tokens (loopd pins each \
                 session to one and compacts by its context)",
                p.build_info, p.total_slots, p.n_ctx
            ),
        )
    } else {
        Check::fail(
            P,
            "props",
            format!(
                "llama-server reports {} slot(s) of {} tokens",
                p.total_slots, p.n_ctx
            ),
        )
        .help("start llama-server with at least one slot (--parallel) and a context (--ctx-size)")
    });
    checks.push(match p.tools {
        Some((true, true)) => Check::ok(
            P,
            "tools",
            "the chat template renders tools and tool calls (chat_template_caps)",
        ),
        Some((tools, calls)) => Check::fail(
            P,
            "tools",
            format!(
                "the chat template does not render tools (supports_tools {tools}, \
                 supports_tool_calls {calls}): the model never sees the tools, and a call \
                 in the history cannot be replayed as it was made"
            ),
        )
        .help(
            "start llama-server with --jinja and a template with tool support \
             (--chat-template-file); the model's own may have none",
        ),
        None => Check::warn(
            P,
            "tools",
            "llama-server's /props does not report the template's tool support \
             (chat_template_caps)",
        )
        .help("start it with --jinja, and a template with tool support"),
    });
    checks.push(
        Check::warn(
            P,
            "cache-reuse",
            "llama-server's /props does not say whether it reuses cached chunks \
             (--cache-reuse): not checked",
        )
        .help(
            "start llama-server without --cache-reuse (or with --cache-reuse 0): witnessing \
             relies on an answer depending on the witnessed prompt alone",
        ),
    );
    checks.push(
        Check::warn(
            P,
            "context-shift",
            "llama-server's /props does not say whether it shifts a full context \
             (--context-shift): not checked",
        )
        .help(
            "start llama-server without --context-shift: a shifted context drops part of the \
             witnessed prompt",
        ),
    );
    checks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcript(path: &str) -> Value {
        let text = std::fs::read_to_string(path).expect("transcript");
        let v: Value = serde_json::from_str(&text).expect("json");
        v["response"]["body"].clone()
    }

    /// The real server's `/props` (a captured transcript) reads as llama.cpp's, with the
    /// tool support of the template it ran with.
    #[test]
    fn the_real_servers_props_read_as_llama_cpps() {
        let body = transcript(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fake-llama-server/tests/transcripts/tools_02_get_props.json"
        ));
        let p = parse_props(&body).expect("props");
        assert_eq!((p.n_ctx, p.total_slots), (4096, 1));
        assert_eq!(p.tools, Some((true, true)));
        let checks = judge_props(&Ok(p));
        let levels: Vec<_> = checks.iter().map(|c| (c.check.as_str(), c.level)).collect();
        use super::super::report::Level::{Ok as Good, Warn};
        assert_eq!(
            levels,
            [
                ("props", Good),
                ("tools", Good),
                ("cache-reuse", Warn),
                ("context-shift", Warn)
            ]
        );
    }

    #[test]
    fn a_props_without_the_context_is_not_llama_cpps() {
        let v = serde_json::json!({"total_slots": 1, "build_info": "b1"});
        assert_eq!(parse_props(&v), Err("default_generation_settings.n_ctx"));
        let checks = judge_props(&Err("GET x/props is not llama.cpp's server's".into()));
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].level, super::super::report::Level::Fail);
    }
}
