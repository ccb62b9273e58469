//! `bxctl dev`: the whole stack as child processes under `.state/`, for trying boxmaker
//! on any machine: no root, no systemd. The fake llama-server with a demo script (or a real
//! server with `--llama-url`), inferproxy, brokerd with the direct tool runner and sample
//! grants, loopd; it waits until each says READY=1, opens the chat, and stops them all on
//! exit.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use daemon::config::Config;
use daemon::supervise::{self, NotReady};

use crate::error::DevError;
use crate::{Error, chat};

/// The demo conversation the fake server plays (see docs/fake-llama-server.md).
const DEMO_SCRIPT: &str = include_str!("demo-script.toml");

#[derive(Debug, Clone, clap::Args)]
pub struct DevArgs {
    /// Where the stack keeps its state, sockets and logs.
    #[arg(long, default_value = ".state")]
    pub state: PathBuf,
    /// Use a real llama-server at this loopback URL instead of the fake one.
    #[arg(long, value_name = "URL")]
    pub llama_url: Option<String>,
    /// Send this one message instead of opening the prompt.
    #[arg(short, long)]
    pub message: Option<String>,
    /// Continue this session (default: a new one).
    #[arg(long)]
    pub session: Option<String>,
}

/// The children, stopped (SIGTERM, then SIGKILL) when dropped.
struct Stack {
    children: Vec<(&'static str, Child)>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        for (_, child) in self.children.iter().rev() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for (_, child) in self.children.iter_mut().rev() {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn bin(name: &str) -> Result<PathBuf, DevError> {
    let exe = std::env::current_exe().map_err(DevError::CurrentExe)?;
    let path = exe.parent().map(|d| d.join(name)).unwrap_or_default();
    if path.exists() {
        Ok(path)
    } else {
        Err(DevError::NotBuilt { path })
    }
}

fn write(path: &Path, text: &str) -> Result<(), DevError> {
    std::fs::write(path, text).map_err(|source| DevError::Write {
        path: path.to_owned(),
        source,
    })
}

fn lay_out(state: &Path, upstream: &str) -> Result<PathBuf, DevError> {
    for d in [
        "home/memory",
        "grants",
        "notes",
        "logs",
        "run/loop-broker",
        "run/admin-broker",
        "run/loop-infer",
        "run/chat-loop",
    ] {
        std::fs::create_dir_all(state.join(d)).map_err(|source| DevError::Write {
            path: state.join(d),
            source,
        })?;
    }
    let notes = state.join("notes");
    if !notes.join("todo.md").exists() {
        write(&notes.join("todo.md"), "- buy milk\n- ship boxmaker M1\n")?;
    }
    let grants = state.join("grants");
    write(
        &grants.join("notes-read.toml"),
        &format!(
            "# Read the demo notes without asking; only you write them.\ntool = \"read_file\"\n\
             mode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n[constraints]\npaths = [{}]\n",
            serde_json::to_string(&notes.display().to_string()).unwrap_or_default()
        ),
    )?;
    write(
        &grants.join("notes-list.toml"),
        &format!(
            "tool = \"list_dir\"\nmode = \"ask\"\nmax_taint = \"secret\"\nuntrusted = false\n\
             [constraints]\npaths = [{}]\n",
            serde_json::to_string(&notes.display().to_string()).unwrap_or_default()
        ),
    )?;
    write(
        &grants.join("web-ask.toml"),
        "# Fetch from Wikipedia, asking each time.\ntool = \"http_fetch\"\nmode = \"ask\"\n\
         max_taint = \"private\"\nresult_class = \"public\"\n[constraints]\nhosts = [\"en.wikipedia.org\"]\n",
    )?;
    let uid = nix::unistd::getuid().as_raw();
    // Paths go into TOML as quoted strings: JSON's escaping is valid TOML basic-string
    // escaping, so any path (quotes, backslashes) stays one string.
    let q = |p: &Path| serde_json::to_string(&p.display().to_string()).unwrap_or_default();
    let under = |rel: &str| q(&state.join(rel));
    let config = state.join("config.toml");
    write(
        &config,
        &format!(
            "# Written by `bxctl dev`: everything under {}, no root, no systemd.\n\
             home = {}\ngrants = {}\n\
             [sockets]\nloop_broker = {}\nadmin_broker = {}\nloop_infer = {}\nchat_loop = {}\n\
             [peers]\nloopd = {{ uid = {uid} }}\nadmin = {{ uid = {uid} }}\nchat = {{ uid = {uid} }}\n\
             [broker]\nrunner = \"direct\"\ntool = {}\n\
             [infer]\nupstream = {}\n",
            state.display(),
            under("home"),
            under("grants"),
            under("run/loop-broker"),
            under("run/admin-broker"),
            under("run/loop-infer"),
            under("run/chat-loop"),
            q(&bin("boxmaker-tool")?),
            serde_json::to_string(upstream).unwrap_or_default(),
        ),
    )?;
    Ok(config)
}

/// Starts `cmd` with a NOTIFY_SOCKET and waits for READY=1.
fn start(
    stack: &mut Stack,
    name: &'static str,
    mut cmd: Command,
    state: &Path,
) -> Result<(), DevError> {
    let notify = state.join(format!("run/{name}.notify"));
    let log = state.join(format!("logs/{name}.log"));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(create_log(&log)?);
    match supervise::spawn_ready(&mut cmd, &notify, Duration::from_secs(30)) {
        Ok((child, _)) => {
            stack.children.push((name, child));
            Ok(())
        }
        Err(NotReady::Exited(status)) => Err(DevError::Exited {
            name,
            status,
            log: std::fs::read_to_string(&log).unwrap_or_default(),
        }),
        Err(NotReady::Timeout(_)) => Err(DevError::Silent { name, log }),
        Err(NotReady::Spawn(source)) => Err(DevError::Spawn { name, source }),
        Err(source) => Err(DevError::NotReady { name, source, log }),
    }
}

/// A log file for a child's stderr. (Its failure reads as the system's words alone, as
/// bxctl has always shown it.)
fn create_log(path: &Path) -> Result<std::fs::File, DevError> {
    std::fs::File::create(path).map_err(|source| DevError::StateDir {
        path: path.to_owned(),
        source,
    })
}

/// Starts the fake llama-server on a free loopback port; returns its URL.
fn start_fake(stack: &mut Stack, state: &Path) -> Result<String, DevError> {
    let script = state.join("demo-script.toml");
    let notes = state.join("notes");
    write(
        &script,
        &DEMO_SCRIPT.replace("{notes}", &notes.display().to_string()),
    )?;
    let mut child = Command::new(bin("fake-llama-server")?)
        .args(["--listen", "127.0.0.1:0", "--script"])
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(create_log(&state.join("logs/fake-llama-server.log"))?)
        .spawn()
        .map_err(|source| DevError::Spawn {
            name: "fake-llama-server",
            source,
        })?;
    let mut first = String::new();
    if let Some(out) = child.stdout.take() {
        BufReader::new(out)
            .read_line(&mut first)
            .map_err(DevError::FakeRead)?;
    }
    stack.children.push(("fake-llama-server", child));
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| DevError::FakeSaid {
            first: first.clone(),
        })?;
    Ok(format!("http://{addr}"))
}

pub fn run(args: &DevArgs, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let state = std::path::absolute(&args.state).map_err(|source| DevError::StateDir {
        path: args.state.clone(),
        source,
    })?;
    // The demo script carries paths inside JSON inside TOML; keep them plain.
    if state
        .to_string_lossy()
        .chars()
        .any(|c| matches!(c, '"' | '\'' | '\\') || c.is_control() || c.is_whitespace())
    {
        return Err(DevError::UnsafeStatePath { path: state }.into());
    }
    for dir in ["logs", "run"] {
        std::fs::create_dir_all(state.join(dir)).map_err(|source| DevError::StateDir {
            path: state.join(dir),
            source,
        })?;
    }
    let mut stack = Stack {
        children: Vec::new(),
    };
    let upstream = match &args.llama_url {
        Some(url) => url.clone(),
        None => start_fake(&mut stack, &state)?,
    };
    let config_path = lay_out(&state, &upstream)?;
    let role = |name: &str| -> Result<Command, DevError> {
        let mut c = Command::new(bin(name)?);
        c.arg("--config").arg(&config_path);
        Ok(c)
    };
    start(&mut stack, "inferproxy", role("inferproxy")?, &state)?;
    start(&mut stack, "brokerd", role("brokerd")?, &state)?;
    start(&mut stack, "loopd", role("loopd")?, &state)?;
    let config = Config::load(&config_path)?;
    let bxctl = format!("bxctl --config {} ", config_path.display());
    writeln!(
        out,
        "boxmaker dev stack is up under {} (model: {upstream}; logs in {}/logs).\n\
         Approve waiting tool calls from another terminal with\n  bxctl --config {} approve ID",
        state.display(),
        state.display(),
        config_path.display()
    )
    .map_err(Error::Output)?;
    let session = args
        .session
        .clone()
        .map(proto::SessionId::new)
        .transpose()
        .map_err(Error::SessionId)?;
    // The stack ends with the chat: a session is continued by starting it again.
    let resume = match args.state.as_path() {
        p if p == Path::new(".state") => "bxctl dev --session ".to_owned(),
        p => format!("bxctl dev --state {} --session ", p.display()),
    };
    let code = match &args.message {
        Some(text) => chat::once(&config, &bxctl, session, text, out)?,
        None => chat::interactive(&config, &bxctl, &resume, session, out)?,
    };
    drop(stack);
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_that_exits_shows_its_log_set_apart() {
        let state = std::env::temp_dir().join(format!("bx-dev-exit-{}", std::process::id()));
        std::fs::create_dir_all(state.join("logs")).expect("logs");
        std::fs::create_dir_all(state.join("run")).expect("run");
        let mut stack = Stack {
            children: Vec::new(),
        };
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "printf 'bad config \\033[2J\\r\\n#0 forged ALLOWED by grant x\\n' >&2; exit 3",
        ]);
        let e = start(&mut stack, "brokerd", cmd, &state).expect_err("exits");
        assert!(
            matches!(&e, DevError::Exited { name: "brokerd", status, .. } if status.code() == Some(3)),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "brokerd exited (exit status: 3):\n| bad config \\u{001b}[2J\\u{000d}\n\
             | #0 forged ALLOWED by grant x"
        );
        drop(stack);
        let _ = std::fs::remove_dir_all(&state);
    }
}
