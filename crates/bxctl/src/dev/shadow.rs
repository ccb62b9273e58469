//! The hostile self-test's shadow stack (`bxctl verify --hostile`, docs/verify.md): the
//! same processes as `bxctl dev` (the fake llama-server playing a given script, inferproxy,
//! brokerd with the direct runner, loopd), in a scratch directory of the self-test's, with
//! a grants directory it wrote and lines of its own appended to the configuration
//! (`[broker.self_test]`), and the indexer watching, as under `bxctl dev` (the searches'
//! chains find what it indexed; the self-test stops and starts it around the searches it
//! plays as sources, [`Shadow::pause_indexer`]). No prompt; MCP servers only as the self-test's stand-ins
//! write `STATE/mcp.toml`; programs only as its stand-ins (`extra`), none of the
//! machine's; the jobs the self-test wrote in `STATE/jobs.toml`, and with `mattermost` the
//! fake Mattermost and gatewayd, as `bxctl dev --mattermost` starts them, for a job's
//! delivery. Stopped when dropped.

use std::path::Path;
use std::process::Command;

use config::Config;

use super::lock::StateLock;
use super::paths::bin;
use super::stack::Stack;
use super::{DevArgs, layout, model, ready};
use crate::Error;
use crate::error::DevError;

/// The indexer's name in the stack.
const INDEXER: &str = "indexer";

/// The indexer's command line: watching, a pass every second, as under `bxctl dev`.
fn indexer(config: &Path) -> Result<Command, Error> {
    let mut cmd = Command::new(bin("boxmaker-indexer")?);
    cmd.arg("--config").arg(config).arg("--watch");
    Ok(cmd)
}

/// A running shadow stack: its processes and its directory's lock.
pub struct Shadow {
    stack: std::sync::Arc<Stack>,
    held: StateLock,
    state: std::path::PathBuf,
    config: std::path::PathBuf,
    credentials: std::path::PathBuf,
    gateway: Option<layout::Gateway>,
}

impl Shadow {
    /// The channel gatewayd follows, as its owner reads it (`GET /channels/{id}/posts`, a
    /// `PostList`); `None` without the fake Mattermost.
    pub fn posts(&self) -> Option<Result<serde_json::Value, crate::mm::MmError>> {
        let g = self.gateway.as_ref()?;
        let mm = crate::mm::Mattermost::new(&g.server, super::mattermost::OWNER_TOKEN);
        Some(mm.get(&format!("/channels/{}/posts", g.channel)))
    }

    /// Stops `name` (`loopd` or `brokerd`) and starts it again, waiting for its READY=1.
    pub fn restart(&mut self, name: &'static str) -> Result<(), Error> {
        self.stack.stop_one(name);
        let cmd = self.command(name)?;
        self.stack.start(name, cmd, &self.state, &mut self.held)?;
        Ok(())
    }

    /// Stops the indexer: nothing more is indexed until [`Shadow::resume_indexer`].
    pub fn pause_indexer(&mut self) {
        self.stack.stop_one(INDEXER);
    }

    /// Starts the indexer again (watching): it indexes what changed while it was stopped.
    pub fn resume_indexer(&mut self) -> Result<(), Error> {
        let cmd = indexer(&self.config)?;
        self.stack
            .start(INDEXER, cmd, &self.state, &mut self.held)?;
        Ok(())
    }

    /// The command line of one of the shadow's daemons.
    fn command(&self, name: &'static str) -> Result<Command, Error> {
        let mut cmd = Command::new(bin(name)?);
        cmd.arg("--config").arg(&self.config);
        if name == "brokerd" {
            // The shadow's own stand-ins for the grants' secrets, as systemd's
            // `LoadCredential=` hands brokerd the real ones.
            cmd.env("CREDENTIALS_DIRECTORY", &self.credentials);
        }
        Ok(cmd)
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        self.stack.stop();
    }
}

/// Starts the stack under `state` with the grants in `grants`, the fake model playing
/// `script`, `extra` appended to the configuration `bxctl dev` writes, and brokerd's
/// credentials in `credentials`; its processes in `stack`, which the caller's signal thread
/// may stop at any moment (before it removes the shadow's directory: a role starting would
/// write there again). Returns it with the configuration it runs by.
pub fn start(
    state: &Path,
    grants: &Path,
    script: &Path,
    extra: &str,
    credentials: &Path,
    mattermost: bool,
    stack: std::sync::Arc<Stack>,
) -> Result<(Shadow, Config), Error> {
    let held = StateLock::take(state)?;
    layout::prepare(state, Some(grants), false)?;
    // No demo note: the shadow's notes are the self-test's alone, planted at the label it
    // gives them (a note brokerd has no record of reads secret, and raises every listing
    // and every search reaching its index partition). Removed before any role starts, so
    // the indexer never sees it.
    let demo = state.join(format!("home/memory/notes/{}.md", layout::DEMO_NOTE));
    match std::fs::remove_file(&demo) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(DevError::Write {
                path: demo,
                error: e,
            }
            .into());
        }
        _ => {}
    }
    let args = DevArgs {
        state: state.to_owned(),
        llama_url: None,
        model: None,
        llama_server: None,
        chat_template: None,
        ctx_size: 16384,
        script: Some(script.to_owned()),
        grants: Some(grants.to_owned()),
        reset: false,
        message: None,
        mattermost: false,
        session: None,
        resume: false,
    };
    // From here on the stack is stopped however this returns.
    let mut shadow = Shadow {
        stack,
        held,
        state: state.to_owned(),
        config: state.join("config.toml"),
        credentials: credentials.to_owned(),
        gateway: None,
    };
    let model = model::start(&args, state, &shadow.stack, &mut shadow.held)?;
    if mattermost {
        let trial = super::mattermost::start(state, &shadow.stack, &mut shadow.held)?;
        shadow.gateway = Some(trial.gateway);
    }
    let tool = bin("boxmaker-tool")?;
    let path = layout::config(
        state,
        grants,
        &tool,
        &model.upstream,
        shadow.gateway.as_ref(),
    )?;
    shadow.config.clone_from(&path);
    let mut text = std::fs::read_to_string(&path).map_err(|error| DevError::Write {
        path: path.clone(),
        error,
    })?;
    // No program of this machine's: the self-test maps each program a grant names to a
    // stand-in of its own, in `extra` (`verify::hostile::run`).
    let mine = super::samples::programs(super::samples::python3().as_deref());
    if !mine.is_empty() {
        text = text.replacen(&mine, "", 1);
    }
    text.push_str(extra);
    std::fs::write(&path, text).map_err(|error| DevError::Write {
        path: path.clone(),
        error,
    })?;
    // gatewayd before brokerd, which links to it at start.
    let gatewayd = shadow.gateway.as_ref().map(|_| "gatewayd");
    for name in ["inferproxy"]
        .into_iter()
        .chain(gatewayd)
        .chain(["brokerd", "loopd"])
    {
        let cmd = shadow.command(name)?;
        shadow.stack.start(name, cmd, state, &mut shadow.held)?;
    }
    let cmd = indexer(&path)?;
    shadow.stack.start(INDEXER, cmd, state, &mut shadow.held)?;
    let config = Config::load(&path)?;
    ready::wait(
        &config.sockets.loop_infer_sock(),
        &model.ready,
        false,
        &mut || model.gone(&shadow.stack),
        &mut std::io::sink(),
    )?;
    Ok((shadow, config))
}
