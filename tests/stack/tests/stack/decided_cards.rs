//! The card of a call decided at its prompt's label (issue 23 points 1 and 6): the owner can
//! approve it and it runs, as the owner's approval, and the card names the calls whose
//! results made that label untrusted, in whichever session they ran. And a job's delivered
//! note takes the label of the answer it carries (point 0).

use daemon::conn::Conn;
use proto::approval::ApprovalListing;
use proto::job::{JobFinish, JobNote, JobOutcome};
use proto::{DataClass, DecisionRecord, DenyReason, Message, ToolResponse};
use stack::{Home, read_grant, request_as, response, wait_for_approval};

use crate::decided::{answered, call, home, owner, read_secret, said};

/// `home` with a directory of documents read only with the owner's approval, at any taint.
fn asking(name: &str) -> (Home, String) {
    let home = home(name);
    let docs = home.files("docs", &[("a.txt", "plain words")]);
    home.write_grant(
        "docs",
        &read_grant("ask", &docs, "result_class = \"public\"\nuntrusted = false"),
    );
    let args = serde_json::json!({ "path": docs.join("a.txt") }).to_string();
    (home, args)
}

/// Sends `session`'s call 1 (answering `prompt` with a read of `args`) in a thread, and
/// waits until its card is pending: the card, and the waiting request.
fn pending(
    home: &Home,
    session: &str,
    prompt: Vec<proto::attest::ChatMessage>,
    args: &str,
) -> (
    proto::approval::ApprovalCard,
    std::thread::JoinHandle<ToolResponse>,
) {
    let (witness, _) = answered(home, &prompt, &format!("{session}-1"), "read_file", args);
    let sock = home.loop_sock();
    let (session_id, args_owned) = (session.to_owned(), args.to_owned());
    let waiting = std::thread::spawn(move || {
        let mut conn = Conn::connect(&sock).expect("broker.sock");
        let frames = request_as(&mut conn, &session_id, 1, "read_file", &args_owned, witness);
        response(&frames).clone()
    });
    wait_for_approval(&home.config());
    let out = home.bxctl(&["approvals", "--json"]);
    let listing: ApprovalListing = serde_json::from_slice(&out.stdout).expect("listing");
    let card = listing.pending.into_iter().next().expect("a card");
    (card, waiting)
}

/// A card raised by its prompt (a fresh session replaying a secret) shows secret, and the
/// owner's approval of it runs the call, audited as the owner's approval at secret. On the
/// code before issue 23 the answer was refused `changed` and the call denied in the owner's
/// name.
#[test]
fn a_card_raised_by_its_prompt_can_be_approved_and_the_call_runs() {
    let (home, args) = asking("decided-approve");
    let _d = home.start();
    let secret = read_secret(&home);
    let (card, waiting) = pending(
        &home,
        "s-fresh",
        vec![owner(&home, "open a"), secret],
        &args,
    );
    assert_eq!(card.session_taint, DataClass::Secret);
    let out = home.bxctl(&["approve", &card.approval]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!said.contains("refused"), "{said}");
    let r = waiting.join().expect("the request");
    match &r {
        ToolResponse::Result { content, class, .. } => {
            assert_eq!(content, "plain words");
            assert_eq!(*class, DataClass::Secret);
        }
        other => panic!("the approved call did not run: {other:?}"),
    }
    let line = home
        .audit_lines()
        .into_iter()
        .find_map(|l| match l {
            proto::AuditLine::Decision(r) if r.session.as_str() == "s-fresh" => Some(r),
            _ => None,
        })
        .expect("the decision");
    assert!(
        matches!(&line.decision, DecisionRecord::Approved { approver, .. } if approver.starts_with("uid ")),
        "{:?}",
        line.decision
    );
    assert_eq!(line.session_taint, DataClass::Secret);
    home.assert_audit_good();
}

/// Point 6: a card whose untrusted label came from its prompt names the call that made it
/// so (what it read, and the session it ran in), in `bxctl approvals` and its JSON.
#[test]
fn a_card_raised_by_an_untrusted_prompt_names_where_it_came_from() {
    let (home, args) = asking("decided-sources");
    let _d = home.start();
    let page = home.root.join("pages/page.txt").display().to_string();
    let read = serde_json::json!({ "path": page }).to_string();
    let (_, replayed) = call(
        &home,
        "s-page",
        1,
        &[owner(&home, "peek")],
        "read_file",
        &read,
    );
    let (card, waiting) = pending(
        &home,
        "s-fresh",
        vec![owner(&home, "open a"), replayed],
        &args,
    );
    assert!(card.untrusted);
    let source = card.untrusted_by.first().expect("a source");
    assert_eq!(source.tool, "read_file");
    assert_eq!(source.read.as_deref(), Some(page.as_str()));
    assert_eq!(source.session.as_ref().map(|s| s.as_str()), Some("s-page"));
    let shown = String::from_utf8_lossy(&home.bxctl(&["approvals"]).stdout).into_owned();
    let at = shown.find("UNTRUSTED").expect("the untrusted line");
    let rest = &shown[at..];
    let untrusted_line = rest.lines().next().unwrap_or_default();
    assert!(untrusted_line.contains("s-page"), "{shown}");
    assert!(untrusted_line.contains(&page), "{shown}");
    let r = waiting.join().expect("the request");
    assert!(
        matches!(
            r,
            ToolResponse::Denied {
                reason: DenyReason::ApprovalExpired,
                ..
            }
        ),
        "{r:?}"
    );
}

/// A job's delivered note is labelled by the answer it carries: the label of the prompt
/// that produced that answer, not the job session's own (here private: the run made no
/// call). An answer brokerd cannot account for counts as the highest label it has sent.
#[test]
fn a_jobs_note_takes_the_label_of_the_answer_it_delivers() {
    let home = home("decided-job");
    crate::jobs::add_jobs_peer(&home);
    home.append_config(&crate::job_notes::note_job(
        "brief",
        "Write my brief.",
        "brief",
    ));
    let _d = home.start();
    let secret = read_secret(&home);
    // The model's answer to a prompt that replays the secret (loopd's choice of prompt).
    said(
        &home,
        &[owner(&home, "brief me"), secret],
        "The key is hunter2.",
    );
    let honest = said(&home, &[owner(&home, "brief me")], "Nothing new.");
    let deliver = |answer: Option<&str>| {
        let (mut conn, _) = crate::jobs::register(&home, "brief").expect("registered");
        let note = Message::JobNote(JobNote {
            text: format!("# Job brief\n\n{}\n", answer.unwrap_or_default()),
            answer: answer.map(str::to_owned),
        });
        let reply = conn.call(2, note, |_| {}).expect("reply");
        let noted = match reply.msg {
            Message::JobNoted(n) => (n.class, n.untrusted),
            other => panic!("{other:?}"),
        };
        let finish = Message::JobFinish(JobFinish {
            outcome: JobOutcome::Done,
        });
        conn.call(3, finish, |_| {}).expect("finished");
        noted
    };
    assert_eq!(
        deliver(Some("The key is hunter2.")),
        (DataClass::Secret, false)
    );
    assert_eq!(honest.content.as_deref(), Some("Nothing new."));
    // Each run is a fresh session: the honest answer's note is private.
    assert_eq!(deliver(Some("Nothing new.")), (DataClass::Private, false));
    // Text no completion answered is labelled as high as anything brokerd has sent.
    assert_eq!(
        deliver(Some("made up by loopd")),
        (DataClass::Secret, false)
    );
    // And so is a note without its answer (a runner from before answers were sent).
    assert_eq!(deliver(None), (DataClass::Secret, false));
    home.assert_audit_good();
}
