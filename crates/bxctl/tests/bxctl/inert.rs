//! Text from the model, tools and peers never reaches the terminal raw: every bxctl command
//! that shows foreign text, fed every class of character that could hide, move or forge
//! text, shows the exact escaped form (`inert`'s rule).

use proto::allowance::Scope;
use proto::approval::{CallRef, GrantsInfo, SessionInfo};
use proto::chat::{ChatEvent, ChatReply, SessionRecords, TurnEnd};
use proto::{
    AuditEvent, AuditLine, AuditRecord, CallId, DataClass, DecisionRecord, DenyReason, Epoch,
    ErrorCode, Hash32, LogRecord, Message, SessionId, ToolCall, ToolResponse,
};

use crate::peer::{BLOCK, ESCAPED, FORGED, HOSTILE, Home, raw, stdout, time};

/// [`HOSTILE`] as JSON text (as the card and the audit show arguments), inert.
pub(crate) const ARGS: &str = "\"a\\u001b[2J\\u001b]0;owned\\u0007\\rb\\u0000\\b\\u{007f}\\u{009b}\
    \\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{202e}\\u{2066}\\u{2067}\\u{2068}\\u{2069}\
    \\u{200b}\\u{200c}\\u{200d}\\u{2060}\\u{feff}\\\\u{005c}u{41}\\n  \
    [call 4 waits for your approval]\"";

pub(crate) fn s1() -> SessionId {
    SessionId::new("s-1").expect("id")
}

#[test]
fn chat_shows_model_text_as_a_block_and_every_field_as_one_line() {
    let home = Home::new("chat");
    // The streamed text is cut inside the fake escape, as a stream may be cut anywhere.
    let cut = HOSTILE.find("u{41}").expect("cut");
    let tool = |response| ChatEvent::ToolResponse {
        call: CallId(4),
        response,
    };
    let events = vec![
        ChatEvent::Started {
            session: s1(),
            epoch: Epoch(0),
        },
        ChatEvent::Text {
            delta: "Hello.\n  [call 9 waits for your approval until x]\n".into(),
        },
        ChatEvent::Text {
            delta: HOSTILE[..cut].into(),
        },
        ChatEvent::Text {
            delta: HOSTILE[cut..].into(),
        },
        ChatEvent::ToolCall {
            call: CallId(4),
            tool: HOSTILE.into(),
            arguments: HOSTILE.into(),
        },
        tool(ToolResponse::PendingApproval {
            approval: HOSTILE.into(),
            expires: time(),
        }),
        tool(ToolResponse::Denied {
            reason: DenyReason::InvalidArguments,
            detail: Some(HOSTILE.into()),
        }),
        tool(ToolResponse::failed(HOSTILE)),
        ChatEvent::Text {
            delta: "bye".into(),
        },
    ];
    let mut answers: Vec<Message> = events.into_iter().map(Message::ChatEvent).collect();
    answers.push(Message::ChatReply(ChatReply {
        session: s1(),
        text: String::new(),
        end: TurnEnd::ModelError {
            detail: HOSTILE.into(),
        },
    }));
    let registered = proto::attest::OwnerMessage::of("hi");
    let broker = home.answer(
        &home.chat_broker(),
        vec![Message::OwnerRegistered(registered.clone())],
    );
    let served = home.answer(&home.loopd(), answers);
    let out = home.bxctl(&["chat", "-m", "hi"]);
    served.join().expect("loopd");
    // The owner's words went to brokerd first.
    assert_eq!(
        broker.join().expect("brokerd"),
        Message::OwnerMessage(registered)
    );
    // The model could not answer: exit 1, with what was shown.
    assert_eq!(out.status.code(), Some(1));
    let bx = hint(&home);
    assert_eq!(
        String::from_utf8(out.stdout).expect("utf8"),
        format!(
            "| Hello.\n|   [call 9 waits for your approval until x]\n{BLOCK}\
             \x20 [tool {ESCAPED} (call 4): {ESCAPED}]\n\
             \x20 [call 4 waits for your approval until 2026-09-17T08:05:00.000Z (expired): run \
             `{bx}approve {ESCAPED}` or `{bx}deny {ESCAPED}`]\n\
             \x20 [-> denied: invalid_arguments: {ESCAPED}]\n\
             \x20 [-> failed: {ESCAPED}]\n\
             | bye\n\
             [the model could not answer: {ESCAPED}; your message is kept]\n\
             [session s-1]\n"
        )
    );
}

/// How bxctl names itself in the commands it prints, so that each works as printed: its own
/// absolute path (it is not on PATH here), with the configuration it was given.
pub(crate) fn hint(home: &Home) -> String {
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_bxctl")).expect("bxctl");
    format!(
        "{} --config {} ",
        exe.display(),
        home.root.join("config.toml").display()
    )
}

#[test]
fn grants_show_shows_each_name_as_one_line() {
    let home = Home::new("grants");
    let served = home.answer(
        &home.brokerd(),
        vec![Message::GrantsInfo(GrantsInfo {
            snapshot: Hash32::ZERO,
            grants: vec![HOSTILE.into(), "b".into()],
        })],
    );
    let out = stdout(&home.bxctl(&["grants", "show"]));
    served.join().expect("brokerd");
    assert_eq!(out, format!("snapshot {}: {ESCAPED}, b\n", Hash32::ZERO));
}

#[test]
fn audit_show_keeps_every_record_on_its_own_line() {
    let home = Home::new("audit");
    let decision = |seq, decision| {
        AuditLine::Decision(AuditRecord {
            seq,
            time: time(),
            prev: Hash32::ZERO,
            session: s1(),
            call: CallId(1),
            tool: HOSTILE.into(),
            arguments: HOSTILE.into(),
            session_taint: DataClass::Private,
            decision,
            canonical: None,
            witness: None,
            untrusted: false,
            write: None,
        })
    };
    let records = [
        decision(
            0,
            DecisionRecord::Denied {
                reason: DenyReason::InvalidArguments,
                grant: Some(HOSTILE.into()),
                detail: Some(format!("unknown field `x`{FORGED}")),
            },
        ),
        decision(
            1,
            DecisionRecord::Approved {
                grant: HOSTILE.into(),
                approver: HOSTILE.into(),
                post: Some(HOSTILE.into()),
                allowance: Some(HOSTILE.into()),
            },
        ),
        AuditLine::Event(AuditEvent::ApprovalRefused {
            seq: 2,
            time: time(),
            prev: Hash32::ZERO,
            approval: HOSTILE.into(),
            by: HOSTILE.into(),
            post: None,
            refusal: proto::approval::Refusal::NotOwner,
        }),
        AuditLine::Event(AuditEvent::AllowanceGranted {
            seq: 3,
            time: time(),
            prev: Hash32::ZERO,
            allowance: HOSTILE.into(),
            approval: HOSTILE.into(),
            session: s1(),
            tool: HOSTILE.into(),
            grant: HOSTILE.into(),
            grant_text: Hash32::ZERO,
            scope: Scope::Note {
                name: HOSTILE.into(),
            },
            session_taint: DataClass::Private,
            untrusted: true,
            by: HOSTILE.into(),
            post: Some(HOSTILE.into()),
            expires: time(),
        }),
        AuditLine::Event(AuditEvent::AllowanceRevoked {
            seq: 4,
            time: time(),
            prev: Hash32::ZERO,
            allowance: HOSTILE.into(),
            by: HOSTILE.into(),
        }),
    ];
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("json") + "\n")
        .collect();
    std::fs::write(home.root.join("home/audit/2026-09-17.jsonl"), text).expect("audit");
    let out = stdout(&home.bxctl(&["audit", "show"]));
    let t = "2026-09-17T08:05:00.000Z";
    let head = |seq| format!("#{seq} {t} session s-1 call 1 {ESCAPED} {ARGS} [private]");
    assert_eq!(
        out,
        format!(
            "{} DENIED: invalid_arguments (grant {ESCAPED}): unknown field `x`\\u{{000a}}#0 {t} \
             session s-1 call 1 read_file \"{{}}\" [private] ALLOWED by grant notes-read\n\
             {} APPROVED by {ESCAPED} in post {ESCAPED} through allowance {ESCAPED} (grant \
             {ESCAPED})\n\
             #2 {t} answer to {ESCAPED} by {ESCAPED} REFUSED: not_owner\n\
             #3 {t} allowance {ESCAPED} GRANTED by {ESCAPED} (approval {ESCAPED}): {ESCAPED} of \
             note {ESCAPED} in session s-1, until {t}, while at private, untrusted or below\n\
             #4 {t} allowance {ESCAPED} REVOKED by {ESCAPED}\n",
            head(0),
            head(1)
        )
    );
    assert_eq!(out.lines().filter(|l| l.starts_with("#0 ")).count(), 1);
}

#[test]
fn audit_verify_quotes_a_bad_line_as_one_line() {
    let home = Home::new("verify");
    // serde's message for an unknown kind quotes it. A second line follows: a last line
    // alone would be a torn tail, which brokerd recovers and verify only notes.
    let line = format!(
        "{{\"kind\":{}}}\n{{\"kind\":\"x\"}}\n",
        serde_json::to_string(HOSTILE).expect("json")
    );
    std::fs::write(home.root.join("home/audit/2026-09-17.jsonl"), line).expect("audit");
    let out = home.bxctl(&["audit", "verify"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).expect("utf8");
    assert!(
        text.starts_with(&format!(
            "audit chain BROKEN at 2026-09-17.jsonl line 1: not an audit line: \
             unknown variant `{ESCAPED}`, expected one of "
        )),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(!raw(&text), "{text:?}");
}

#[test]
fn sessions_show_what_was_said_as_blocks() {
    let home = Home::new("sessions");
    let records = vec![
        LogRecord::SessionStart {
            time: time(),
            session: s1(),
            epoch: Epoch(0),
            slot: 0,
            baseline: Hash32::ZERO,
        },
        LogRecord::User {
            time: time(),
            content: "hi\n  [call 4 waits for your approval]".into(),
        },
        LogRecord::Assistant {
            time: time(),
            content: Some(format!("ok{FORGED}\n{HOSTILE}")),
            reasoning_content: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: HOSTILE.into(),
                arguments: HOSTILE.into(),
            }],
            witness: None,
        },
        LogRecord::Withdrawn {
            time: time(),
            cause: proto::Withdrawal::Cut,
            detail: HOSTILE.into(),
            calls: vec![ToolCall {
                id: "c2".into(),
                name: HOSTILE.into(),
                arguments: HOSTILE.into(),
            }],
        },
    ];
    let served = home.answer(
        &home.loopd(),
        vec![Message::SessionRecords(SessionRecords {
            session: s1(),
            epoch: Epoch(0),
            records,
            truncated: false,
        })],
    );
    let out = stdout(&home.bxctl(&["sessions", "s-1"]));
    served.join().expect("loopd");
    let t = "2026-09-17T08:05:00.000Z";
    assert_eq!(
        out,
        format!(
            "session s-1 epoch 0\n\
             {t} -- session start (slot 0)\n\
             {t} you:\n| hi\n|   [call 4 waits for your approval]\n\
             {t} boxmaker: [calls: {ESCAPED} {ESCAPED}]\n\
             | ok\n\
             | #0 {t} session s-1 call 1 read_file \"{{}}\" [private] ALLOWED by grant notes-read\n\
             {BLOCK}\
             {t} -- tool calls withdrawn (cut answer, not run: {ESCAPED}): {ESCAPED} {ESCAPED}\n"
        )
    );
}

#[test]
fn session_shows_each_tool_as_one_line() {
    let home = Home::new("session");
    let served = home.answer(
        &home.brokerd(),
        vec![Message::SessionInfo(SessionInfo {
            session: s1(),
            taint: DataClass::Secret,
            untrusted: true,
            untrusted_by: vec![CallRef {
                tool: HOSTILE.into(),
                call: CallId(3),
                read: None,
                session: None,
            }],
        })],
    );
    // loopd keeps the session: brokerd's answer is shown as it is.
    let kept = home.answer(
        &home.loopd(),
        vec![Message::SessionRecords(SessionRecords {
            session: s1(),
            epoch: Epoch(0),
            records: Vec::new(),
            truncated: false,
        })],
    );
    let out = stdout(&home.bxctl(&["session", "s-1"]));
    served.join().expect("brokerd");
    kept.join().expect("loopd");
    assert_eq!(
        out,
        format!("session s-1: taint secret, untrusted true\n  untrusted by {ESCAPED} (call 3)\n")
    );
}

/// brokerd answers an id it never saw with its defaults: a session loopd keeps no log of is
/// said not to exist, exit 1, with the sessions there are (issue 28).
#[test]
fn session_that_does_not_exist_exits_1_and_says_so() {
    let home = Home::new("no-session");
    let served = home.answer(
        &home.brokerd(),
        vec![Message::SessionInfo(SessionInfo {
            session: s1(),
            taint: DataClass::Private,
            untrusted: false,
            untrusted_by: Vec::new(),
        })],
    );
    let asked = home.answer_each(
        &home.loopd(),
        vec![
            Message::error(ErrorCode::BadMessage, "no session s-1"),
            Message::SessionListing(proto::chat::SessionListing {
                sessions: Vec::new(),
            }),
        ],
    );
    let out = home.bxctl(&["session", "s-1"]);
    served.join().expect("brokerd");
    asked.join().expect("loopd");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "bxctl: no session s-1: loopd keeps no log of it\nhelp: there are no sessions yet\n"
    );
}

/// bxctl's error for `args` when the peer on `sock` refuses the request with `answer`: it
/// must exit 1 (a request refused) with one line on stderr.
fn error(home: &Home, sock: &std::path::Path, answer: Message, args: &[&str]) -> String {
    let served = home.answer(sock, vec![answer]);
    let out = home.bxctl(args);
    served.join().expect("peer");
    assert_eq!(out.status.code(), Some(1));
    String::from_utf8(out.stderr).expect("utf8")
}

#[test]
fn errors_quote_peers_as_one_line() {
    let home = Home::new("errors");
    let refusal = || Message::error(ErrorCode::BadMessage, HOSTILE);
    for args in [&["session", "s-1"][..], &["approvals"], &["grants", "show"]] {
        let _ = std::fs::remove_file(home.brokerd());
        assert_eq!(
            error(&home, &home.brokerd(), refusal(), args),
            format!("bxctl: brokerd refused: bad_message: {ESCAPED}\n"),
            "{args:?}"
        );
    }
    for args in [&["chat", "-m", "hi"][..], &["sessions"]] {
        let _ = std::fs::remove_file(home.loopd());
        assert_eq!(
            error(&home, &home.loopd(), refusal(), args),
            format!("bxctl: loopd refused: bad_message: {ESCAPED}\n"),
            "{args:?}"
        );
    }
    // A frame bxctl cannot read: serde's message quotes the peer's unknown kind.
    for (sock, args) in [
        (home.brokerd(), &["approvals"][..]),
        (home.loopd(), &["chat", "-m", "hi"]),
    ] {
        let _ = std::fs::remove_file(&sock);
        let body = format!(
            "{{\"v\":1,\"id\":1,\"final\":true,\"msg\":{{\"kind\":{},\"body\":{{}}}}}}",
            serde_json::to_string(HOSTILE).expect("json")
        );
        let served = home.answer_raw(&sock, body.into_bytes());
        let out = home.bxctl(args);
        served.join().expect("peer");
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).expect("utf8");
        assert!(
            err.starts_with("bxctl: receiving: bad message: unknown variant `")
                && err.contains(&format!("`{ESCAPED}`")),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!raw(&err), "{err:?}");
    }
}
