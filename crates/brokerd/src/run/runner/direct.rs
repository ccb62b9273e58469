//! The direct runner: the tool as a plain child process of brokerd, with brokerd's rights.
//! It exists for `bxctl dev` and the stack tests, which need neither root nor systemd; the
//! NixOS module never configures it. The tool still enforces its own roots and addresses
//! from the invocation, but nothing else confines it: a write's unit walks below the
//! granted root itself (its `openat2` is all there is), and a `run`'s program runs with
//! brokerd's rights, seeing the whole file system and the network, with no memory or task
//! limit (only the timeout and the output caps hold).

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::child::{self, Job};
use super::spec::{RunOutcome, RunSpec, Secret, check_common};
use super::stage::sent;
use crate::run::hands::{StageSpec, StageUnit};

/// Runs the tool without isolation. Build it with [`DirectRunner::new`], which warns.
#[derive(Debug, Clone)]
pub struct DirectRunner {
    /// The `boxmaker-tool` binary.
    pub tool: PathBuf,
}

impl DirectRunner {
    /// Says on stderr, once, that tools will run without isolation: this runner must never
    /// be mistaken for the systemd one in a deployment.
    pub fn new(tool: impl Into<PathBuf>) -> Self {
        daemon::log::warn(format_args!(
            "direct tool runner: tools run without isolation; development and tests only"
        ));
        Self { tool: tool.into() }
    }

    pub(super) fn execute(
        &self,
        spec: &RunSpec,
        decode: &dyn Fn(&[u8]) -> Result<proto::toolrun::ToolOutput, String>,
    ) -> RunOutcome {
        if let Err(e) = check_common(spec) {
            return RunOutcome::failed(format!("tool run refused: {e}"));
        }
        // A run without a granted working directory gets an empty one of its own, removed
        // after it (held until the run is over).
        let work = match &spec.stage {
            Some(StageSpec {
                unit: StageUnit::Run { workdir: None, .. },
                ..
            }) => match WorkDir::create() {
                Ok(dir) => Some(dir),
                Err(e) => return RunOutcome::failed(format!("making the working directory: {e}")),
            },
            _ => None,
        };
        let encoded = match &spec.stage {
            // No unit here: the root and the working directory are where they are.
            Some(stage) => {
                let (root, workdir) = match &stage.unit {
                    StageUnit::Write { root, .. } => (root.clone(), String::new()),
                    StageUnit::Run { workdir, .. } => (
                        String::new(),
                        workdir.clone().unwrap_or_else(|| {
                            work.as_ref().map(WorkDir::path).unwrap_or_default()
                        }),
                    ),
                };
                serde_json::to_vec(&sent(stage, &root, &workdir)).map(|input| (None, input))
            }
            // A plain tool call, or an MCP session's mode and input.
            None => spec.input(),
        };
        let (mode, input) = match encoded {
            Ok(input) => input,
            Err(e) => return RunOutcome::failed(format!("encoding the tool request: {e}")),
        };
        // Held until the run is over; dropping it removes the copy of the secret.
        let credentials = match &spec.secret {
            Some(secret) => match CredentialsDir::create(secret) {
                Ok(dir) => Some(dir),
                Err(e) => {
                    return RunOutcome::failed(format!(
                        "preparing credential {:?} for the tool: {e}",
                        secret.name
                    ));
                }
            },
            None => None,
        };
        let mut command = Command::new(&self.tool);
        command.args(mode);
        // Nothing of brokerd's environment (its own $CREDENTIALS_DIRECTORY, NOTIFY_SOCKET,
        // LISTEN_FDS) reaches the tool, as with a systemd unit.
        command
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/");
        if let Some(dir) = &credentials {
            command.env("CREDENTIALS_DIRECTORY", dir.path());
        }
        let outcome = child::run(
            command,
            Job {
                label: "tool",
                input,
                limits: &spec.limits,
                // No systemd here: brokerd's deadline is the only one.
                deadline: spec.limits.time_limit,
                abort: &|| {},
                explain_exit: child::explain_tool_exit,
                decode,
                stage: spec.stage.is_some(),
            },
        );
        drop(credentials);
        drop(work);
        outcome
    }
}

/// A run's own empty working directory (mode 0700), removed with all in it on drop.
#[derive(Debug)]
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn create() -> io::Result<Self> {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
        let path = std::env::temp_dir().join(format!("boxmaker-work-{}", proto::hex(&random)));
        DirBuilder::new().mode(0o700).create(&path)?;
        Ok(Self { path })
    }

    fn path(&self) -> String {
        self.path.display().to_string()
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        // Best effort: what the program left is its own, in a directory private to brokerd's
        // user (remove_dir_all does not follow links).
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// A private directory holding a copy of one secret, as systemd's `LoadCredential=` would
/// provide it: the directory 0700, the file 0400, both removed on drop.
#[derive(Debug)]
struct CredentialsDir {
    path: PathBuf,
}

impl CredentialsDir {
    fn create(secret: &Secret) -> io::Result<Self> {
        let mut random = [0u8; 16];
        getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
        let name = proto::hex(&random);
        let path = std::env::temp_dir().join(format!("boxmaker-credentials-{name}"));
        // `create` (not `create_all`) fails if anything, a symlink included, is already
        // there, so the directory is certainly the fresh one made here, with mode 0700.
        DirBuilder::new().mode(0o700).create(&path)?;
        let dir = Self { path };
        let mut source = File::open(&secret.source)?;
        let mut copy = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o400)
            .open(dir.path.join(&secret.name))?;
        io::copy(&mut source, &mut copy)?;
        Ok(dir)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CredentialsDir {
    fn drop(&mut self) {
        // Best effort: the directory is private to brokerd's user either way.
        let _ = fs::remove_dir_all(&self.path);
    }
}
