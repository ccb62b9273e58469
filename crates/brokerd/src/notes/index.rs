//! The published search index (`index/`), which brokerd only reads: the indexer
//! (`boxmaker-indexer`, its own process) writes it and publishes each partition by rename,
//! never writing a published file again. A search unit gets the published partitions of
//! classes up to its grant's `max_class` that hold any document, each file bound read-only,
//! and is labelled by the highest of them; what the unit opens never changes under it, so
//! no lock is held. brokerd opens them immutable, for the owner's search and for the
//! emptiness check.

use std::path::{Path, PathBuf};

use noteindex::{Hit, IndexError, LABELS, Label};
use proto::DataClass;

use crate::policy::Labels;

#[derive(Debug)]
pub struct NoteIndex {
    dir: PathBuf,
}

fn labels_of(l: Label) -> Labels {
    Labels {
        class: l.class,
        untrusted: l.untrusted,
    }
}

impl NoteIndex {
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
        }
    }

    /// The published partitions of classes up to `reach` that a unit must have bound (all
    /// but those that hold nothing or are not there: a unit could read nothing from them),
    /// and the label of the highest. One that brokerd cannot open is bound all the same: a
    /// unit could read its bytes.
    pub fn reach(&self, reach: DataClass) -> (Vec<(Label, PathBuf)>, Labels) {
        let mut bound = Labels::NONE;
        let mut parts = Vec::new();
        for l in LABELS.into_iter().filter(|l| l.class <= reach) {
            let path = self.dir.join(l.file_name());
            if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            if noteindex::holds_any(&path).unwrap_or(true) {
                bound = bound.join(labels_of(l));
                parts.push((l, path));
            }
        }
        (parts, bound)
    }

    /// For the owner: `query` over every published partition, notes and session records,
    /// each hit with its partition's label. A partition not published yet holds nothing.
    pub fn search_all(&self, query: &str) -> Result<Vec<(Hit, Label)>, IndexError> {
        let mut all = Vec::new();
        for l in LABELS {
            let path = self.dir.join(l.file_name());
            if !path.exists() {
                continue;
            }
            for hit in noteindex::search(&[path.as_path()], query, None)? {
                all.push((hit, l));
            }
        }
        all.sort_by(|a, b| a.0.rank.total_cmp(&b.0.rank));
        all.truncate(noteindex::MAX_HITS);
        Ok(all)
    }
}
