//! Delivery to a note (`deliver = "note:NAME"`): the runner asks brokerd, on its run's
//! connection, to write the result, and brokerd writes it as the run's session's
//! `note_write` would be: a job that read a secret makes a secret note, and a later
//! ordinary session that reads it is raised to secret and may send nothing out.

use std::process::Command;

use proto::job::JobNote;
use proto::{AuditEvent, AuditLine, DataClass, Message};
use stack::{bin, read_grant};

use crate::jobs::add_jobs_peer;
use crate::notes::{assert_fetch_denied, call, content, labels, notes_home};

const SCRIPT: &str = r#"
[server]
n_ctx = 16384

[[rule]]
[rule.match]
tool_result_contains = "hunter2"
[rule.answer]
text = "The key is hunter2."

[[rule]]
[rule.match]
user_contains = "brief"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"SECRETS/key.txt"}'

[default]
text = "Nothing to do."
"#;

/// A `[[jobs]]` entry delivering to the note `note`.
pub fn note_job(name: &str, prompt: &str, note: &str) -> String {
    format!(
        "[[jobs]]\nname = \"{name}\"\nschedule = \"*-*-* 07:00:00\"\nprompt = \"{prompt}\"\n\
         deliver = \"note:{note}\"\n"
    )
}

#[test]
fn a_job_that_read_a_secret_delivers_a_secret_note_and_its_reader_is_raised() {
    // The note tools and the secret are ordinary grants; the job has its own read grant.
    let (home, secrets) = notes_home("job-note");
    home.write_grant(
        "brief-secrets",
        &read_grant(
            "auto",
            &secrets,
            "job = \"secret-brief\"\nresult_class = \"secret\"\nuntrusted = false",
        ),
    );
    add_jobs_peer(&home);
    // No gateway: a note needs none.
    home.append_config(&note_job("secret-brief", "Write my brief.", "brief"));
    let script = SCRIPT.replace("SECRETS", &secrets.display().to_string());
    let _agent = home.start_agent(&script, "");

    let out = Command::new(bin("boxmaker-job"))
        .arg("--config")
        .arg(home.config())
        .args(["--job", "secret-brief"])
        .output()
        .expect("boxmaker-job");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("result written to note brief (labelled secret)"),
        "{log}"
    );

    let on_disk = std::fs::read_to_string(home.root.join("home/memory/notes/brief.md"))
        .expect("the note on disk");
    assert!(
        on_disk.starts_with("# Job secret-brief, run of "),
        "{on_disk}"
    );
    assert!(
        on_disk.ends_with(": done\n\nThe key is hunter2.\n"),
        "{on_disk}"
    );

    // A later ordinary session reads it: raised to secret, so its fetch is denied.
    let r = call(&home, "s-later", 1, "note_read", r#"{"name":"brief"}"#);
    assert_eq!(content(&r), on_disk);
    assert_eq!(labels(&r), (DataClass::Secret, false));
    assert_fetch_denied(&home, "s-later", 2);

    // Audited: the note, the run's session, and the label it took.
    let lines = home.audit_lines();
    let session = lines.iter().find_map(|l| match l {
        AuditLine::Event(AuditEvent::JobRunStarted { session, .. }) => Some(session.clone()),
        _ => None,
    });
    let written = lines.iter().find_map(|l| match l {
        AuditLine::Event(AuditEvent::JobNoteWritten {
            job,
            session,
            note,
            class,
            untrusted,
            ..
        }) => Some((
            job.to_string(),
            session.clone(),
            note.clone(),
            *class,
            *untrusted,
        )),
        _ => None,
    });
    let session = session.expect("the run started");
    assert_eq!(
        written,
        Some((
            "secret-brief".to_owned(),
            session.clone(),
            "brief".to_owned(),
            DataClass::Secret,
            false
        ))
    );
    // brokerd's record names the job's session as the writer.
    let shown =
        String::from_utf8_lossy(&home.bxctl(&["notes", "show", "brief"]).stdout).into_owned();
    assert!(shown.contains(session.as_str()), "{shown}");
    home.assert_audit_good();
}

#[test]
fn a_job_delivering_to_mattermost_cannot_write_a_note() {
    let home = crate::jobs::jobs_home("job-note-refused");
    let _d = home.start();
    let (mut conn, _) = crate::jobs::register(&home, "morning-brief").expect("registered");
    let note = Message::JobNote(JobNote {
        text: "x".into(),
        answer: None,
    });
    match conn.call(2, note, |_| {}).expect("answered").msg {
        Message::Error(e) => assert!(e.detail.contains("delivers to Mattermost"), "{e:?}"),
        other => panic!("{other:?}"),
    }
    assert!(
        !home
            .root
            .join("home/memory/notes/morning-brief.md")
            .exists()
    );
}
