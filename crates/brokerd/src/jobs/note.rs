//! Delivery to a note (`deliver = "note:NAME"`): the runner sends its result on its run's
//! connection before it ends the run, and brokerd writes it as the run's session's note
//! (`Broker::job_note`). The note is the one brokerd's configuration names for the job,
//! never one the runner says, and the result must fit what one note write carries.

use config::{Config, Deliver};
use proto::JobName;
use proto::tools::MAX_ARGUMENTS;

/// The note `job` delivers `text` to, or why it may not (the job delivers elsewhere or is
/// not configured, the text is too long), for the runner.
pub fn target(config: &Config, job: &JobName, text: &str) -> Result<String, String> {
    let note = match config.jobs.iter().find(|j| &j.name == job) {
        Some(j) => match &j.deliver {
            Deliver::Note(note) => note.clone(),
            Deliver::Mattermost => {
                return Err(format!("job {job} delivers to Mattermost, not to a note"));
            }
        },
        None => return Err(format!("no job {job} is configured")),
    };
    if text.len() > MAX_ARGUMENTS {
        return Err(format!(
            "the result is {} bytes, more than the {MAX_ARGUMENTS} one note write carries",
            text.len()
        ));
    }
    Ok(note)
}
