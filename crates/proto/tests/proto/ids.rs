//! Session ids and hashes: the bounds of an id, the hex form of a hash.

use proto::{Hash32, JobName, SessionId};

#[test]
fn session_id_bounds() {
    assert!(SessionId::new("a").is_ok());
    assert!(SessionId::new("a".repeat(64)).is_ok());
    assert!(SessionId::new("a".repeat(65)).is_err());
    assert!(SessionId::new("").is_err());
    for bad in ["A", "a_b", "a.b", "../x", "a/b", "é", "a b"] {
        assert!(SessionId::new(bad).is_err(), "{bad}");
    }
}

#[test]
fn hash_hex_round_trip() {
    let h = Hash32::from_bytes([0xab; 32]);
    assert_eq!(Hash32::from_hex(&h.to_hex()), Ok(h));
    assert!(Hash32::from_hex(&"AB".repeat(32)).is_err());
    assert!(Hash32::from_hex(&"ab".repeat(31)).is_err());
    assert!(Hash32::from_hex(&"é".repeat(32)).is_err());
    // The first character that is not lower-case hex is named, wherever it is.
    for (at, bad) in [(0, 'g'), (33, 'A'), (63, ' ')] {
        let mut text = "0".repeat(64);
        text.replace_range(at..=at, &bad.to_string());
        let err = Hash32::from_hex(&text).expect_err(&text).to_string();
        assert_eq!(
            err,
            format!("invalid hash: character \"{bad}\" is not lower-case hex")
        );
    }
    let mut both = "0".repeat(62);
    both.push_str("xy");
    assert!(Hash32::from_hex(&both).is_err_and(|e| e.to_string().contains("\"x\"")));
}

/// Validated strings read as `String` did: escapes decoded, and the same error for a
/// value that is not a string.
#[test]
fn validated_strings_deserialise_as_strings_did() {
    let escaped = format!("\"\\u0061{}\"", "a".repeat(63));
    let h: Hash32 = serde_json::from_str(&escaped).expect("escaped hex");
    assert_eq!(h, Hash32::from_bytes([0xaa; 32]));
    let s: SessionId = serde_json::from_str(r#""s-\u0031""#).expect("escaped id");
    assert_eq!(s.as_str(), "s-1");
    for not_a_string in ["5", "null", "[]", "{}"] {
        let want = serde_json::from_str::<String>(not_a_string)
            .expect_err(not_a_string)
            .to_string();
        let hash = serde_json::from_str::<Hash32>(not_a_string).expect_err(not_a_string);
        let id = serde_json::from_str::<SessionId>(not_a_string).expect_err(not_a_string);
        let time = serde_json::from_str::<proto::Timestamp>(not_a_string);
        assert_eq!(hash.to_string(), want);
        assert_eq!(id.to_string(), want);
        assert_eq!(time.expect_err(not_a_string).to_string(), want);
    }
}

#[test]
fn a_job_name_forms_a_unit_and_user_name_of_at_most_31_characters() {
    let longest = "a".repeat(JobName::MAX_LEN);
    let name = JobName::new(longest.clone()).expect("18 characters");
    assert_eq!(name.unit_user().len(), 31);
    assert_eq!(JobName::of_user(&name.unit_user()), Some(name));
    for bad in [
        "".to_owned(),
        format!("{longest}a"),
        "Brief".into(),
        "brief_1".into(),
        "1brief".into(),
        "brief-".into(),
        "-brief".into(),
        "br.ef".into(),
    ] {
        let err = JobName::new(bad.clone()).expect_err(&bad).to_string();
        assert!(err.starts_with("invalid job name: "), "{bad:?}: {err}");
    }
    assert_eq!(JobName::of_user("boxmaker-loopd"), None);
    assert_eq!(JobName::of_user("boxmaker-job-"), None);
    assert_eq!(JobName::of_user("owner"), None);
}
