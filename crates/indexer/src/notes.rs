//! The notes: each note whose file or brokerd's label record changed since the last run is
//! read (its bytes first, then its record: labels only rise) and put in the partition of
//! the label a read of it takes (`noteindex::note_label`: brokerd's record when the bytes
//! match its hash, else secret and untrusted). A note that is gone is removed.

use std::collections::{BTreeMap, BTreeSet};

use noteindex::{Batch, MAX_RECORD, note_label, record_of};
use proto::notes::{MAX_NOTE, name_of_file};

use crate::state::{NoteDone, Stamp};
use crate::{Error, Paths};

/// Indexes the notes that changed; returns how many.
pub fn pass(
    paths: &Paths,
    done: &mut BTreeMap<String, NoteDone>,
    batches: &mut [Batch<'_>],
) -> Result<usize, Error> {
    let mut seen = BTreeSet::new();
    let mut changed = 0;
    for entry in crate::entries(&paths.notes)? {
        let Some(name) = entry.to_str().and_then(name_of_file) else {
            continue;
        };
        let path = paths.notes.join(&entry);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        seen.insert(name.to_owned());
        let note = Stamp::of(&meta);
        let record_path = paths.note_labels.join(format!("{name}.json"));
        let record = Stamp::at(&record_path);
        if done
            .get(name)
            .is_some_and(|d| d.note == note && d.record == record)
        {
            continue;
        }
        // A link, a FIFO or a directory is never opened; a file over a note's size is no
        // note (brokerd never reads it either).
        let bytes = meta
            .file_type()
            .is_file()
            .then(|| daemon::durable::read_file(&path, 0, MAX_NOTE).ok())
            .flatten();
        let rec = daemon::durable::read_file(&record_path, 0o022, MAX_RECORD)
            .ok()
            .and_then(|b| record_of(name, &b));
        let (label, _) = note_label(bytes.as_deref(), rec.as_ref());
        for b in batches.iter_mut() {
            b.remove_note(name)?;
        }
        let part = match &bytes {
            Some(bytes) => {
                let at = label.position();
                batches[at].put_note(name, &String::from_utf8_lossy(bytes))?;
                Some(at)
            }
            None => None,
        };
        done.insert(name.to_owned(), NoteDone { note, record, part });
        changed += 1;
    }
    changed += crate::forget(done, &seen, batches, Batch::remove_note)?;
    Ok(changed)
}
