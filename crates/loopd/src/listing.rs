//! `session_list`: the sessions, most recently active first, each with its first owner
//! message as a preview and its turns over every epoch. A listing reads each session's
//! current epoch only; what the closed epochs hold (their turns, the first message) is read
//! once per loopd run and kept, since a closed epoch never changes.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use proto::chat::{MAX_PREVIEW, SessionListing, SessionSummary};
use proto::{Epoch, LogRecord, SessionId, Timestamp};

use crate::store::{Store, StoreError};

/// What the closed epochs of each session hold.
#[derive(Debug, Default)]
pub struct Listing {
    closed: Mutex<HashMap<SessionId, Closed>>,
}

/// The epochs before `before`, counted.
#[derive(Debug, Clone)]
struct Closed {
    before: Epoch,
    turns: u32,
    preview: Option<String>,
}

impl Listing {
    pub fn list(&self, store: &Store) -> Result<SessionListing, StoreError> {
        let mut sessions = Vec::new();
        for id in store.ids()? {
            let Some(epoch) = store.current_epoch(&id)? else {
                continue;
            };
            let records = store.read_epoch(&id, epoch)?;
            let times: Vec<Timestamp> = records.iter().map(record_time).collect();
            let (Some(first), Some(last)) = (times.first(), times.last()) else {
                continue;
            };
            let turns = user_messages(&records).count();
            let closed = self.closed(store, &id, epoch)?;
            let preview = closed
                .preview
                .clone()
                .or_else(|| user_messages(&records).next().map(preview));
            sessions.push(SessionSummary {
                session: id,
                epoch,
                started: *first,
                last: *last,
                turns: u32::try_from(turns).unwrap_or(u32::MAX),
                all_turns: Some(
                    closed
                        .turns
                        .saturating_add(u32::try_from(turns).unwrap_or(u32::MAX)),
                ),
                preview,
            });
        }
        // Most recently active first; ties by id, so the order is stable.
        sessions.sort_by(|a, b| b.last.cmp(&a.last).then_with(|| a.session.cmp(&b.session)));
        Ok(SessionListing { sessions })
    }

    /// What the epochs before `current` hold, reading only those not read before.
    fn closed(&self, store: &Store, id: &SessionId, current: Epoch) -> Result<Closed, StoreError> {
        let mut kept = self
            .closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .unwrap_or(Closed {
                before: Epoch(0),
                turns: 0,
                preview: None,
            });
        if kept.before < current {
            for epoch in store.epochs(id)? {
                if epoch < kept.before || epoch >= current {
                    continue;
                }
                let records = store.read_epoch(id, epoch)?;
                let n = u32::try_from(user_messages(&records).count()).unwrap_or(u32::MAX);
                kept.turns = kept.turns.saturating_add(n);
                if kept.preview.is_none() {
                    kept.preview = user_messages(&records).next().map(preview);
                }
            }
            kept.before = current;
            self.closed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.clone(), kept.clone());
        }
        Ok(kept)
    }
}

fn user_messages(records: &[LogRecord]) -> impl Iterator<Item = &str> {
    records.iter().filter_map(|r| match r {
        LogRecord::User { content, .. } => Some(content.as_str()),
        _ => None,
    })
}

/// The first [`MAX_PREVIEW`] characters of `text`, ending in `…` when cut.
fn preview(text: &str) -> String {
    let mut chars = text.chars();
    let mut cut: String = chars.by_ref().take(MAX_PREVIEW - 1).collect();
    let rest: String = chars.collect();
    if rest.chars().count() > 1 {
        cut.push('…');
    } else {
        cut.push_str(&rest);
    }
    cut
}

fn record_time(r: &LogRecord) -> Timestamp {
    match r {
        LogRecord::SessionStart { time, .. }
        | LogRecord::User { time, .. }
        | LogRecord::Assistant { time, .. }
        | LogRecord::ToolResult { time, .. }
        | LogRecord::CacheLoss { time, .. }
        | LogRecord::EpochEnd { time, .. }
        | LogRecord::Withdrawn { time, .. } => *time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_is_cut_at_its_limit_only() {
        let exact: String = "x".repeat(MAX_PREVIEW);
        assert_eq!(preview(&exact), exact);
        let long: String = "y".repeat(MAX_PREVIEW + 1);
        let cut = preview(&long);
        assert_eq!(cut.chars().count(), MAX_PREVIEW);
        assert!(cut.ends_with('…'));
        assert_eq!(preview("hi"), "hi");
    }
}
