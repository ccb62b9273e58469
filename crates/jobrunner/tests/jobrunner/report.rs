use jobrunner::{Report, Said};
use proto::job::JobOutcome;

#[test]
fn a_report_is_done_only_when_nothing_failed_and_nothing_was_denied() {
    let done = Report {
        answer: "Three meetings today.".into(),
        ..Report::default()
    };
    assert_eq!(done.outcome(), JobOutcome::Done);
    assert_eq!(done.text(), "Three meetings today.");
    let denied = Report {
        answer: "I could not fetch the page.".into(),
        denied: vec![Said::own("Call 1 (http_fetch) not approved")],
        failure: None,
    };
    assert_eq!(denied.outcome(), JobOutcome::Failed);
    assert_eq!(
        denied.text(),
        "Call 1 (http_fetch) not approved\n\nI could not fetch the page."
    );
    let failed = Report {
        failure: Some(Said::with("The model could not be reached", "503")),
        ..Report::default()
    };
    assert_eq!(failed.outcome(), JobOutcome::Failed);
    assert_eq!(failed.text(), "The model could not be reached: 503");
    // A note holds none of loopd's words but the answer (brokerd labels that).
    assert_eq!(
        failed.note_text(),
        "The model could not be reached (the detail is in the journal)."
    );
}

/// A denied call's line keeps loopd's detail inside its reason's parenthesis on Mattermost,
/// and leaves it to the journal in a note.
#[test]
fn a_denial_line_puts_its_detail_inside_the_reason() {
    let line = Said {
        own: "Call 1 (read_file) denied (no_grant)".into(),
        detail: Some("no grant for read_file".into()),
        inside: true,
    };
    assert_eq!(
        line.full(),
        "Call 1 (read_file) denied (no_grant: no grant for read_file)"
    );
    let report = Report {
        denied: vec![line],
        ..Report::default()
    };
    assert_eq!(
        report.note_text(),
        "Call 1 (read_file) denied (no_grant) (the detail is in the journal)."
    );
}
