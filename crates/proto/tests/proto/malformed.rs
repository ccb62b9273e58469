use proto::{AuditRecord, ErrorCode, FrameError, LogRecord, ReadError, read_envelope};

fn frame(body: &str) -> Vec<u8> {
    let mut out = u32::try_from(body.len())
        .expect("len")
        .to_be_bytes()
        .to_vec();
    out.extend_from_slice(body.as_bytes());
    out
}

fn request(body: &str) -> String {
    format!(r#"{{"v":1,"id":5,"final":true,"msg":{{"kind":"tool_request","body":{body}}}}}"#)
}

const GOOD_BODY: &str =
    r#"{"session":"s-1","call":3,"tool":"read_file","arguments":"{\"path\":\"/x\"}"}"#;

/// Envelope bodies that must be refused with `bad_message`, and a word the detail must hold.
#[test]
fn malformed_envelopes_are_bad_messages() {
    let table: Vec<(&str, String, &str)> = vec![
        ("unknown envelope field", format!(r#"{{"v":1,"id":5,"final":true,"extra":0,"msg":{{"kind":"tool_request","body":{GOOD_BODY}}}}}"#), "unknown field"),
        ("unknown body field", request(r#"{"session":"s-1","sesion":"s","call":3,"tool":"t","arguments":"{}"}"#), "unknown field"),
        ("unknown msg field", r#"{"v":1,"id":5,"final":true,"msg":{"kind":"error","body":{"code":"internal","detail":""},"x":1}}"#.into(), "expected \"kind\" or \"body\""),
        ("wrong kind tag", r#"{"v":1,"id":5,"final":true,"msg":{"kind":"tool_requests","body":{}}}"#.into(), "unknown variant"),
        ("wrong status tag", r#"{"v":1,"id":5,"final":true,"msg":{"kind":"tool_response","body":{"status":"ok"}}}"#.into(), "unknown variant"),
        ("unknown field in a tagged variant", r#"{"v":1,"id":5,"final":true,"msg":{"kind":"tool_response","body":{"status":"failed","message":"m","extra":true}}}"#.into(), "unknown field"),
        ("float call id", request(r#"{"session":"s-1","call":3.0,"tool":"t","arguments":"{}"}"#), "floating point"),
        ("float envelope id", format!(r#"{{"v":1,"id":5.5,"final":true,"msg":{{"kind":"tool_request","body":{GOOD_BODY}}}}}"#), "floating point"),
        ("float version", format!(r#"{{"v":1.0,"id":5,"final":true,"msg":{{"kind":"tool_request","body":{GOOD_BODY}}}}}"#), "floating point"),
        ("string for a number", request(r#"{"session":"s-1","call":"3","tool":"t","arguments":"{}"}"#), "invalid type"),
        ("object for the arguments text", request(r#"{"session":"s-1","call":3,"tool":"t","arguments":{"path":"/x"}}"#), "invalid type"),
        ("negative call id", request(r#"{"session":"s-1","call":-3,"tool":"t","arguments":"{}"}"#), "invalid value"),
        ("bad session id", request(r#"{"session":"S_1","call":3,"tool":"t","arguments":"{}"}"#), "session id"),
        ("empty session id", request(r#"{"session":"","call":3,"tool":"t","arguments":"{}"}"#), "session id"),
        ("duplicate key", request(r#"{"session":"s-1","call":3,"call":4,"tool":"t","arguments":"{}"}"#), "duplicate field"),
        ("missing field", request(r#"{"session":"s-1","call":3,"tool":"t"}"#), "missing field"),
        ("null for a bool", r#"{"v":1,"id":5,"final":null,"msg":{"kind":"error","body":{"code":"internal","detail":""}}}"#.into(), "invalid type"),
        ("bad timestamp", r#"{"v":1,"id":5,"final":false,"msg":{"kind":"tool_response","body":{"status":"pending_approval","approval":"a","expires":"2026-09-17T08:15:00Z"}}}"#.into(), "timestamp"),
        ("bad error code", r#"{"v":1,"id":5,"final":true,"msg":{"kind":"error","body":{"code":"oops","detail":""}}}"#.into(), "unknown variant"),
        ("trailing bytes", format!("{} x", request(GOOD_BODY)), "trailing"),
        ("not json", "hello".into(), "invalid type"),
        ("envelope as an array", format!(r#"[1,5,true,{{"kind":"tool_request","body":{GOOD_BODY}}}]"#), "invalid type"),
    ];
    for (name, body, word) in table {
        let err = read_envelope(&mut frame(&body).as_slice()).expect_err(name);
        assert_eq!(err.code(), ErrorCode::BadMessage, "{name}: {err}");
        assert!(err.to_string().contains(word), "{name}: {err}");
    }
}

#[test]
fn the_id_of_a_bad_message_is_kept_for_the_answer() {
    let err = read_envelope(&mut frame(&request("{}")).as_slice()).expect_err("bad");
    assert_eq!(err.id(), Some(5));
}

#[test]
fn a_body_that_is_not_utf8_is_a_bad_message() {
    let mut bytes = request(GOOD_BODY).into_bytes();
    let at = bytes.iter().position(|&b| b == b'/').expect("slash");
    bytes[at] = 0xff;
    let mut wire = u32::try_from(bytes.len())
        .expect("len")
        .to_be_bytes()
        .to_vec();
    wire.extend_from_slice(&bytes);
    let err = read_envelope(&mut wire.as_slice()).expect_err("utf8");
    assert_eq!(err.code(), ErrorCode::BadMessage, "{err}");
}

#[test]
fn another_version_is_bad_version_with_its_id() {
    for v in ["0", "2", "4294967296"] {
        let body =
            format!(r#"{{"v":{v},"id":9,"final":true,"msg":{{"kind":"future","body":{{}}}}}}"#);
        let err = read_envelope(&mut frame(&body).as_slice()).expect_err(v);
        assert_eq!(err.code(), ErrorCode::BadVersion, "{v}: {err}");
        assert_eq!(err.id(), Some(9));
    }
}

#[test]
fn frame_level_errors_are_bad_frames() {
    let too_large = u32::try_from(proto::MAX_FRAME + 1)
        .expect("len")
        .to_be_bytes();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("zero-length frame", vec![0, 0, 0, 0]),
        ("oversize length prefix", too_large.to_vec()),
        ("largest length prefix", vec![0xff; 4]),
        ("truncated body", {
            let mut f = frame(&request(GOOD_BODY));
            f.truncate(f.len() - 3);
            f
        }),
        ("truncated header", vec![0, 0]),
        ("closed", vec![]),
    ];
    for (name, bytes) in cases {
        let err = read_envelope(&mut bytes.as_slice()).expect_err(name);
        assert_eq!(err.code(), ErrorCode::BadFrame, "{name}");
        let ok = match (name, &err) {
            ("zero-length frame", ReadError::Frame(FrameError::Empty)) => true,
            ("oversize length prefix", ReadError::Frame(FrameError::TooLarge { len })) => {
                *len == 1_048_577
            }
            ("largest length prefix", ReadError::Frame(FrameError::TooLarge { len })) => {
                *len == u64::from(u32::MAX)
            }
            ("truncated body", ReadError::Frame(FrameError::TruncatedBody { got, expected })) => {
                got + 3 == *expected
            }
            ("truncated header", ReadError::Frame(FrameError::TruncatedHeader { got: 2 })) => true,
            ("closed", ReadError::Frame(FrameError::Closed)) => true,
            _ => false,
        };
        assert!(ok, "{name}: got {err:?}");
    }
}

#[test]
fn malformed_records_are_refused() {
    let good = include_str!("../fixtures/audit_allowed.json");
    let upper = good.replace(&"0".repeat(64), &"AB".repeat(32));
    let err = serde_json::from_str::<AuditRecord>(&upper).expect_err("upper-case hex");
    assert!(err.to_string().contains("lower-case hex"), "{err}");
    let short = good.replace(&"0".repeat(64), &"0".repeat(63));
    assert!(serde_json::from_str::<AuditRecord>(&short).is_err());
    let unknown = good.replace("\"seq\":0", "\"seq\":0,\"extra\":1");
    assert!(serde_json::from_str::<AuditRecord>(&unknown).is_err());
    let float = good.replace("\"seq\":0", "\"seq\":0.0");
    assert!(serde_json::from_str::<AuditRecord>(&float).is_err());
    let bad_outcome = good.replace("\"allowed\"", "\"allow\"");
    assert!(serde_json::from_str::<AuditRecord>(&bad_outcome).is_err());

    let log = include_str!("../fixtures/log_user.json");
    let bad_type = log.replace("\"user\"", "\"owner\"");
    assert!(serde_json::from_str::<LogRecord>(&bad_type).is_err());
    let bad_time = log.replace(".250Z", ".25Z");
    assert!(serde_json::from_str::<LogRecord>(&bad_time).is_err());
    let dup = log.replace("\"content\"", "\"content\":\"a\",\"content\"");
    let err = serde_json::from_str::<LogRecord>(&dup).expect_err("duplicate");
    assert!(err.to_string().contains("duplicate"), "{err}");
}
