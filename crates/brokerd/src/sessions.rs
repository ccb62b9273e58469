//! Each session's taint and untrusted flag, computed by brokerd from the results it
//! returned, never from what loopd says. Durable: a restart never lowers a taint or clears
//! a flag. One file per session, `<state>/<session>.json`, written with a temp file, fsync,
//! rename and a directory fsync, mode 0600, never through a symlink, and validated at start:
//! a corrupt file refuses start. Each session's label (its taint and flag, nothing else) is
//! exported for the indexer to `session-labels/<session>.json` (0644 in a 0755 directory,
//! written the same way) each time it changes, after the state and before the result that
//! raised it leaves; at start every export that differs from the state is written again.

use std::collections::HashMap;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use proto::approval::CallRef;
use proto::notes::SessionLabel;
use proto::{DataClass, SessionId};
use serde::{Deserialize, Serialize};

use crate::policy::{Labels, SessionView};

/// The most calls remembered as the reason a session is untrusted (for approval cards).
pub const MAX_UNTRUSTED_BY: usize = 32;
const MAX_STATE_FILE: u64 = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionState {
    pub session: SessionId,
    pub taint: DataClass,
    pub untrusted: bool,
    pub untrusted_by: Vec<CallRef>,
}

impl SessionState {
    /// Every session starts at private: the owner's messages and core memory are in it
    /// ([`SessionView::START`]).
    pub fn new(session: SessionId) -> Self {
        Self {
            session,
            taint: SessionView::START.taint,
            untrusted: SessionView::START.untrusted,
            untrusted_by: Vec::new(),
        }
    }

    /// This state with the labels `view` holds (a call's: the session's raised by its
    /// prompt's), as the call's approval card shows it.
    pub fn at(self, view: SessionView) -> Self {
        Self {
            taint: view.taint,
            untrusted: view.untrusted,
            ..self
        }
    }

    /// This state raised by `class` and `untrusted`, the calls in `sources` (those that
    /// made it untrusted) added to its untrusted sources, each once, at most
    /// [`MAX_UNTRUSTED_BY`]. Taint never goes down and the flag never clears.
    #[must_use]
    pub fn raised(mut self, class: DataClass, untrusted: bool, sources: &[CallRef]) -> Self {
        self.taint = self.taint.max(class);
        if untrusted {
            self.untrusted = true;
            for call in sources {
                if self.untrusted_by.len() < MAX_UNTRUSTED_BY && !self.untrusted_by.contains(call) {
                    self.untrusted_by.push(call.clone());
                }
            }
        }
        self
    }

    pub fn view(&self) -> SessionView {
        SessionView {
            taint: self.taint,
            untrusted: self.untrusted,
        }
    }

    /// The labels this state holds, as a result carries them.
    pub fn labels(&self) -> Labels {
        Labels {
            class: self.taint,
            untrusted: self.untrusted,
        }
    }

    /// The calls that made this session untrusted, each naming its session (the state
    /// keeps its own calls without one): a record outlives the session it came from.
    pub fn sources_named(&self) -> Vec<CallRef> {
        (self.untrusted_by.iter())
            .map(|c| CallRef {
                session: Some(c.session.clone().unwrap_or_else(|| self.session.clone())),
                ..c.clone()
            })
            .collect()
    }
}

/// Why the session state cannot be used. Each text is whole: it prints what it wraps
/// (docs/decisions.md F16).
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "{}: {reason}; brokerd will not start on session state it cannot trust (inspect the \
         file; removing it would reset that session's taint)",
        path.display()
    )]
    Corrupt { path: PathBuf, reason: String },
}

#[derive(Debug)]
pub struct Sessions {
    dir: PathBuf,
    export: PathBuf,
    map: HashMap<SessionId, SessionState>,
}

impl Sessions {
    /// Loads every session file in `dir` (created 0700 if missing), and exports each
    /// session's label to `export` (created 0755) where it differs.
    pub fn open(dir: &Path, export: &Path) -> Result<Self, StateError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| StateError::Io {
                path,
                error: source,
            }
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io(dir))?;
        let mut map = HashMap::new();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let path = entry.map_err(io(dir))?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if name.starts_with('.') && name.ends_with(".tmp") {
                // A write that died before its rename; the old file (if any) is intact.
                std::fs::remove_file(&path).map_err(io(&path))?;
                continue;
            }
            let state = load(&path)?;
            map.insert(state.session.clone(), state);
        }
        // Read by the indexer, another user under systemd.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(export)
            .map_err(io(export))?;
        std::fs::set_permissions(export, std::fs::Permissions::from_mode(0o755))
            .map_err(io(export))?;
        for state in map.values() {
            let path = export.join(format!("{}.json", state.session));
            let now = daemon::durable::read_file(&path, 0o022, MAX_STATE_FILE)
                .ok()
                .and_then(|b| serde_json::from_slice::<SessionLabel>(&b).ok());
            if now != Some(label_of(state)) {
                export_label(export, state)?;
            }
        }
        Ok(Self {
            dir: dir.to_owned(),
            export: export.to_owned(),
            map,
        })
    }

    pub fn get(&self, session: &SessionId) -> SessionState {
        self.map
            .get(session)
            .cloned()
            .unwrap_or_else(|| SessionState::new(session.clone()))
    }

    /// Raises the session by one result's labels and makes it durable before returning.
    /// Taint never goes down and the flag never clears.
    pub fn record(
        &mut self,
        session: &SessionId,
        class: DataClass,
        untrusted: bool,
        call: CallRef,
    ) -> Result<(), StateError> {
        let state = self
            .get(session)
            .raised(class, untrusted, std::slice::from_ref(&call));
        // A session seen for the first time is stored and exported even at its starting
        // label: a log without an exported label is indexed as secret and untrusted.
        self.put(state, true).map(|_| ())
    }

    /// Raises the session to the label a call of it is decided at (`decided`: the session's
    /// own raised by the prompt that produced the call; `sources`, the calls that made that
    /// prompt untrusted) and makes it durable, exported for the indexer too, before
    /// returning: what loopd logs in this session from now on holds that prompt's content,
    /// and everything the call produces is attached at that label (docs/decisions.md X9).
    /// Writes nothing when the session is already there. Returns the session as raised.
    pub fn raise(
        &mut self,
        session: &SessionId,
        decided: SessionView,
        sources: &[CallRef],
    ) -> Result<SessionState, StateError> {
        let state = self
            .get(session)
            .raised(decided.taint, decided.untrusted, sources);
        self.put(state, false)
    }

    /// Makes `state` the session's, on disk and exported, unless nothing changed (and, with
    /// `store_new`, the session is known already).
    fn put(&mut self, state: SessionState, store_new: bool) -> Result<SessionState, StateError> {
        let session = state.session.clone();
        let known = self.map.contains_key(&session);
        if self.map.get(&session) == Some(&state)
            || (!known && !store_new && state == SessionState::new(session.clone()))
        {
            return Ok(state);
        }
        // Memory first: if the disk write fails, this process still treats the session
        // as raised (the safe direction), and the caller withholds the result.
        self.map.insert(session, state.clone());
        store(&self.dir, &state)?;
        // Before the result leaves: the log line that holds it is indexed by this label.
        export_label(&self.export, &state)?;
        Ok(state)
    }
}

fn label_of(state: &SessionState) -> SessionLabel {
    SessionLabel {
        class: state.taint,
        untrusted: state.untrusted,
    }
}

/// Writes the session's label for the indexer: temp file, fsync, rename, 0644.
fn export_label(dir: &Path, state: &SessionState) -> Result<(), StateError> {
    let path = dir.join(format!("{}.json", state.session));
    let tmp = dir.join(format!(".{}.json.tmp", state.session));
    let text = serde_json::to_vec(&label_of(state)).map_err(|e| corrupt(&path, e.to_string()))?;
    daemon::durable::replace_file(&path, &tmp, &text, 0o644).map_err(|e| StateError::Io {
        path: e.path,
        error: e.source,
    })?;
    // Whatever brokerd's umask.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).map_err(|source| {
        StateError::Io {
            path: path.clone(),
            error: source,
        }
    })
}

fn corrupt(path: &Path, reason: impl Into<String>) -> StateError {
    StateError::Corrupt {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn load(path: &Path) -> Result<SessionState, StateError> {
    // Only 0600, as `store` writes it: the file decides a session's taint.
    let bytes = daemon::durable::read_file(path, 0o077, MAX_STATE_FILE).map_err(|e| match e {
        daemon::durable::ReadError::Missing => corrupt(path, "vanished while brokerd read it"),
        daemon::durable::ReadError::Refused(why) => corrupt(path, why.to_string()),
    })?;
    let state: SessionState =
        serde_json::from_slice(&bytes).map_err(|e| corrupt(path, e.to_string()))?;
    let expected = format!("{}.json", state.session);
    if path.file_name().and_then(|n| n.to_str()) != Some(expected.as_str()) {
        return Err(corrupt(path, format!("holds session {}", state.session)));
    }
    if state.untrusted == state.untrusted_by.is_empty() {
        return Err(corrupt(
            path,
            "the untrusted flag and the calls that set it disagree",
        ));
    }
    if state.taint < SessionView::START.taint {
        return Err(corrupt(
            path,
            "taint below private: sessions start at private",
        ));
    }
    Ok(state)
}

/// Temp file, fsync, rename, directory fsync: after a crash the file is the old state or
/// the new one, never a mix.
fn store(dir: &Path, state: &SessionState) -> Result<(), StateError> {
    let path = dir.join(format!("{}.json", state.session));
    let tmp = dir.join(format!(".{}.json.tmp", state.session));
    let text = serde_json::to_vec(state).map_err(|e| corrupt(&path, e.to_string()))?;
    daemon::durable::replace_file(&path, &tmp, &text, 0o600).map_err(|e| StateError::Io {
        path: e.path,
        error: e.source,
    })
}
