//! Allow for this session, answered on the terminal's channel (brokerd's admin side, as
//! `bxctl approve --for-session` sends it): the later calls of the same session under the
//! same grant that fall under the card's path run without asking, audited as approved
//! through the allowance; it stops when the session's label rises, when it expires, when
//! the owner revokes it, and when brokerd restarts; a grant marked `always_ask` never takes
//! the answer. The same over the gateway link is `gateway_allowance`.

use std::path::Path;
use std::time::Duration;

use daemon::conn::Conn;
use proto::allowance::Scope;
use proto::approval::Refusal;
use proto::{AuditEvent, AuditLine, DataClass, DecisionRecord, Envelope, Message, ToolResponse};
use stack::{Home, response};

/// What became of one call sent straight to brokerd.
pub(crate) enum Sent {
    /// It waits for the owner: the approval's id, and the request's thread.
    Waits(String, std::thread::JoinHandle<Vec<Envelope>>),
    /// It was decided without asking: every frame of the answer.
    Done(Vec<Envelope>),
}

impl Sent {
    /// The call's id, when it waits; fails the test when it ran without asking.
    pub(crate) fn waits(self) -> (String, std::thread::JoinHandle<Vec<Envelope>>) {
        match self {
            Self::Waits(id, t) => (id, t),
            Self::Done(frames) => panic!("the call did not ask: {:?}", response(&frames)),
        }
    }

    /// The call's answer, when it ran without asking; fails the test when it waits.
    pub(crate) fn done(self) -> Vec<Envelope> {
        match self {
            Self::Done(frames) => frames,
            Self::Waits(id, _) => panic!("the call asked the owner (approval {id})"),
        }
    }
}

/// Sends one witnessed call of `session` on the loopd side and waits for its first frame.
pub(crate) fn send(home: &Home, session: &str, call: u64, tool: &str, args: &str) -> Sent {
    let sock = home.loop_sock();
    let witness = stack::witnessed(&home.witness_sock(), tool, args);
    let (session, tool, args) = (session.to_owned(), tool.to_owned(), args.to_owned());
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let mut conn = Conn::connect(&sock).expect("connect");
        let msg = Message::ToolRequest(proto::ToolRequest {
            session: proto::SessionId::new(session).expect("id"),
            call: proto::CallId(call),
            tool,
            arguments: args,
            witness: Some(witness),
        });
        let mut frames = Vec::new();
        let last = conn
            .call(call, msg, |e| {
                frames.push(e.clone());
                let _ = tx.send(e.clone());
            })
            .expect("answer");
        let _ = tx.send(last.clone());
        frames.push(last);
        frames
    });
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("a first frame");
    match first.msg {
        Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) => {
            Sent::Waits(approval, thread)
        }
        _ => Sent::Done(thread.join().expect("request thread")),
    }
}

pub(crate) fn listed(dir: &Path) -> String {
    format!(r#"{{"path":"{}"}}"#, dir.display())
}

/// A `list_dir` grant on `root` that asks; its results are the owner's own (trusted,
/// private), so a session answer to its card can outlive the call it came with.
pub(crate) fn list_grant(root: &Path, extra: &str) -> String {
    format!(
        "tool = \"list_dir\"\nmode = \"ask\"\nmax_taint = \"secret\"\nuntrusted = false\n\
         {extra}\n[constraints]\npaths = [\"{}\"]\n",
        root.display()
    )
}

/// A home with `root/notes/{a,sub/b}` and `root/other`, the `notes` grant above on `root`,
/// and an auto `read_file` grant on `root/vault/key.txt` whose result is secret.
fn setup(name: &str, broker: &str, extra: &str) -> (Home, std::path::PathBuf) {
    let home = Home::new(name, broker);
    let root = home.files("root", &[]);
    home.files("root/notes", &[("a.txt", "a")]);
    home.files("root/notes/sub", &[("b.txt", "b")]);
    home.files("root/other", &[("c.txt", "c")]);
    home.files("root/vault", &[("key.txt", "hunter2")]);
    home.write_grant("notes", &list_grant(&root, extra));
    home.write_grant(
        "vault",
        &format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \
             \"secret\"\nuntrusted = false\n[constraints]\npaths = [\"{}/vault\"]\n",
            root.display()
        ),
    );
    (home, root)
}

fn approved(home: &Home) -> Vec<(u64, Option<String>)> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => match r.decision {
                DecisionRecord::Approved { allowance, .. } => Some((r.call.0, allowance)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

pub(crate) fn granted(home: &Home) -> Vec<AuditEvent> {
    home.audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Event(e @ AuditEvent::AllowanceGranted { .. }) => Some(e),
            _ => None,
        })
        .collect()
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Answers `id` with `bxctl approve --for-session` and checks it ran.
fn allow(home: &Home, id: &str, thread: std::thread::JoinHandle<Vec<Envelope>>) {
    let out = home.bxctl(&["approve", "--for-session", &id[..8]]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("approve for this session {id}\n")),
        "{said}"
    );
    assert!(said.ends_with("approved for this session\n"), "{said}");
    let frames = thread.join().expect("request");
    assert!(matches!(response(&frames), ToolResponse::Result { .. }));
}

#[test]
fn allowed_for_the_session_later_calls_under_the_path_run_without_asking_and_are_audited() {
    let (home, root) = setup("allow-applies", "", "");
    let _d = home.start();
    let notes = root.join("notes");
    let (id, first) = send(&home, "s-1", 1, "list_dir", &listed(&notes)).waits();
    // The card offers it, and says what it covers.
    let shown = text(&home.bxctl(&["approvals"]));
    let scope = format!(
        "this session: list_dir at or under {}, for 1 h",
        notes.display()
    );
    assert!(shown.contains(&scope), "{shown}");
    assert!(
        shown.contains(&format!("approve --for-session {id}`")),
        "{shown}"
    );
    allow(&home, &id, first);

    // At the path and below it, in the same session: no card.
    let again = send(&home, "s-1", 2, "list_dir", &listed(&notes)).done();
    assert!(
        matches!(response(&again), ToolResponse::Result { content, .. } if content.contains("a.txt"))
    );
    let below = send(&home, "s-1", 3, "list_dir", &listed(&notes.join("sub"))).done();
    assert!(
        matches!(response(&below), ToolResponse::Result { content, .. } if content.contains("b.txt"))
    );
    // Beside it (the same grant covers it), or in another session: asked.
    let (beside, t) = send(&home, "s-1", 4, "list_dir", &listed(&root.join("other"))).waits();
    assert!(home.bxctl(&["deny", &beside]).status.success());
    drop(t.join());
    let (other, t) = send(&home, "s-2", 1, "list_dir", &listed(&notes)).waits();
    assert!(home.bxctl(&["deny", &other]).status.success());
    drop(t.join());

    // Audited: the grant change with its scope, before the call it came with; each call it
    // covered approved by the owner who answered, through it.
    let granted = granted(&home);
    let [
        AuditEvent::AllowanceGranted {
            seq,
            allowance,
            approval,
            session,
            tool,
            grant,
            scope,
            session_taint,
            untrusted,
            by,
            post,
            expires,
            time,
            ..
        },
    ] = granted.as_slice()
    else {
        panic!("{granted:?}");
    };
    assert_eq!(
        (approval, session.as_str(), tool.as_str(), grant.as_str()),
        (&id, "s-1", "list_dir", "notes")
    );
    assert_eq!(
        scope,
        &Scope::Path {
            path: notes.display().to_string()
        }
    );
    assert_eq!(
        (*session_taint, *untrusted, post),
        (DataClass::Private, false, &None)
    );
    let me = nix::unistd::getuid().as_raw();
    assert!(by.starts_with(&format!("uid {me}")), "{by}");
    let hour = expires.as_millis() - time.as_millis();
    assert!((3_599_000..=3_600_000).contains(&hour), "{hour}");
    let first_decision = home.audit_lines().into_iter().find_map(|l| match l {
        AuditLine::Decision(r) if r.call.0 == 1 => Some(r.seq),
        _ => None,
    });
    assert!(
        first_decision.is_some_and(|s| s > *seq),
        "granted before the call's decision"
    );
    let a = Some(allowance.clone());
    assert_eq!(approved(&home), [(1, None), (2, a.clone()), (3, a)]);

    // Shown by `bxctl approvals` and `bxctl status`.
    let shown = text(&home.bxctl(&["approvals"]));
    assert!(
        shown.contains(&format!("allowance {allowance}\n")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("approvals revoke {allowance}`")),
        "{shown}"
    );
    let status = text(&home.bxctl(&["status"]));
    let line = format!(
        "allowance   list_dir at or under {} in session s-1",
        notes.display()
    );
    assert!(status.contains(&line), "{status}");
    let shown = text(&home.bxctl(&["audit", "show"]));
    assert!(
        shown.contains(&format!("allowance {allowance} GRANTED by uid {me}")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("through allowance {allowance}")),
        "{shown}"
    );
    home.assert_audit_good();
}

#[test]
fn an_allowance_stops_when_the_sessions_label_rises() {
    let (home, root) = setup("allow-label", "", "");
    let _d = home.start();
    let notes = listed(&root.join("notes"));
    let (id, first) = send(&home, "s-1", 1, "list_dir", &notes).waits();
    allow(&home, &id, first);
    send(&home, "s-1", 2, "list_dir", &notes).done();
    // The session reads a secret: every later call of it is decided at secret.
    let key = format!(r#"{{"path":"{}/vault/key.txt"}}"#, root.display());
    let secret = send(&home, "s-1", 3, "read_file", &key).done();
    assert!(matches!(
        response(&secret),
        ToolResponse::Result {
            class: DataClass::Secret,
            ..
        }
    ));
    let (asked, t) = send(&home, "s-1", 4, "list_dir", &notes).waits();
    // It has ended: no longer listed, and the owner's card at secret is a new question.
    let shown = text(&home.bxctl(&["approvals"]));
    assert!(!shown.contains("allowance "), "{shown}");
    assert!(shown.contains("taint secret"), "{shown}");
    assert!(home.bxctl(&["approve", &asked]).status.success());
    drop(t.join());
    let a = granted(&home);
    assert_eq!(a.len(), 1);
    assert_eq!(approved(&home).len(), 3, "{:?}", approved(&home));
    assert_eq!(approved(&home)[2], (4, None));
    home.assert_audit_good();
}

#[test]
fn an_allowance_expires() {
    let (home, root) = setup("allow-expires", "allowance_ttl = \"2s\"\n", "");
    let _d = home.start();
    let notes = listed(&root.join("notes"));
    let (id, first) = send(&home, "s-1", 1, "list_dir", &notes).waits();
    let shown = text(&home.bxctl(&["approvals"]));
    assert!(shown.contains("for 2 s, while"), "{shown}");
    allow(&home, &id, first);
    send(&home, "s-1", 2, "list_dir", &notes).done();
    std::thread::sleep(Duration::from_millis(2200));
    let (asked, t) = send(&home, "s-1", 3, "list_dir", &notes).waits();
    assert!(!text(&home.bxctl(&["approvals"])).contains("allowance "));
    assert!(home.bxctl(&["deny", &asked]).status.success());
    drop(t.join());
    home.assert_audit_good();
}

#[test]
fn a_revoked_allowance_covers_nothing_more_and_the_revocation_is_audited() {
    let (home, root) = setup("allow-revoke", "", "");
    let _d = home.start();
    let notes = listed(&root.join("notes"));
    let (id, first) = send(&home, "s-1", 1, "list_dir", &notes).waits();
    allow(&home, &id, first);
    send(&home, "s-1", 2, "list_dir", &notes).done();
    let Some(AuditEvent::AllowanceGranted { allowance, .. }) = granted(&home).pop() else {
        panic!("granted");
    };
    let out = home.bxctl(&["approvals", "revoke", &allowance[..6]]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!("revoke {allowance}\nrevoked\n")),
        "{said}"
    );
    let me = nix::unistd::getuid().as_raw();
    assert!(home.audit_lines().iter().any(|l| matches!(
        l,
        AuditLine::Event(AuditEvent::AllowanceRevoked { allowance: a, by, .. })
            if *a == allowance && by.starts_with(&format!("uid {me}"))
    )));
    let (asked, t) = send(&home, "s-1", 3, "list_dir", &notes).waits();
    assert!(home.bxctl(&["deny", &asked]).status.success());
    drop(t.join());
    // Once gone, gone: a second revoke of the whole id is refused.
    let again = home.bxctl(&["approvals", "revoke", &allowance]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(text(&again).contains("refused: not in force"));
    home.assert_audit_good();
}

/// An allowance lives in brokerd's memory only: a restart ends it, so a restart can only
/// ask again, never allow more.
#[test]
fn a_restart_ends_every_allowance() {
    let (home, root) = setup("allow-restart", "", "");
    let mut d = home.start();
    let notes = listed(&root.join("notes"));
    let (id, first) = send(&home, "s-1", 1, "list_dir", &notes).waits();
    allow(&home, &id, first);
    send(&home, "s-1", 2, "list_dir", &notes).done();
    d.kill();
    let _d = home.start();
    let (asked, t) = send(&home, "s-1", 3, "list_dir", &notes).waits();
    assert!(home.bxctl(&["deny", &asked]).status.success());
    drop(t.join());
    home.assert_audit_good();
}

/// A grant marked `always_ask` offers no session answer: one sent anyway is refused
/// `not_offered` and audited, the call waits on for an approve, and the next call asks
/// again.
#[test]
fn always_ask_refuses_the_session_answer_and_asks_every_time() {
    let (home, root) = setup("allow-always", "", "always_ask = true");
    let _d = home.start();
    let notes = listed(&root.join("notes"));
    let (id, first) = send(&home, "s-1", 1, "list_dir", &notes).waits();
    let shown = text(&home.bxctl(&["approvals"]));
    assert!(!shown.contains("this session:"), "{shown}");
    assert!(!shown.contains("--for-session"), "{shown}");
    let out = home.bxctl(&["approve", "--for-session", &id]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).ends_with("refused: not_offered\n"),
        "{}",
        text(&out)
    );
    assert!(home.audit_lines().iter().any(|l| matches!(
        l,
        AuditLine::Event(AuditEvent::ApprovalRefused {
            refusal: Refusal::NotOffered,
            approval,
            ..
        }) if *approval == id
    )));
    assert!(!first.is_finished(), "the call still waits");
    assert!(home.bxctl(&["approve", &id]).status.success());
    assert!(matches!(
        response(&first.join().expect("first")),
        ToolResponse::Result { .. }
    ));
    let (asked, t) = send(&home, "s-1", 2, "list_dir", &notes).waits();
    assert!(home.bxctl(&["deny", &asked]).status.success());
    drop(t.join());
    assert!(granted(&home).is_empty());
    home.assert_audit_good();
}

/// An allowance is for the grant as the owner allowed it: a reload that changes the grant's
/// text (here only its comment-free `max_taint`) leaves it covering nothing, and the next
/// call asks.
#[test]
fn a_changed_grant_is_not_the_grant_the_owner_allowed() {
    let (home, root) = setup("allow-reload", "", "");
    let d = home.start();
    let notes = listed(&root.join("notes"));
    let (id, first) = send(&home, "s-1", 1, "list_dir", &notes).waits();
    allow(&home, &id, first);
    // A comment changes nothing the grant says: still covered after the reload.
    let text = list_grant(&root, "");
    home.write_grant("notes", &format!("# the owner's note\n{text}"));
    home.reload(&d, 2);
    send(&home, "s-1", 2, "list_dir", &notes).done();
    home.write_grant("notes", &text.replace("\"secret\"", "\"private\""));
    home.reload(&d, 3);
    let (asked, t) = send(&home, "s-1", 3, "list_dir", &notes).waits();
    assert!(home.bxctl(&["deny", &asked]).status.success());
    drop(t.join());
    home.assert_audit_good();
}
