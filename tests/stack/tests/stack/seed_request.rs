//! The pre-M1 seed's tool request (no witness: it predates them) still parses on
//! broker.sock, as proto grows additively (the brief's decision 10), and brokerd denies it as
//! `not_witnessed`, audited, exactly as it denies a request naming a call nobody witnessed;
//! then it serves on.

use std::os::unix::net::UnixStream;

use proto::{AuditLine, DecisionRecord, DenyReason, Message, ToolResponse};
use stack::{Home, read_grant, response, tool};

/// The seed's example envelope, byte for byte (also the proto fixture
/// `message_tool_request_seed.json`).
const SEED: &[u8] = br#"{"v":1,"id":7,"final":true,"msg":{"kind":"tool_request","body":{"session":"s-1","call":3,"tool":"read_file","arguments":"{\"path\":\"/etc/hostname\"}"}}}"#;

#[test]
fn the_seeds_request_without_a_witness_is_a_typed_audited_not_witnessed_denial() {
    let home = Home::new("seed-request", "witness_wait = \"300ms\"");
    // A grant that covers the path: only the missing witness can deny it.
    home.write_grant("etc", &read_grant("auto", std::path::Path::new("/etc"), ""));
    let notes = home.files("notes", &[("n.md", "the note")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let _brokerd = home.start();

    let mut raw = UnixStream::connect(home.loop_sock()).expect("broker.sock");
    proto::write_frame(&mut raw, SEED).expect("frame");
    let got = proto::read_envelope(&mut raw).expect("answer");
    assert_eq!((got.id, got.r#final), (7, true), "{got:?}");
    let Message::ToolResponse(ToolResponse::Denied { reason, detail }) = &got.msg else {
        panic!("not a denial: {got:?}");
    };
    assert_eq!(*reason, DenyReason::NotWitnessed);
    assert!(
        detail.as_deref().is_some_and(|d| d.contains("no witness")),
        "{detail:?}"
    );

    // Audited as the call it was, with no witness named (it used none).
    let decisions: Vec<_> = home
        .audit_lines()
        .into_iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => Some(r),
            _ => None,
        })
        .collect();
    let [line] = decisions.as_slice() else {
        panic!("one decision line: {decisions:?}");
    };
    assert_eq!(
        (line.session.as_str(), line.call.0, line.tool.as_str()),
        ("s-1", 3, "read_file")
    );
    assert_eq!(line.arguments, r#"{"path":"/etc/hostname"}"#);
    assert_eq!(line.witness, None);
    assert!(
        matches!(
            &line.decision,
            DecisionRecord::Denied {
                reason: DenyReason::NotWitnessed,
                grant: None,
                ..
            }
        ),
        "{line:?}"
    );

    // brokerd serves on: a witnessed call runs.
    let args = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let ran = tool(&home.loop_sock(), "s-2", 1, "read_file", &args);
    assert!(
        matches!(response(&ran), ToolResponse::Result { content, .. } if content.contains("the note")),
        "{ran:?}"
    );
    home.assert_audit_good();
}
