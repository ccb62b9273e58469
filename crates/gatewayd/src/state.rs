//! gatewayd's durable state: which loopd session each thread continues, which posts were
//! handled (so a catch-up after a reconnect answers nothing twice), and the approval posts
//! with the answers already passed on from them. Written whole to a
//! temporary file, fsynced and renamed over the old one.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use daemon::durable::{ReadError, Refusal};
use serde::{Deserialize, Serialize};

/// Handled post ids remembered (older ones are below the cursor anyway).
const HANDLED: usize = 1000;
/// Approval posts remembered; the oldest decided ones go first.
const APPROVALS: usize = 500;
/// Reactions (and users told of a refusal) remembered per approval post.
const HEARD: usize = 64;
/// How much older than the newest handled post a new one may be (posts can arrive out of
/// order between the WebSocket and a catch-up).
pub const REORDER_MS: i64 = 5 * 60 * 1000;
/// The largest state file read back (the lists above keep it far smaller).
const MAX_STATE: u64 = 16 * 1024 * 1024;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
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
    /// Scheduled job → the root post of its thread, where each run's result is posted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub job_threads: BTreeMap<String, String>,
}

/// One approval's root post.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Asked {
    pub post: String,
    pub binding: proto::Hash32,
    /// When it was posted (ms), to forget the oldest first.
    pub posted: i64,
    /// When it expires (ms): past it, the post is no longer caught up on.
    #[serde(default)]
    pub expires: i64,
    /// The posts of the card made so far (the root, then the arguments' further parts).
    #[serde(default)]
    pub parts: usize,
    /// Shown as expired by gatewayd itself (brokerd's word had not come): an outcome from
    /// brokerd still replaces it.
    #[serde(default)]
    pub lapsed: bool,
    /// brokerd's outcome is shown: answers on it are still passed on (brokerd refuses them).
    pub done: bool,
    /// Reactions already passed on (`user emoji`), so a catch-up passes none twice.
    pub heard: VecDeque<String>,
    /// Users already told in the thread that their answer was refused (once each).
    #[serde(default)]
    pub told: VecDeque<String>,
}

/// Why the state refuses gatewayd's start: it would rather not start than trust a state
/// file it did not write, or answer old posts again.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The state directory could not be made.
    #[error("{}: {error}", dir.display())]
    Dir { dir: PathBuf, error: std::io::Error },
    /// The file is there and is not what gatewayd writes.
    #[error("{}: {why}", path.display())]
    Refused { path: PathBuf, why: Refusal },
    /// The file is not gatewayd's JSON.
    #[error("{}: {error}", path.display())]
    Parse {
        path: PathBuf,
        error: serde_json::Error,
    },
    /// Saving: the state could not be encoded.
    #[error("{}: {error}", path.display())]
    Encode {
        path: PathBuf,
        error: serde_json::Error,
    },
    /// Saving: a step of the replacement failed (at the temp file, the rename or the
    /// directory's fsync).
    #[error("{0}")]
    Write(daemon::durable::ReplaceError),
}

#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    saved: Saved,
}

impl Store {
    /// Loads the state, or starts one whose cursor is `now` (history is never answered).
    pub fn open(dir: PathBuf, now: i64) -> Result<Self, StateError> {
        if let Err(error) = std::fs::create_dir_all(&dir) {
            return Err(StateError::Dir { dir, error });
        }
        let path = dir.join("state.json");
        // Written 0600; one writable by group or others could have been planted. (A 0644
        // file from an older gatewayd is read, and saved 0600 from then on.)
        let saved = match daemon::durable::read_file(&path, 0o022, MAX_STATE) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(saved) => saved,
                Err(error) => return Err(StateError::Parse { path, error }),
            },
            Err(ReadError::Missing) => Saved {
                cursor: now,
                ..Saved::default()
            },
            Err(ReadError::Refused(why)) => return Err(StateError::Refused { path, why }),
        };
        Ok(Self { path, saved })
    }

    /// The newest `create_at` handled: a catch-up asks for the posts since then.
    pub fn cursor(&self) -> i64 {
        self.saved.cursor
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

    /// The approval `approval`'s root post, when one was made.
    pub fn approval(&self, approval: &str) -> Option<&Asked> {
        self.saved.approvals.get(approval)
    }

    /// The approvals neither decided nor shown as expired.
    pub fn open_approvals(&self) -> Vec<(String, Asked)> {
        self.saved
            .approvals
            .iter()
            .filter(|(_, a)| !a.done && !a.lapsed)
            .map(|(id, a)| (id.clone(), a.clone()))
            .collect()
    }

    /// Records that the first `parts` posts of `approval`'s card are made.
    pub fn posted_parts(&mut self, approval: &str, parts: usize) {
        if let Some(a) = self.saved.approvals.get_mut(approval) {
            a.parts = parts;
        }
    }

    /// Records that brokerd's outcome of `approval` is shown.
    pub fn decided(&mut self, approval: &str) {
        if let Some(a) = self.saved.approvals.get_mut(approval) {
            a.done = true;
        }
    }

    /// Records that `approval` is shown as expired by gatewayd itself.
    pub fn lapsed(&mut self, approval: &str) {
        if let Some(a) = self.saved.approvals.get_mut(approval) {
            a.lapsed = true;
        }
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

    /// Whether a reaction (`user emoji`) on `approval` was passed on already.
    pub fn heard(&self, approval: &str, key: &str) -> bool {
        self.saved
            .approvals
            .get(approval)
            .is_some_and(|a| a.heard.iter().any(|k| k == key))
    }

    /// Records a reaction as passed on (brokerd acknowledged it).
    pub fn hear(&mut self, approval: &str, key: String) {
        if let Some(a) = self.saved.approvals.get_mut(approval)
            && !a.heard.contains(&key)
        {
            a.heard.push_back(key);
            while a.heard.len() > HEARD {
                a.heard.pop_front();
            }
        }
    }

    /// Whether `user` was told of a refused answer on `approval` already.
    pub fn told(&self, approval: &str, user: &str) -> bool {
        self.saved
            .approvals
            .get(approval)
            .is_some_and(|a| a.told.iter().any(|u| u == user))
    }

    /// Records that `user` was told of a refused answer on `approval`.
    pub fn tell(&mut self, approval: &str, user: &str) {
        if let Some(a) = self.saved.approvals.get_mut(approval) {
            a.told.push_back(user.to_owned());
            while a.told.len() > HEARD {
                a.told.pop_front();
            }
        }
    }

    /// The loopd session the thread at `root` continues.
    pub fn session_of(&self, root: &str) -> Option<&String> {
        self.saved.threads.get(root)
    }

    /// The root of the thread that continues `session`, when it came from Mattermost.
    pub fn thread_of(&self, session: &str) -> Option<&String> {
        self.saved
            .threads
            .iter()
            .find(|(_, s)| *s == session)
            .map(|(root, _)| root)
    }

    /// Records that the thread at `root` continues `session`; whether that is news.
    pub fn continue_thread(&mut self, root: &str, session: &str) -> bool {
        if self.saved.threads.get(root).map(String::as_str) == Some(session) {
            return false;
        }
        self.saved
            .threads
            .insert(root.to_owned(), session.to_owned());
        true
    }

    /// The root of `job`'s thread, once its first result is posted.
    pub fn job_thread(&self, job: &str) -> Option<&String> {
        self.saved.job_threads.get(job)
    }

    /// Records `root` as `job`'s thread.
    pub fn set_job_thread(&mut self, job: &str, root: &str) {
        self.saved
            .job_threads
            .insert(job.to_owned(), root.to_owned());
    }

    /// Counts a post from someone not on the owner list; the count so far.
    pub fn ignore(&mut self) -> u64 {
        self.saved.ignored += 1;
        self.saved.ignored
    }

    /// Records that the answer to `post` (in the thread at `root`) is being given.
    pub fn answering(&mut self, post: &str, root: &str) {
        self.saved
            .answering
            .insert(post.to_owned(), root.to_owned());
    }

    /// Records that the answer to `post` was given.
    pub fn answered(&mut self, post: &str) {
        self.saved.answering.remove(post);
    }

    /// The answers being given when gatewayd last stopped (post → thread root), forgotten.
    pub fn take_cut_off(&mut self) -> BTreeMap<String, String> {
        std::mem::take(&mut self.saved.answering)
    }

    /// Whether a post is new: not handled, and not much older than the newest handled one.
    /// Mattermost's `since` also returns old posts that were edited or reacted to, and the
    /// roots of threads with new replies; those are not new.
    pub fn is_new(&self, id: &str, create_at: i64) -> bool {
        !self.is_handled(id) && create_at >= self.saved.cursor.saturating_sub(REORDER_MS)
    }

    /// Saves, and logs a failure: the daemon serves on (what was not saved is at worst
    /// done again after a restart, never lost).
    pub fn save_or_log(&self) {
        if let Err(e) = self.save() {
            daemon::log::error(format_args!("saving gatewayd's state: {e}"));
        }
    }

    pub fn save(&self) -> Result<(), StateError> {
        let tmp = self.path.with_extension("tmp");
        let bytes = serde_json::to_vec(&self.saved).map_err(|error| StateError::Encode {
            path: self.path.clone(),
            error,
        })?;
        // Only gatewayd reads it: which thread is which session, and the approval posts.
        daemon::durable::replace_file(&self.path, &tmp, &bytes, 0o600).map_err(StateError::Write)
    }
}
