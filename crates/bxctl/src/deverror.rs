//! Why `bxctl dev` could not start the stack: one variant per thing that can go wrong, each
//! with what it was about and, where the owner can act, a `help:` line.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

use daemon::supervise::NotReady;

/// Why `bxctl dev` could not start the stack.
#[derive(Debug)]
pub enum DevError {
    /// Where bxctl itself is (to find the roles next to it).
    CurrentExe(io::Error),
    /// A role's binary is not next to bxctl.
    NotBuilt {
        path: PathBuf,
    },
    /// The state directory (or a log in it) could not be made absolute or created.
    StateDir {
        path: PathBuf,
        source: io::Error,
    },
    /// The state directory's path could not go into the configuration safely.
    UnsafeStatePath {
        path: PathBuf,
    },
    /// A file or directory under the state directory (the config, the grants, a log).
    Write {
        path: PathBuf,
        source: io::Error,
    },
    /// `name` could not be started.
    Spawn {
        name: &'static str,
        source: io::Error,
    },
    /// `name` exited before READY=1; `log` is what it wrote.
    Exited {
        name: &'static str,
        status: ExitStatus,
        log: String,
    },
    /// `name` said nothing within the time allowed.
    Silent {
        name: &'static str,
        log: PathBuf,
    },
    /// `name`'s notify socket failed.
    NotReady {
        name: &'static str,
        source: NotReady,
        log: PathBuf,
    },
    /// The fake llama-server printed no address: it refused `script` (its log says why);
    /// `status` when it exited by itself.
    FakeRefused {
        fake: PathBuf,
        script: PathBuf,
        status: Option<ExitStatus>,
        log: String,
    },
    FakeRead(io::Error),
    /// Another `bxctl dev` holds the state directory's lock: nothing was touched.
    Locked {
        path: PathBuf,
        pid: Option<u32>,
    },
    /// `--grants DIR` is not a directory.
    NoGrants {
        path: PathBuf,
    },
    /// `STATE/jobs.toml` is not `[[jobs]]` entries alone.
    Jobs {
        path: PathBuf,
        source: proto::TomlError,
    },
    /// `STATE/mcp.toml` is not `[[mcp]]` entries alone.
    Mcp {
        path: PathBuf,
        source: proto::TomlError,
    },
    /// The signal thread could not be set up.
    Signals(io::Error),
    /// Writing what `bxctl dev` says while it starts.
    Say(io::Error),
    /// `--llama-url` is not a URL inferproxy may use.
    LlamaUrl {
        url: String,
        reason: &'static str,
    },
    /// No llama-server to start: not on `PATH` (`given` none), or `--llama-server` names no file.
    NoLlamaServer {
        given: Option<PathBuf>,
    },
    /// `--model` cannot be read.
    ModelFile {
        path: PathBuf,
        source: io::Error,
    },
    /// No free port for llama-server.
    Port(io::Error),
    /// The model did not answer within the wait: at `url`, named by `given_by`, after
    /// `waited` seconds, because `why`; `help` says where to look.
    ModelUnready {
        url: String,
        given_by: &'static str,
        waited: u64,
        why: String,
        help: String,
    },
}

impl fmt::Display for DevError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The system's words alone, as bxctl has always shown them.
            Self::CurrentExe(e) | Self::FakeRead(e) => e.fmt(f),
            Self::StateDir { source, .. } => source.fmt(f),
            Self::NotBuilt { path } => write!(
                f,
                "{} is not built next to bxctl: run `cargo build --release` (or without \
                 --release) first",
                path.display()
            ),
            Self::UnsafeStatePath { path } => write!(
                f,
                "{}: choose a state directory whose path has no spaces, quotes, backslashes or \
                 control characters (--state)",
                path.display()
            ),
            Self::Write { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Spawn { name, source } => write!(f, "{name}: {source}"),
            // The log may quote what the model or a tool wrote: set apart, inert.
            Self::Exited { name, status, log } => write!(
                f,
                "{name} exited ({status}):\n{}",
                inert::block(log).trim_end()
            ),
            Self::Silent { name, log } => {
                write!(f, "{name} did not become ready; see {}", log.display())
            }
            Self::NotReady { name, source, log } => {
                write!(f, "{name}: {source}; see {}", log.display())
            }
            Self::FakeRefused {
                fake,
                script,
                status,
                log,
            } => {
                let how = status.map_or("did not start".to_owned(), |s| format!("exited ({s})"));
                // Its words quote the script, which is the owner's but may be anything.
                write!(
                    f,
                    "fake-llama-server {how} with the script {}:\n{}\nhelp: check the script \
                     with `{} --script {} --check`; its format is in \
                     docs/fake-llama-server.md",
                    script.display(),
                    inert::block(log.trim_end()).trim_end(),
                    crate::hint::quote(&fake.display().to_string()),
                    crate::hint::quote(&script.display().to_string()),
                )
            }
            Self::Locked { path, pid } => {
                let dir = path.parent().unwrap_or(path).display();
                match pid {
                    Some(pid) => write!(
                        f,
                        "another `bxctl dev` (PID {pid}) runs the stack under {dir}; nothing \
                         was changed\nhelp: stop it with /quit or Ctrl-C in its terminal, or \
                         `kill {pid}`; or give this one another --state"
                    ),
                    None => write!(
                        f,
                        "another `bxctl dev` holds {}; nothing was changed\nhelp: stop it, or \
                         give this one another --state",
                        path.display()
                    ),
                }
            }
            Self::NoGrants { path } => write!(
                f,
                "--grants {}: not a directory (it holds one grant file per grant, \
                 docs/grants.md)",
                path.display()
            ),
            Self::Jobs { path, source } => write!(
                f,
                "{}: {source}\nhelp: it holds only [[jobs]] entries (docs/jobs.md), which \
                 `bxctl dev` adds to its config.toml",
                path.display()
            ),
            Self::Mcp { path, source } => write!(
                f,
                "{}: {source}\nhelp: it holds only [[mcp]] entries (docs/mcp.md), which \
                 `bxctl dev` adds to its config.toml",
                path.display()
            ),
            Self::Signals(e) => write!(f, "cannot watch signals: {e}"),
            Self::Say(e) => e.fmt(f),
            Self::LlamaUrl { url, reason } => write!(
                f,
                "--llama-url {url:?}: {reason}\nhelp: give the address llama-server listens on, \
                 on this machine, for example `--llama-url http://127.0.0.1:8080` \
                 (docs/model.md)"
            ),
            Self::NoLlamaServer { given: None } => f.write_str(
                "llama-server is not on PATH\nhelp: install llama.cpp's server (docs/model.md \
                 says where to get it), or name it with --llama-server PATH",
            ),
            Self::NoLlamaServer { given: Some(path) } => write!(
                f,
                "--llama-server {}: no such file\nhelp: name llama.cpp's `llama-server` \
                 program (docs/model.md), or leave --llama-server out to use the one on PATH",
                path.display()
            ),
            Self::ModelFile { path, source } => write!(
                f,
                "--model {}: {source}\nhelp: give the path of a model file in GGUF form \
                 (docs/model.md says which models call tools)",
                path.display()
            ),
            Self::Port(e) => write!(f, "no free port on 127.0.0.1 for llama-server: {e}"),
            Self::ModelUnready {
                url,
                given_by,
                waited,
                why,
                help,
            } => write!(
                f,
                "the model at {url} ({given_by}) is not usable after {waited}s: {why}\nhelp: \
                 {help}"
            ),
        }
    }
}

impl std::error::Error for DevError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::CurrentExe(e)
            | Self::FakeRead(e)
            | Self::Signals(e)
            | Self::Say(e)
            | Self::Port(e)
            | Self::ModelFile { source: e, .. }
            | Self::StateDir { source: e, .. }
            | Self::Write { source: e, .. }
            | Self::Spawn { source: e, .. } => Some(e),
            Self::NotReady { source, .. } => Some(source),
            Self::NotBuilt { .. }
            | Self::UnsafeStatePath { .. }
            | Self::Exited { .. }
            | Self::Silent { .. }
            | Self::Locked { .. }
            | Self::NoGrants { .. }
            | Self::FakeRefused { .. }
            | Self::LlamaUrl { .. }
            | Self::NoLlamaServer { .. }
            | Self::ModelUnready { .. } => None,
            Self::Jobs { source, .. } | Self::Mcp { source, .. } => Some(source),
        }
    }
}
