//! gatewayd's durable state: which loopd session each thread continues, which posts were
//! handled (so a catch-up after a reconnect answers nothing twice), and the approval posts
//! with the answers already passed on from them. Written whole to a
//! temporary file, fsynced and renamed over the old one.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Handled post ids remembered (older ones are below the cursor anyway).
const HANDLED: usize = 1000;
/// Approval posts remembered; the oldest decided ones go first.
const APPROVALS: usize = 500;
/// Reactions remembered per approval post.
const HEARD: usize = 64;

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Saved {
    /// Thread root post id → loopd session id.
    pub threads: BTreeMap<String, String>,
    /// The newest `create_at` handled: catch-up asks for posts since then.
    pub cursor: i64,
    pub handled: VecDeque<String>,
    /// Posts from people not on the owner list, ignored.
    pub ignored: u64,
    /// Approval id → its root post.
    #[serde(default)]
    pub approvals: BTreeMap<String, Asked>,
    /// Owner post id → its thread root, while its answer is being given. One left here at
    /// start was cut off by a restart.
    #[serde(default)]
    pub answering: BTreeMap<String, String>,
}

/// One approval's root post.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Asked {
    pub post: String,
    pub binding: proto::Hash32,
    /// When it was posted (ms), to forget the oldest first.
    pub posted: i64,
    /// Decided or expired: answers on it are still passed on (brokerd refuses them).
    pub done: bool,
    /// Reactions already passed on (`user emoji`), so a catch-up passes none twice.
    pub heard: VecDeque<String>,
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

    /// The approval whose root post is `post`.
    pub fn approval_of(&self, post: &str) -> Option<(&String, &Asked)> {
        self.saved.approvals.iter().find(|(_, a)| a.post == post)
    }

    pub fn remember_approval(&mut self, approval: &str, asked: Asked) {
        self.saved.approvals.insert(approval.to_owned(), asked);
        while self.saved.approvals.len() > APPROVALS {
            let oldest = self
                .saved
                .approvals
                .iter()
                .min_by_key(|(_, a)| (!a.done, a.posted))
                .map(|(id, _)| id.clone());
            if let Some(id) = oldest {
                self.saved.approvals.remove(&id);
            }
        }
    }

    /// Records a reaction as passed on; `false` when it already was.
    pub fn hear(&mut self, approval: &str, key: String) -> bool {
        let Some(a) = self.saved.approvals.get_mut(approval) else {
            return false;
        };
        if a.heard.contains(&key) {
            return false;
        }
        a.heard.push_back(key);
        while a.heard.len() > HEARD {
            a.heard.pop_front();
        }
        true
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
