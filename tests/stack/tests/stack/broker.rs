//! brokerd as loopd and the owner meet it: allowed, denied, refused on the wrong socket,
//! malformed input answered and survived, taint surviving a restart, reloads audited.

use std::io::Write;
use std::os::unix::net::UnixStream;

use daemon::conn::Conn;
use proto::approval::{ApprovalAnswer, Empty, SessionQuery, Verdict};
use proto::{
    AuditEvent, AuditLine, DataClass, DecisionRecord, DenyReason, Envelope, ErrorCode, Hash32,
    Message, SessionId, ToolResponse,
};
use stack::{Home, read_grant, response, tool};

fn error_code(env: &Envelope) -> Option<ErrorCode> {
    match &env.msg {
        Message::Error(e) => Some(e.code),
        _ => None,
    }
}

#[test]
fn an_allowed_read_returns_the_file_and_is_audited() {
    let home = Home::new("allowed", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let _d = home.start();
    let frames = tool(
        &home.loop_sock(),
        "s-1",
        1,
        "read_file",
        &format!(r#"{{"path":"{}/todo.md"}}"#, notes.display()),
    );
    assert_eq!(frames.len(), 1, "an auto call is one final frame");
    assert_eq!(
        response(&frames),
        &ToolResponse::Result {
            content: "- buy milk\n".into(),
            class: DataClass::Private,
            untrusted: true,
            truncated: false
        }
    );
    let lines = home.audit_lines();
    assert!(matches!(
        lines[0],
        AuditLine::Event(AuditEvent::GrantsLoaded { .. })
    ));
    match &lines[1] {
        AuditLine::Decision(r) => {
            assert_eq!(
                r.decision,
                DecisionRecord::Allowed {
                    grant: "notes".into()
                }
            );
            assert_eq!(
                r.canonical.as_deref(),
                Some(format!(r#"{{"path":"{}/todo.md"}}"#, notes.display()).as_str())
            );
        }
        other => panic!("{other:?}"),
    }
    home.assert_audit_good();
}

#[test]
fn a_denied_read_says_why_and_runs_nothing() {
    let home = Home::new("denied", "");
    let notes = home.files("notes", &[("todo.md", "x")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let _d = home.start();
    let frames = tool(
        &home.loop_sock(),
        "s-1",
        1,
        "read_file",
        r#"{"path":"/etc/passwd"}"#,
    );
    match response(&frames) {
        ToolResponse::Denied {
            reason: DenyReason::NoGrant,
            detail: Some(d),
        } => assert!(d.contains("/etc/passwd"), "{d}"),
        other => panic!("{other:?}"),
    }
    let frames = tool(
        &home.loop_sock(),
        "s-1",
        2,
        "read_file",
        &format!(
            r#"{{"path":"{0}/a","path":"{0}/todo.md"}}"#,
            notes.display()
        ),
    );
    assert!(matches!(
        response(&frames),
        ToolResponse::Denied {
            reason: DenyReason::InvalidArguments,
            ..
        }
    ));
    let frames = tool(&home.loop_sock(), "s-1", 3, "shell", r#"{"cmd":"id"}"#);
    assert!(matches!(
        response(&frames),
        ToolResponse::Denied {
            reason: DenyReason::UnknownTool,
            ..
        }
    ));
    let denials = home
        .audit_lines()
        .into_iter()
        .filter(|l| matches!(l, AuditLine::Decision(r) if matches!(r.decision, DecisionRecord::Denied { .. })))
        .count();
    assert_eq!(denials, 3);
    home.assert_audit_good();
}

#[test]
fn the_loopd_socket_refuses_approvals_and_queries() {
    let home = Home::new("forbidden", "");
    let _d = home.start();
    for msg in [
        Message::ApprovalAnswer(ApprovalAnswer {
            approval: "0".repeat(32),
            binding: Hash32::ZERO,
            verdict: Verdict::Approve,
            post: None,
            by: Some("owner".into()),
        }),
        Message::ApprovalList(Empty {}),
        Message::SessionQuery(SessionQuery {
            session: SessionId::new("s-1").expect("id"),
        }),
    ] {
        let mut conn = Conn::connect(&home.loop_sock()).expect("connect");
        let reply = conn.call(9, msg, |_| {}).expect("reply");
        assert_eq!(error_code(&reply), Some(ErrorCode::ForbiddenKind));
    }
    // And the admin side does not run tools.
    let frames = tool(
        &home.admin_sock(),
        "s-1",
        1,
        "read_file",
        r#"{"path":"/x"}"#,
    );
    assert_eq!(error_code(&frames[0]), Some(ErrorCode::ForbiddenKind));
}

#[test]
fn malformed_frames_get_typed_errors_and_the_daemon_serves_on() {
    let home = Home::new("malformed", "");
    let d = home.start();
    let cases: Vec<(&str, Vec<u8>, ErrorCode)> = vec![
        ("zero length", vec![0, 0, 0, 0], ErrorCode::BadFrame),
        (
            "oversize",
            vec![0xff, 0xff, 0xff, 0xff],
            ErrorCode::BadFrame,
        ),
        (
            "not json",
            b"\0\0\0\x05hello".to_vec(),
            ErrorCode::BadMessage,
        ),
        (
            "version 2",
            {
                let body = br#"{"v":2,"id":4,"final":true,"msg":{"kind":"x","body":{}}}"#;
                let mut f = u32::try_from(body.len())
                    .expect("len")
                    .to_be_bytes()
                    .to_vec();
                f.extend_from_slice(body);
                f
            },
            ErrorCode::BadVersion,
        ),
    ];
    for (name, bytes, code) in cases {
        let mut s = UnixStream::connect(home.loop_sock()).expect("connect");
        s.write_all(&bytes).expect("write");
        let reply = proto::read_envelope(&mut s).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(error_code(&reply), Some(code), "{name}");
        // Closed after the error.
        assert!(
            matches!(proto::read_frame(&mut s), Err(proto::FrameError::Closed)),
            "{name}: connection left open"
        );
    }
    let frames = tool(&home.loop_sock(), "s-1", 1, "read_file", r#"{"path":"/x"}"#);
    assert!(matches!(response(&frames), ToolResponse::Denied { .. }));
    drop(d);
}

#[test]
fn a_stalled_frame_is_dropped_at_the_deadline_and_others_are_served() {
    let home = Home::new("deadline", "frame_deadline = \"300ms\"\n");
    let _d = home.start();
    let mut slow = UnixStream::connect(home.loop_sock()).expect("connect");
    slow.write_all(&[0, 0, 0, 40, b'{']).expect("start a frame");
    // Meanwhile another connection is served.
    let frames = tool(&home.loop_sock(), "s-1", 1, "read_file", r#"{"path":"/x"}"#);
    assert!(matches!(response(&frames), ToolResponse::Denied { .. }));
    slow.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .expect("timeout");
    let mut buf = [0u8; 1];
    let n = std::io::Read::read(&mut slow, &mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the stalled connection was not closed");
}

#[test]
fn taint_and_the_untrusted_flag_survive_a_restart() {
    let home = Home::new("restart", "");
    let secrets = home.files("secrets", &[("key.txt", "hunter2")]);
    let notes = home.files("notes", &[("n.md", "note")]);
    home.write_grant(
        "secrets",
        &read_grant(
            "auto",
            &secrets,
            "result_class = \"secret\"\nuntrusted = true",
        ),
    );
    home.write_grant(
        "notes",
        &read_grant("auto", &notes, "")
            .replace("max_taint = \"secret\"", "max_taint = \"private\""),
    );
    let mut d = home.start();
    let read = |call, path: String| {
        tool(
            &home.loop_sock(),
            "s-1",
            call,
            "read_file",
            &format!(r#"{{"path":"{path}"}}"#),
        )
    };
    assert!(matches!(
        response(&read(1, format!("{}/n.md", notes.display()))),
        ToolResponse::Result { .. }
    ));
    assert!(matches!(
        response(&read(2, format!("{}/key.txt", secrets.display()))),
        ToolResponse::Result {
            class: DataClass::Secret,
            ..
        }
    ));
    d.kill();
    let _d = home.start();
    let out = home.bxctl(&["session", "s-1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("taint secret, untrusted true"), "{text}");
    assert!(
        text.contains(&format!(
            "read_file (call 2, read {}/key.txt)",
            secrets.display()
        )),
        "{text}"
    );
    // The private-only grant no longer applies to this session.
    assert!(matches!(
        response(&read(3, format!("{}/n.md", notes.display()))),
        ToolResponse::Denied {
            reason: DenyReason::TaintTooHigh,
            ..
        }
    ));
    home.assert_audit_good();
}

#[test]
fn sighup_loads_a_new_snapshot_for_later_calls_and_audits_it() {
    let home = Home::new("reload", "");
    let notes = home.files("notes", &[("n.md", "note")]);
    let d = home.start();
    let path = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    assert!(matches!(
        response(&tool(&home.loop_sock(), "s-1", 1, "read_file", &path)),
        ToolResponse::Denied {
            reason: DenyReason::NoGrant,
            ..
        }
    ));
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    home.reload(&d, 2);
    assert!(matches!(
        response(&tool(&home.loop_sock(), "s-1", 2, "read_file", &path)),
        ToolResponse::Result { .. }
    ));
    // A bad grant file is refused and the old snapshot stays.
    home.write_grant("bad", "tool = \"read_file\"\nmode = \"sometimes\"\n");
    d.hup();
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(d.log().contains("bad.toml:2:"), "{}", d.log());
    assert!(matches!(
        response(&tool(&home.loop_sock(), "s-1", 3, "read_file", &path)),
        ToolResponse::Result { .. }
    ));
}

#[test]
fn a_bad_grant_refuses_start_naming_file_line_and_reason() {
    let home = Home::new("badgrant", "");
    home.write_grant(
        "web",
        "tool = \"http_fetch\"\nmode = \"sometimes\"\nmax_taint = \"private\"\n",
    );
    let out = std::process::Command::new(stack::bin("brokerd"))
        .arg("--config")
        .arg(home.config())
        .output()
        .expect("brokerd");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("web.toml:2:"), "{err}");
    let check = home.bxctl(&["grants", "check"]);
    assert_eq!(check.status.code(), Some(1));
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        text.contains("web.toml:2:") && text.contains("unknown variant"),
        "{text}"
    );
}

#[test]
fn a_tool_that_dies_is_a_typed_failure_in_the_result_and_the_audit() {
    let home = Home::new("tool-dies", "");
    let notes = home.files("notes", &[("todo.md", "- buy milk\n")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    // A tool that reads its request and is killed before it answers.
    home.tool_script("dying-tool", "#!/bin/sh\ncat >/dev/null\nkill -9 $$\n");
    let _d = home.start();
    let arguments = format!(r#"{{"path":"{}/todo.md"}}"#, notes.display());
    let frames = tool(&home.loop_sock(), "s-1", 1, "read_file", &arguments);
    let signal = proto::ToolFailure::Signal {
        signal: Some("SIGKILL".into()),
    };
    match response(&frames) {
        ToolResponse::Failed { message, failure } => {
            assert_eq!(message, "the tool was killed by signal SIGKILL (no stderr)");
            assert_eq!(failure.as_ref(), Some(&signal));
        }
        other => panic!("{other:?}"),
    }
    // The session goes on: a second call is decided and run (and fails alike).
    let frames = tool(&home.loop_sock(), "s-1", 2, "read_file", &arguments);
    assert!(matches!(response(&frames), ToolResponse::Failed { .. }));
    let failed: Vec<_> = home
        .audit_lines()
        .into_iter()
        .filter_map(|line| match line {
            AuditLine::Event(AuditEvent::ToolFailed {
                session,
                call,
                tool,
                failure,
                ..
            }) => Some((session.as_str().to_owned(), call.0, tool, failure)),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed,
        [
            ("s-1".to_owned(), 1, "read_file".to_owned(), signal.clone()),
            ("s-1".to_owned(), 2, "read_file".to_owned(), signal),
        ]
    );
    home.assert_audit_good();
    let out = home.bxctl(&["audit", "show"]);
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.contains("s-1 call 1 read_file: FAILED, killed by signal SIGKILL"),
        "{out}"
    );
}
