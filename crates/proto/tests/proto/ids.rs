//! Session ids and hashes: the bounds of an id, the hex form of a hash.

use proto::{Hash32, SessionId};

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
}
