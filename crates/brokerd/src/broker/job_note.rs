//! A job's result delivered to a note (`deliver = "note:NAME"`, J10), written through the
//! notes path as a `note_write` (`replace`) from the run's session would be written: in the
//! session's turn (its lock), with the header an untrusted session's text gets, at the label
//! the delivery is decided at: the session's own raised by the label of the answer it carries
//! (the label of the prompt that produced that answer, by brokerd's accounting; an answer it
//! cannot account for counts as the highest label it has sent). The session is raised to that
//! label too, as a call's session is (X9). Which note, and what it may hold, is the job's
//! (`jobs::note`). Audited as `job_note_written`.

use proto::job::JobNoted;
use proto::notes::file_name;
use proto::tools::NoteMode;
use proto::{AuditEvent, AuditLine, JobName, SessionId};

use super::Broker;
use crate::Fatal;
use crate::jobs::note;

impl Broker {
    /// Writes `text`, which holds the agent's `answer`, to `job`'s note from `session`, the
    /// job's run in progress. `Ok(Err)`: refused (the job delivers elsewhere, the text is
    /// too long, the disk).
    pub(crate) fn job_note(
        &self,
        job: &JobName,
        session: &SessionId,
        text: &str,
        answer: Option<&str>,
    ) -> Result<Result<JobNoted, String>, Fatal> {
        let note = match note::target(&self.config, job, text) {
            Ok(note) => note,
            Err(refused) => return Ok(Err(refused)),
        };
        self.session_locks.run(session, || {
            let answered = self.context.answer(answer);
            let writer = self.raise_to(session, &answered)?;
            // One run per job at a time, so the job's name makes the per-call directory's.
            let dir = match self.notes.incoming(&format!("job-note-{job}")) {
                Ok(dir) => dir,
                Err(e) => return Ok(Err(e.to_string())),
            };
            let left = std::fs::write(dir.join(file_name(&note)), text)
                .map_err(|e| format!("{}: {e}", dir.display()))
                .and_then(|()| {
                    self.notes
                        .commit(&note, NoteMode::Replace, &dir, &writer)
                        .answer
                        .map_err(|e| e.to_string())
                });
            self.notes.discard(&dir);
            if let Err(e) = left {
                return Ok(Err(e));
            }
            let noted = JobNoted {
                note: note.clone(),
                class: writer.taint,
                untrusted: writer.untrusted,
            };
            let (j, s, n) = (job.clone(), session.clone(), note.clone());
            self.audit_event(|seq, time, prev| {
                AuditLine::Event(AuditEvent::JobNoteWritten {
                    seq,
                    time,
                    prev,
                    job: j,
                    session: s,
                    note: n,
                    class: writer.taint,
                    untrusted: writer.untrusted,
                })
            })?;
            Ok(Ok(noted))
        })
    }
}
