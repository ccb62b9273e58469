//! `bxctl dev`: the whole stack as child processes under `.state/`, for trying boxmaker
//! on any machine: no root, no systemd. The fake llama-server with a demo script (or the
//! owner's `--script`, or a real server with `--llama-url`), inferproxy, brokerd with the
//! direct tool runner and sample grants (or the owner's `--grants`), loopd. It takes the
//! state directory's lock before touching anything, waits until each role says READY=1 and
//! the model's `/health` answers, opens the chat, and stops them all on exit, on Ctrl-C at
//! the prompt, SIGTERM or the terminal's hang-up; should bxctl die otherwise, the roles
//! stop with it (`daemon::parent`, the fake through its standard input).

mod args;
mod layout;
mod lock;
mod mattermost;
mod model;
pub(crate) mod paths;
mod ready;
mod samples;
pub(crate) mod shadow;
pub mod stack;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::Arc;

use config::Config;

use crate::error::DevError;
use crate::signals::{self, Interrupt};
use crate::{Error, chat, hint};
use stack::Stack;

pub use args::DevArgs;
use paths::{absolute, bin};

/// The demo note was written just now, so brokerd has no record of it, and a note it has no
/// record of reads as secret and untrusted (docs/memory.md). You wrote it (through `bxctl
/// dev`), so it is labelled as yours, private and trusted, as `bxctl notes relabel` does
/// (audited).
fn label_demo_note(
    config: &Config,
    state: &std::path::Path,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let msg = proto::Message::NoteRelabel(proto::notes::NoteRelabel {
        name: layout::DEMO_NOTE.to_owned(),
        class: proto::DataClass::Private,
        untrusted: false,
    });
    match crate::admin::call(config, msg)? {
        proto::Message::NoteRelabelled(_) => writeln!(
            out,
            "demo note {} written to {}/home/memory/notes and labelled private, as yours \
             (audited; `bxctl notes list` shows it)",
            layout::DEMO_NOTE,
            state.display()
        )
        .map_err(Error::Output),
        other => Err(crate::error::unexpected(&other)),
    }
}

/// `bxctl dev-exec PROGRAM ARGS…`: asks the kernel to stop this process when the `bxctl
/// dev` that started it exits (`daemon::parent`; the request outlives `exec`), then becomes
/// PROGRAM. So a program that knows nothing of boxmaker (llama-server) ends with the stack
/// however bxctl dies.
pub fn exec(program: &[std::ffi::OsString]) -> Result<ExitCode, Error> {
    use std::os::unix::process::CommandExt;
    daemon::parent::follow();
    let (first, rest) = program
        .split_first()
        .ok_or_else(|| Error::Usage("dev-exec: no program".to_owned()))?;
    let source = Command::new(first).args(rest).exec();
    Err(DevError::Spawn {
        name: "dev-exec",
        error: source,
    }
    .into())
}

pub fn run(args: &DevArgs, out: &mut dyn Write) -> Result<ExitCode, Error> {
    // The flags first: a bad one is said before anything is started or written.
    model::check_url(args)?;
    let state = absolute(&args.state)?;
    // The demo script carries paths inside JSON inside TOML; keep them plain.
    if state
        .to_string_lossy()
        .chars()
        .any(|c| matches!(c, '"' | '\'' | '\\') || c.is_control() || c.is_whitespace())
    {
        return Err(DevError::UnsafeStatePath { path: state }.into());
    }
    // First, before anything under `state` changes: one stack per directory.
    let mut held = lock::StateLock::take(&state)?;
    let grants_arg = args.grants.as_deref().map(absolute).transpose()?;
    let prepared = layout::prepare(&state, grants_arg.as_deref(), args.reset)?;
    if prepared.grants {
        writeln!(out, "sample grants written to {}/grants", state.display())
            .map_err(Error::Output)?;
    }
    let stack = Arc::new(Stack::default());
    let interrupt = Arc::new(Interrupt::default());
    let on_stop = stack.clone();
    signals::watch(interrupt.clone(), move || on_stop.stop()).map_err(DevError::Signals)?;
    let code = up(
        args, &state, grants_arg, prepared, &stack, &mut held, &interrupt, out,
    );
    stack.stop();
    code
}

#[allow(clippy::too_many_arguments)]
fn up(
    args: &DevArgs,
    state: &std::path::Path,
    grants: Option<PathBuf>,
    prepared: layout::Prepared,
    stack: &Stack,
    held: &mut lock::StateLock,
    interrupt: &Interrupt,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let model = model::start(args, state, stack, held)?;
    let grants = grants.unwrap_or_else(|| state.join("grants"));
    let trial = if args.mattermost {
        Some(mattermost::start(state, stack, held)?)
    } else {
        None
    };
    let config_path = layout::config(
        state,
        &grants,
        &bin("boxmaker-tool")?,
        &model.upstream,
        trial.as_ref().map(|t| &t.gateway),
    )?;
    // gatewayd before brokerd, which reads `[gateway]` and links to it at start.
    let roles: &[&'static str] = if trial.is_some() {
        &["inferproxy", "gatewayd", "brokerd", "loopd"]
    } else {
        &["inferproxy", "brokerd", "loopd"]
    };
    for &name in roles {
        let mut cmd = Command::new(bin(name)?);
        cmd.arg("--config").arg(&config_path);
        stack.start(name, cmd, state, held)?;
    }
    // The indexer of the notes and session logs, watching (under systemd a oneshot unit
    // its path unit starts).
    let mut cmd = Command::new(bin("boxmaker-indexer")?);
    cmd.arg("--config").arg(&config_path).arg("--watch");
    stack.start("indexer", cmd, state, held)?;
    let config = Config::load(&config_path)?;
    ready::wait(
        &config.sockets.loop_infer_sock(),
        &model.ready,
        std::io::stdout().is_terminal(),
        &mut || model.gone(stack),
        out,
    )?;
    let bxctl = hint::bxctl(&config_path);
    if prepared.note {
        label_demo_note(&config, state, out)?;
    }
    writeln!(
        out,
        "boxmaker dev stack is up under {} (model: {}; logs in {}/logs).\n\
         For bxctl in another terminal:\n  export {}={}\n\
         Approve waiting tool calls there with\n  {bxctl}approve ID",
        state.display(),
        model.banner,
        state.display(),
        hint::CONFIG_ENV,
        hint::quote(&config_path.display().to_string()),
    )
    .map_err(Error::Output)?;
    if let Some(trial) = trial {
        writeln!(
            out,
            "Mattermost (a fake server, on this machine only) at {}; gatewayd's log is {}/logs/gatewayd.log",
            trial.gateway.server,
            state.display()
        )
        .map_err(Error::Output)?;
        let view = crate::mmview::Trial {
            mm: crate::mm::Mattermost::new(&trial.gateway.server, mattermost::OWNER_TOKEN),
            owner: mattermost::OWNER_ID.to_owned(),
            bot: mattermost::BOT_ID.to_owned(),
            channel: mattermost::CHANNEL.to_owned(),
        };
        return crate::mmview::chat(view, out);
    }
    let start = crate::chat_start(args.session.clone(), args.resume)?;
    // The stack ends with the chat: a session is continued by starting it again, with
    // the same state directory, by a command that works as printed.
    let program = hint::quote(&hint::program());
    let resume = if args.state == std::path::Path::new(".state") {
        format!("{program} dev --session ")
    } else {
        format!(
            "{program} dev --state {} --session ",
            hint::quote(&state.display().to_string())
        )
    };
    match &args.message {
        Some(text) => chat::once(&config, &bxctl, start, text, interrupt, out),
        None => chat::interactive(&config, &bxctl, &resume, start, interrupt, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state directory of the test's own (`name`), with its logs and run directories,
    /// and its lock.
    fn state(name: &str) -> (PathBuf, lock::StateLock) {
        let state = std::env::temp_dir().join(format!("bx-dev-{name}-{}", std::process::id()));
        std::fs::create_dir_all(state.join("logs")).expect("logs");
        std::fs::create_dir_all(state.join("run")).expect("run");
        let held = lock::StateLock::take(&state).expect("lock");
        (state, held)
    }

    #[test]
    fn a_role_that_exits_shows_its_log_set_apart() {
        let (state, mut held) = state("exit");
        let stack = Stack::default();
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "printf 'bad config \\033[2J\\r\\n#0 forged ALLOWED by grant x\\n' >&2; exit 3",
        ]);
        let e = stack
            .start("brokerd", cmd, &state, &mut held)
            .expect_err("exits");
        assert!(
            matches!(&e, DevError::Exited { name: "brokerd", status, .. } if status.code() == Some(3)),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "brokerd exited (exit status: 3):\n| bad config \\u{001b}[2J\\u{000d}\n\
             | #0 forged ALLOWED by grant x"
        );
        stack.stop();
        let _ = std::fs::remove_dir_all(&state);
    }

    /// Once stopped (an interrupt), a stack starts nothing: a role asked to start is not,
    /// with why.
    #[test]
    fn a_stopped_stack_starts_nothing() {
        let (state, mut held) = state("stopped");
        let stack = Stack::default();
        stack.stop();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "touch started; sleep 30"])
            .current_dir(&state);
        let e = stack
            .start_plain("brokerd", cmd, &state.join("logs/brokerd.log"), &mut held)
            .expect_err("stopped");
        assert!(matches!(e, DevError::Stopping("brokerd")), "{e:?}");
        assert!(!state.join("started").exists(), "it ran");
        let _ = std::fs::remove_dir_all(&state);
    }
}
