//! gatewayd's durable state: which loopd session each thread continues, and which posts were
//! handled (so a catch-up after a reconnect answers nothing twice). Written whole to a
//! temporary file, fsynced and renamed over the old one.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Handled post ids remembered (older ones are below the cursor anyway).
const HANDLED: usize = 1000;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Saved {
    /// Thread root post id → loopd session id.
    pub threads: BTreeMap<String, String>,
    /// The newest `create_at` handled: catch-up asks for posts since then.
    pub cursor: i64,
    pub handled: VecDeque<String>,
    /// Posts from people not on the owner list, ignored.
    pub ignored: u64,
}

#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    pub saved: Saved,
}

impl Store {
    /// Loads the state, or starts one whose cursor is `now` (history is never answered).
    pub fn open(dir: PathBuf, now: i64) -> std::io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("state.json");
        let saved = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(std::io::Error::other)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Saved {
                cursor: now,
                ..Saved::default()
            },
            Err(e) => return Err(e),
        };
        Ok(Self { path, saved })
    }

    pub fn is_handled(&self, id: &str) -> bool {
        self.saved.handled.iter().any(|h| h == id)
    }

    pub fn mark(&mut self, id: &str, create_at: i64) {
        self.saved.handled.push_back(id.to_owned());
        while self.saved.handled.len() > HANDLED {
            self.saved.handled.pop_front();
        }
        self.saved.cursor = self.saved.cursor.max(create_at);
    }

    pub fn save(&self) -> std::io::Result<()> {
        let tmp = self.path.with_extension("tmp");
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec(&self.saved).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}
