//! The state directory `bxctl dev` keeps: the samples (demo notes, sample grants) are
//! written the first time, or again with `--reset`, and never over the owner's edits; the
//! configuration and the demo script are bxctl's own, written at every start (the fake's
//! port changes). Paths go into TOML as quoted strings: JSON's escaping is valid TOML
//! basic-string escaping, so any path stays one string.

use std::path::{Path, PathBuf};

use super::samples;
use crate::error::DevError;

/// The demo conversation the fake server plays (see docs/fake-llama-server.md).
const DEMO_SCRIPT: &str = include_str!("../demo-script.toml");

/// The directories every run needs.
const DIRS: [&str; 12] = [
    "home/memory/notes",
    "logs",
    "run/loop-broker",
    "run/admin-broker",
    "run/loop-infer",
    "run/chat-loop",
    "run/chat-broker",
    "run/jobs-broker",
    "run/jobs-loop",
    "run/jobs-gateway",
    "run/infer-broker",
    "run/broker-gateway",
];

/// The demo's note: in the notes brokerd keeps (`home/memory/notes`, what `bxctl notes`
/// lists and the note tools read), by the name the demo script reads it by.
pub const DEMO_NOTE: &str = "todo";

fn write(path: &Path, text: &str) -> Result<(), DevError> {
    std::fs::write(path, text).map_err(|source| DevError::Write {
        path: path.to_owned(),
        error: source,
    })
}

fn q(p: &Path) -> String {
    serde_json::to_string(&p.display().to_string()).unwrap_or_default()
}

/// What `prepare` wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prepared {
    /// The sample grants.
    pub grants: bool,
    /// The demo note, which brokerd has no record of yet: it is to be labelled as yours.
    pub note: bool,
}

/// Creates what is missing under `state`; with `reset`, writes the samples again.
pub fn prepare(state: &Path, grants: Option<&Path>, reset: bool) -> Result<Prepared, DevError> {
    for d in DIRS {
        std::fs::create_dir_all(state.join(d)).map_err(|source| DevError::Write {
            path: state.join(d),
            error: source,
        })?;
    }
    let mut done = Prepared::default();
    let note = state.join(format!("home/memory/notes/{DEMO_NOTE}.md"));
    if reset || !note.exists() {
        write(&note, "- buy milk\n- ship boxmaker M1\n")?;
        done.note = true;
    }
    // The demo's own files, which the hands' sample grants read and write.
    let files = state.join(samples::FILES);
    std::fs::create_dir_all(&files).map_err(|error| DevError::Write {
        path: files.clone(),
        error,
    })?;
    let (name, text) = samples::DEMO_FILE;
    if reset || !files.join(name).exists() {
        write(&files.join(name), text)?;
    }
    if let Some(dir) = grants {
        // The owner's own directory: only read, never written.
        return if dir.is_dir() {
            Ok(done)
        } else {
            Err(DevError::NoGrants {
                path: dir.to_owned(),
            })
        };
    }
    // Samples only into a grants directory that is not there yet: a sample the owner
    // deleted stays deleted.
    let dir = state.join("grants");
    if dir.exists() && !reset {
        return Ok(done);
    }
    std::fs::create_dir_all(&dir).map_err(|source| DevError::Write {
        path: dir.clone(),
        error: source,
    })?;
    for (id, text) in samples::grants(state, samples::python3().as_deref()) {
        write(&dir.join(format!("{id}.toml")), &text)?;
    }
    done.grants = true;
    Ok(done)
}

/// Writes the demo script under `state`; returns its path.
pub fn demo_script(state: &Path) -> Result<PathBuf, DevError> {
    let script = state.join("demo-script.toml");
    write(&script, &demo_text(&state.join(samples::FILES)))?;
    Ok(script)
}

/// The demo script with the demo's files directory in place of `@FILES@`, inside a JSON
/// string inside a TOML literal string: JSON-escaped, and `'` (which would end the literal)
/// as JSON's `\u0027`.
fn demo_text(files: &Path) -> String {
    let json = serde_json::to_string(&files.to_string_lossy()).unwrap_or_default();
    let inner = json
        .strip_prefix('"')
        .and_then(|j| j.strip_suffix('"'))
        .unwrap_or_default()
        .replace('\'', "\\u0027");
    DEMO_SCRIPT.replace("@FILES@", &inner)
}

/// The fake Mattermost of `bxctl dev --mattermost`, as gatewayd is configured for it.
#[derive(Debug, Clone)]
pub struct Gateway {
    /// The fake's URL.
    pub server: String,
    /// The file with the bot's token.
    pub token_file: PathBuf,
    pub owner: String,
    pub channel: String,
}

impl Gateway {
    fn table(&self) -> String {
        format!(
            "# The fake Mattermost of `bxctl dev --mattermost` (docs/gateway.md):\n\
             [gateway]\nserver = {}\ntoken_file = {}\nowners = [{}]\nchannel = {}\n",
            serde_json::to_string(&self.server).unwrap_or_default(),
            q(&self.token_file),
            serde_json::to_string(&self.owner).unwrap_or_default(),
            serde_json::to_string(&self.channel).unwrap_or_default(),
        )
    }
}

/// The owner's `[[jobs]]` entries, `STATE/jobs.toml` (never written by bxctl), as text to
/// add to the configuration: empty when there is no such file.
fn jobs(state: &Path) -> Result<String, DevError> {
    let path = state.join("jobs.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(source) => {
            return Err(DevError::Write {
                path,
                error: source,
            });
        }
    };
    // Only jobs: the rest of the configuration is bxctl's.
    config::jobs_file(&text).map_err(|source| DevError::Jobs {
        path: path.clone(),
        error: source,
    })?;
    Ok(format!("# From {}:\n{text}", path.display()))
}

/// The owner's `[[mcp]]` servers, `STATE/mcp.toml` (never written by bxctl), as text to add
/// to the configuration: empty when there is no such file (docs/mcp.md).
fn mcp(state: &Path) -> Result<String, DevError> {
    let path = state.join("mcp.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(error) => return Err(DevError::Write { path, error }),
    };
    config::mcp_file(&text).map_err(|error| DevError::Mcp {
        path: path.clone(),
        error,
    })?;
    Ok(format!("# From {}:\n{text}", path.display()))
}

/// Writes `config.toml` for a stack under `state` whose grants are in `grants` and whose
/// model is at `upstream`, with the owner's jobs (`jobs.toml`) and MCP servers
/// (`mcp.toml`); returns its path. The jobs
/// sockets and `peers.jobs` are there always, so `bxctl job run` starts a job's runner as
/// the developer.
pub fn config(
    state: &Path,
    grants: &Path,
    tool: &Path,
    upstream: &str,
    gateway: Option<&Gateway>,
) -> Result<PathBuf, DevError> {
    let uid = nix::unistd::getuid().as_raw();
    let under = |rel: &str| q(&state.join(rel));
    let config = state.join("config.toml");
    write(
        &config,
        &format!(
            "# Written by `bxctl dev` at every start (edits here are lost): everything under {},\n\
             # no root, no systemd.\n\
             home = {}\ngrants = {}\n\
             [sockets]\nloop_broker = {}\nadmin_broker = {}\nloop_infer = {}\nchat_loop = {}\n\
             chat_broker = {}\njobs_broker = {}\njobs_loop = {}\njobs_gateway = {}\ninfer_broker = {}\n\
             broker_gateway = {}\n\
             [peers]\nloopd = {{ uid = {uid} }}\nadmin = {{ uid = {uid} }}\nchat = {{ uid = {uid} }}\n\
             jobs = {{ uid = {uid} }}\ninfer = {{ uid = {uid} }}\ngateway = {{ uid = {uid} }}\n\
             broker = {{ uid = {uid} }}\n\
             [broker]\nrunner = \"direct\"\ntool = {}\n{}\
             [infer]\nupstream = {}\n{}{}{}",
            state.display(),
            under("home"),
            q(grants),
            under("run/loop-broker"),
            under("run/admin-broker"),
            under("run/loop-infer"),
            under("run/chat-loop"),
            under("run/chat-broker"),
            under("run/jobs-broker"),
            under("run/jobs-loop"),
            under("run/jobs-gateway"),
            under("run/infer-broker"),
            under("run/broker-gateway"),
            q(tool),
            samples::programs(samples::python3().as_deref()),
            serde_json::to_string(upstream).unwrap_or_default(),
            jobs(state)?,
            mcp(state)?,
            gateway.map(|g| g.table()).unwrap_or_default(),
        ),
    )?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The write's arguments in the written script, as the fake model would send them.
    fn write_arguments(script: &str) -> serde_json::Value {
        let line = script
            .lines()
            .find(|l| l.starts_with("arguments = '{\"path\"") && l.contains("plan.md"))
            .expect("the write rule's arguments");
        let literal = line
            .strip_prefix("arguments = '")
            .and_then(|l| l.strip_suffix('\''))
            .expect("a TOML literal string");
        assert!(!literal.contains('\''), "{literal}");
        serde_json::from_str(literal).expect("JSON")
    }

    #[test]
    fn the_demo_write_names_the_files_directory_whatever_its_name_holds() {
        for dir in ["/tmp/demo/files/notes", "/tmp/it's \"here\"\\x\n/files"] {
            let script = demo_text(Path::new(dir));
            assert!(!script.contains("@FILES@"));
            let args = write_arguments(&script);
            assert_eq!(args["path"], format!("{dir}/plan.md"), "{script}");
            assert_eq!(args["mode"], "append");
        }
    }
}
