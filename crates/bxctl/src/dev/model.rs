//! The model `bxctl dev` talks to: the fake llama-server playing the demo (or `--script`),
//! a llama-server the owner runs (`--llama-url`, checked as inferproxy would before
//! anything starts, so a bad URL is blamed on the flag), or one `bxctl dev` starts itself
//! (`--model FILE.gguf`) with exactly the settings witnessing and the prompt cache rely on
//! ([`llama_args`], docs/model.md), as a child of the stack that stops with it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use super::args::DevArgs;
use super::layout;
use super::lock::StateLock;
use super::paths::{absolute, bin};
use super::ready;
use super::stack::{Stack, read_from};
use crate::error::DevError;

/// What the banner calls the demo model.
pub const DEMO_MODEL: &str = "demo (scripted; see docs/model.md)";

/// The server slots `bxctl dev` asks llama-server for: loopd pins each session to one, so
/// two sessions (a chat and a job, say) each keep their prompt cache.
pub const SLOTS: u32 = 2;

/// The model chosen and started.
#[derive(Debug)]
pub struct Chosen {
    /// The URL inferproxy forwards to.
    pub upstream: String,
    /// What the banner says the model is.
    pub banner: String,
    /// For the wait and its errors.
    pub ready: ready::Model,
    /// The llama-server `bxctl dev` started: its log and where this run's part begins.
    started: Option<(PathBuf, u64)>,
}

/// The command line `bxctl dev --model` gives llama-server: loopback only, on `port`; the
/// settings witnessing relies on (no chunk reuse, no context shift: an answer depends on
/// the prompt inferproxy witnessed alone, docs/threat-model.md), Jinja templates (what tool
/// calls need, with `template` when the model's own has no tool support), and
/// [`SLOTS`] slots of `ctx / SLOTS` tokens each.
pub fn llama_args(model: &Path, template: Option<&Path>, port: u16, ctx: u32) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--model".into(), model.into()];
    for (flag, value) in [
        ("--host", "127.0.0.1".to_owned()),
        ("--port", port.to_string()),
        ("--ctx-size", ctx.to_string()),
        ("--parallel", SLOTS.to_string()),
        ("--cache-reuse", "0".to_owned()),
    ] {
        args.push(flag.into());
        args.push(value.into());
    }
    args.push("--no-context-shift".into());
    args.push("--jinja".into());
    if let Some(t) = template {
        args.push("--chat-template-file".into());
        args.push(t.into());
    }
    args
}

/// Checks `--llama-url` as inferproxy will, before anything is started or written.
pub fn check_url(args: &DevArgs) -> Result<(), DevError> {
    match &args.llama_url {
        Some(url) => config::Upstream::try_from(url.clone())
            .map(drop)
            .map_err(|e| DevError::LlamaUrl {
                url: url.clone(),
                reason: e.reason(),
            }),
        None => Ok(()),
    }
}

/// The llama-server program: `--llama-server PATH`, else `llama-server` on `PATH`.
fn llama_server(given: Option<&Path>) -> Result<PathBuf, DevError> {
    if let Some(path) = given {
        return if path.is_file() {
            absolute(path)
        } else {
            Err(DevError::NoLlamaServer {
                given: Some(path.to_owned()),
            })
        };
    }
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("llama-server"))
                .find(|p| p.is_file())
        })
        .ok_or(DevError::NoLlamaServer { given: None })
}

/// A port on 127.0.0.1 free now, for llama-server to listen on (bound and let go: another
/// process could take it in between, and llama-server then says so in its log).
fn free_port() -> Result<u16, DevError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(DevError::Port)?;
    Ok(listener.local_addr().map_err(DevError::Port)?.port())
}

/// Starts (or names) the model for `args`.
pub fn start(
    args: &DevArgs,
    state: &Path,
    stack: &Stack,
    held: &mut StateLock,
) -> Result<Chosen, DevError> {
    if let Some(url) = &args.llama_url {
        return Ok(Chosen {
            upstream: url.clone(),
            banner: url.clone(),
            ready: ready::Model {
                url: url.clone(),
                given_by: "--llama-url",
                help: "is llama-server running there? Start it as docs/model.md says and give \
                       its address with --llama-url, or start it with `bxctl dev --model \
                       FILE.gguf`; without either, `bxctl dev` plays the demo"
                    .to_owned(),
            },
            started: None,
        });
    }
    if let Some(model) = &args.model {
        return start_llama(args, model, state, stack, held);
    }
    let (script, banner) = match &args.script {
        Some(s) => {
            let s = absolute(s)?;
            let banner = format!("fake-llama-server playing {}", s.display());
            (s, banner)
        }
        None => (layout::demo_script(state)?, DEMO_MODEL.to_owned()),
    };
    let url = stack.start_fake(&bin("fake-llama-server")?, &script, state, held)?;
    Ok(Chosen {
        upstream: url.clone(),
        banner,
        ready: ready::Model {
            url,
            given_by: "the fake llama-server",
            help: format!("{}/logs/fake-llama-server.log says why", state.display()),
        },
        started: None,
    })
}

fn start_llama(
    args: &DevArgs,
    model: &Path,
    state: &Path,
    stack: &Stack,
    held: &mut StateLock,
) -> Result<Chosen, DevError> {
    let model = absolute(model)?;
    if let Err(source) = std::fs::File::open(&model) {
        return Err(DevError::ModelFile {
            path: model,
            error: source,
        });
    }
    let template = args.chat_template.as_deref().map(absolute).transpose()?;
    let program = llama_server(args.llama_server.as_deref())?;
    let port = free_port()?;
    let url = format!("http://127.0.0.1:{port}");
    // Through bxctl itself, which asks the kernel to stop it with this bxctl and then
    // becomes llama-server (`bxctl dev-exec`): it ends with bxctl however bxctl dies.
    let mut cmd = Command::new(std::env::current_exe().map_err(DevError::CurrentExe)?);
    cmd.arg("dev-exec").arg(&program).args(llama_args(
        &model,
        template.as_deref(),
        port,
        args.ctx_size,
    ));
    let log = state.join("logs/llama-server.log");
    let from = stack.start_plain("llama-server", cmd, &log, held)?;
    Ok(Chosen {
        upstream: url.clone(),
        banner: format!("{} through {} at {url}", model.display(), program.display()),
        ready: ready::Model {
            url,
            given_by: "--model",
            help: format!("llama-server's log, {}, says why", log.display()),
        },
        started: Some((log, from)),
    })
}

impl Chosen {
    /// Whether the llama-server `bxctl dev` started has exited, and what it said.
    pub fn gone(&self, stack: &Stack) -> Option<DevError> {
        let (log, from) = self.started.as_ref()?;
        let status: ExitStatus = stack.exited("llama-server")?;
        Some(DevError::Exited {
            name: "llama-server",
            status,
            log: read_from(log, *from),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_server_gets_loopback_one_port_and_the_settings_witnessing_needs() {
        let args = llama_args(
            Path::new("/m/model.gguf"),
            Some(Path::new("/t/tools.jinja")),
            8081,
            16384,
        );
        let words: Vec<&str> = args.iter().filter_map(|a| a.to_str()).collect();
        assert_eq!(
            words.join(" "),
            "--model /m/model.gguf --host 127.0.0.1 --port 8081 --ctx-size 16384 --parallel 2 \
             --cache-reuse 0 --no-context-shift --jinja --chat-template-file /t/tools.jinja"
        );
    }
}
