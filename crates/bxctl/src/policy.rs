//! The policy in force at any audit record, rebuilt from the `grants_loaded` lines: the first
//! line of each brokerd start records every grant's canonical text, and each reload records
//! the grants new or changed since the line it names (`since`); a grant it does not list is
//! gone.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use proto::{AuditEvent, AuditLine, Hash32, Timestamp};

use crate::Error;

/// One snapshot as the audit recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    /// The seq of the `grants_loaded` line.
    pub loaded: u64,
    pub time: Timestamp,
    pub snapshot: Hash32,
    /// Each grant's canonical text and the seq of the line that recorded it; `None` when
    /// the audit does not hold it (lines from a brokerd that recorded only ids).
    pub grants: BTreeMap<String, Option<(String, u64)>>,
}

/// Feeds audit lines in chain order; knows the policy after each.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    current: Option<Policy>,
    before: Option<Policy>,
}

impl Replay {
    pub fn feed(&mut self, line: &AuditLine) {
        // A line whose seq is not past the snapshot line's: that line was torn (a recovery
        // record took its seq), so its snapshot never took effect.
        if self
            .current
            .as_ref()
            .is_some_and(|p| line.seq() <= p.loaded)
        {
            self.current = self.before.take();
        }
        let AuditLine::Event(AuditEvent::GrantsLoaded {
            seq,
            time,
            snapshot,
            grants,
            texts,
            since,
            ..
        }) = line
        else {
            return;
        };
        // Unlisted texts are unchanged since `since`, if that is the snapshot just read.
        let base = self
            .current
            .as_ref()
            .filter(|p| *since == Some(p.loaded))
            .map(|p| &p.grants);
        let grants = grants
            .iter()
            .map(|id| {
                let text = match texts.get(id) {
                    Some(text) => Some((text.clone(), *seq)),
                    None => base.and_then(|b| b.get(id)).cloned().flatten(),
                };
                (id.clone(), text)
            })
            .collect();
        let policy = Policy {
            loaded: *seq,
            time: *time,
            snapshot: *snapshot,
            grants,
        };
        self.before = self.current.replace(policy);
    }

    pub fn current(&self) -> Option<&Policy> {
        self.current.as_ref()
    }
}

/// `bxctl audit show --policy-at SEQ`: the grants in force when record `at` was written.
pub fn show_at(dir: &Path, at: u64, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let mut replay = Replay::default();
    let mut found = false;
    crate::audit::lines(dir, |_, _, bytes| {
        // Torn lines are not records; `bxctl audit verify` judges them.
        if let Ok(line) = AuditLine::from_slice(bytes)
            && line.seq() <= at
        {
            found |= line.seq() == at;
            replay.feed(&line);
        }
        Ok(())
    })?;
    let policy = match (found, replay.current()) {
        (false, _) => {
            writeln!(out, "no record #{at} in {}", dir.display()).map_err(Error::Output)?;
            return Ok(ExitCode::from(1));
        }
        (true, None) => {
            writeln!(out, "no grants were loaded at or before #{at}").map_err(Error::Output)?;
            return Ok(ExitCode::from(1));
        }
        (true, Some(p)) => p,
    };
    writeln!(
        out,
        "policy in force at #{at}: grants snapshot {}, loaded by #{} at {} ({} grants)",
        policy.snapshot,
        policy.loaded,
        policy.time,
        policy.grants.len()
    )
    .map_err(Error::Output)?;
    for (id, recorded) in &policy.grants {
        match recorded {
            Some((text, seq)) => {
                write!(out, "\n# grant {id} (text recorded by #{seq})\n{text}")
                    .map_err(Error::Output)?;
            }
            None => writeln!(
                out,
                "\n# grant {id}: its text is not in the audit (loaded by a brokerd that \
                 recorded only grant ids)"
            )
            .map_err(Error::Output)?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(seq: u64, grants: &[(&str, Option<&str>)], since: Option<u64>) -> AuditLine {
        AuditLine::Event(AuditEvent::GrantsLoaded {
            seq,
            time: Timestamp::from_millis(1_789_632_300_000 + seq).expect("time"),
            prev: Hash32::ZERO,
            snapshot: Hash32::from_bytes([u8::try_from(seq).expect("small"); 32]),
            grants: grants.iter().map(|(id, _)| (*id).to_owned()).collect(),
            texts: grants
                .iter()
                .filter_map(|(id, t)| t.map(|t| ((*id).to_owned(), t.to_owned())))
                .collect(),
            since,
        })
    }

    fn texts(replay: &Replay) -> Vec<(String, Option<(String, u64)>)> {
        let policy = replay.current().expect("a policy");
        policy
            .grants
            .iter()
            .map(|(id, r)| (id.clone(), r.clone()))
            .collect()
    }

    fn t(text: &str, seq: u64) -> Option<(String, u64)> {
        Some((text.to_owned(), seq))
    }

    #[test]
    fn reloads_add_change_and_remove_grants() {
        let mut replay = Replay::default();
        replay.feed(&loaded(0, &[("a", Some("A1")), ("b", Some("B1"))], None));
        replay.feed(&loaded(
            1,
            &[("a", None), ("b", None), ("c", Some("C1"))],
            Some(0),
        ));
        let after_add = texts(&replay);
        replay.feed(&loaded(2, &[("a", Some("A2")), ("c", None)], Some(1)));
        assert_eq!(
            after_add,
            [
                ("a".into(), t("A1", 0)),
                ("b".into(), t("B1", 0)),
                ("c".into(), t("C1", 1))
            ]
        );
        assert_eq!(
            texts(&replay),
            [("a".into(), t("A2", 2)), ("c".into(), t("C1", 1))]
        );
    }

    #[test]
    fn a_torn_snapshot_line_never_took_effect_and_old_lines_have_no_texts() {
        let mut replay = Replay::default();
        replay.feed(&loaded(0, &[("a", None)], None));
        assert_eq!(texts(&replay), [("a".into(), None)]);
        replay.feed(&loaded(1, &[("a", Some("A1"))], None));
        // Seq 2 written whole but without its newline, then recovered: the recovery line
        // takes seq 2 again.
        replay.feed(&loaded(2, &[("a", Some("A2"))], Some(1)));
        replay.feed(&AuditLine::Event(AuditEvent::Recovery {
            seq: 2,
            time: Timestamp::from_millis(1_789_632_400_000).expect("time"),
            prev: Hash32::ZERO,
            file: "f".into(),
            line: 3,
            torn_bytes: 1,
            torn_sha256: Hash32::ZERO,
            interrupted: Vec::new(),
        }));
        assert_eq!(texts(&replay), [("a".into(), t("A1", 1))]);
        // A diff against another line than the one just read leaves unlisted texts unknown.
        replay.feed(&loaded(3, &[("a", None)], Some(0)));
        assert_eq!(texts(&replay), [("a".into(), None)]);
    }
}
