//! Why `bxctl dev` could not start the stack: one variant per thing that can go wrong, each
//! with what it was about and, where the owner can act, a `help:` line. Each text prints
//! what it wraps, which `source()` does not return (docs/decisions.md F16).

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use supervise::NotReady;

/// Why `bxctl dev` could not start the stack.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    /// Where bxctl itself is (to find the roles next to it).
    // The system's words alone, as bxctl has always shown them.
    #[error("{0}")]
    CurrentExe(io::Error),
    /// A role's binary is not next to bxctl.
    #[error(
        "{} is not built next to bxctl: run `cargo build --release` (or without \
         --release) first",
        path.display()
    )]
    NotBuilt { path: PathBuf },
    /// The state directory (or a log in it) could not be made absolute or created.
    #[error("{error}")]
    StateDir { path: PathBuf, error: io::Error },
    /// The state directory's path could not go into the configuration safely.
    #[error(
        "{}: choose a state directory whose path has no spaces, quotes, backslashes or \
         control characters (--state)",
        path.display()
    )]
    UnsafeStatePath { path: PathBuf },
    /// A file or directory under the state directory (the config, the grants, a log).
    #[error("{}: {error}", path.display())]
    Write { path: PathBuf, error: io::Error },
    /// `name` could not be started.
    #[error("{name}: {error}")]
    Spawn {
        name: &'static str,
        error: io::Error,
    },
    /// `name` exited before READY=1; `log` is what it wrote.
    // The log may quote what the model or a tool wrote: set apart, inert.
    #[error("{name} exited ({status}):\n{}", inert::block(log).trim_end())]
    Exited {
        name: &'static str,
        status: ExitStatus,
        log: String,
    },
    /// `name` said nothing within the time allowed.
    #[error("{name} did not become ready; see {}", log.display())]
    Silent { name: &'static str, log: PathBuf },
    /// `name`'s notify socket failed.
    #[error("{name}: {error}; see {}", log.display())]
    NotReady {
        name: &'static str,
        error: NotReady,
        log: PathBuf,
    },
    /// The fake llama-server printed no address: it refused `script` (its log says why);
    /// `status` when it exited by itself.
    #[error("{}", fake_refused(fake, script, status.as_ref(), log))]
    FakeRefused {
        fake: PathBuf,
        script: PathBuf,
        status: Option<ExitStatus>,
        log: String,
    },
    #[error("{0}")]
    FakeRead(io::Error),
    /// The stack was stopped (an interrupt) while a role was starting: it is not started, or
    /// stopped as it came up.
    #[error("the stack is stopping: {0} was not started")]
    Stopping(&'static str),
    /// Another `bxctl dev` holds the state directory's lock: nothing was touched.
    #[error("{}", locked(path, *pid))]
    Locked { path: PathBuf, pid: Option<u32> },
    /// `--grants DIR` is not a directory.
    #[error(
        "--grants {}: not a directory (it holds one grant file per grant, \
         docs/grants.md)",
        path.display()
    )]
    NoGrants { path: PathBuf },
    /// `STATE/jobs.toml` is not `[[jobs]]` entries alone.
    #[error(
        "{}: {error}\nhelp: it holds only [[jobs]] entries (docs/jobs.md), which \
         `bxctl dev` adds to its config.toml",
        path.display()
    )]
    Jobs {
        path: PathBuf,
        error: proto::TomlError,
    },
    /// `STATE/mcp.toml` is not `[[mcp]]` entries alone.
    #[error(
        "{}: {error}\nhelp: it holds only [[mcp]] entries (docs/mcp.md), which \
         `bxctl dev` adds to its config.toml",
        path.display()
    )]
    Mcp {
        path: PathBuf,
        error: proto::TomlError,
    },
    /// The signal thread could not be set up.
    #[error("cannot watch signals: {0}")]
    Signals(io::Error),
    /// Writing what `bxctl dev` says while it starts.
    #[error("{0}")]
    Say(io::Error),
    /// `--llama-url` is not a URL inferproxy may use.
    #[error(
        "--llama-url {url:?}: {reason}\nhelp: give the address llama-server listens on, \
         on this machine, for example `--llama-url http://127.0.0.1:8080` \
         (docs/model.md)"
    )]
    LlamaUrl { url: String, reason: &'static str },
    /// No llama-server to start: not on `PATH` (`given` none), or `--llama-server` names no file.
    #[error("{}", no_llama_server(given.as_deref()))]
    NoLlamaServer { given: Option<PathBuf> },
    /// `--model` cannot be read.
    #[error(
        "--model {}: {error}\nhelp: give the path of a model file in GGUF form \
         (docs/model.md says which models call tools)",
        path.display()
    )]
    ModelFile { path: PathBuf, error: io::Error },
    /// No free port for llama-server.
    #[error("no free port on 127.0.0.1 for llama-server: {0}")]
    Port(io::Error),
    /// The model did not answer within the wait: at `url`, named by `given_by`, after
    /// `waited` seconds, because `why`; `help` says where to look.
    #[error(
        "the model at {url} ({given_by}) is not usable after {waited}s: {why}\nhelp: \
         {help}"
    )]
    ModelUnready {
        url: String,
        given_by: &'static str,
        waited: u64,
        why: String,
        help: String,
    },
}

/// The fake llama-server refused its script: how it ended, its words set apart and inert
/// (they quote the script, which is the owner's but may be anything), and how to check it.
fn fake_refused(fake: &Path, script: &Path, status: Option<&ExitStatus>, log: &str) -> String {
    let how = status.map_or("did not start".to_owned(), |s| format!("exited ({s})"));
    format!(
        "fake-llama-server {how} with the script {}:\n{}\nhelp: check the script \
         with `{} --script {} --check`; its format is in \
         docs/fake-llama-server.md",
        script.display(),
        inert::block(log.trim_end()).trim_end(),
        crate::hint::quote(&fake.display().to_string()),
        crate::hint::quote(&script.display().to_string()),
    )
}

/// Another `bxctl dev` holds the lock at `path`: who, and how to stop it.
fn locked(path: &Path, pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!(
            "another `bxctl dev` (PID {pid}) runs the stack under {}; nothing \
             was changed\nhelp: stop it with /quit or Ctrl-C in its terminal, or \
             `kill {pid}`; or give this one another --state",
            path.parent().unwrap_or(path).display()
        ),
        None => format!(
            "another `bxctl dev` holds {}; nothing was changed\nhelp: stop it, or \
             give this one another --state",
            path.display()
        ),
    }
}

/// No llama-server to start, `given` or on `PATH`.
fn no_llama_server(given: Option<&Path>) -> String {
    match given {
        None => "llama-server is not on PATH\nhelp: install llama.cpp's server (docs/model.md \
                 says where to get it), or name it with --llama-server PATH"
            .to_owned(),
        Some(path) => format!(
            "--llama-server {}: no such file\nhelp: name llama.cpp's `llama-server` \
             program (docs/model.md), or leave --llama-server out to use the one on PATH",
            path.display()
        ),
    }
}
