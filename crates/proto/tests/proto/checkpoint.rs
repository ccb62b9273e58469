//! brokerd's audit checkpoint file (`proto::checkpoint`, docs/decisions.md A8): the fixture is
//! the exact bytes `encode` writes (the body, then its SHA-256), read back as written, and
//! anything `encode` never makes is refused.

use proto::checkpoint::Checkpoint;

fn fixture() -> Vec<u8> {
    std::fs::read(crate::fixture_dir().join("checkpoint.json")).expect("fixture")
}

#[test]
fn the_checkpoint_fixture_round_trips_byte_for_byte() {
    let bytes = fixture();
    let cp = Checkpoint::decode(&bytes).expect("decodes");
    assert_eq!(
        (cp.file.as_str(), cp.end, cp.line, cp.seq),
        ("2026-12-01.jsonl", 18342, 37, 1233)
    );
    assert_eq!(cp.used.len(), 2);
    assert_eq!(cp.encode(), bytes);
}

#[test]
fn what_encode_never_makes_is_refused() {
    let bytes = fixture();
    let body = &bytes[..bytes.iter().position(|&b| b == b'\n').expect("two lines")];
    let with_hash = |body: &[u8]| {
        let mut b = body.to_vec();
        b.push(b'\n');
        b.extend_from_slice(proto::Hash32::digest(body).to_hex().as_bytes());
        b.push(b'\n');
        b
    };
    let text = String::from_utf8(body.to_vec()).expect("utf-8");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("torn", bytes[..bytes.len() - 1].to_vec()),
        ("no hash line", [body, b"\n"].concat()),
        ("a hash that is not hex", [body, b"\nzz\n"].concat()),
        ("a body that does not hash to it", {
            let mut b = bytes.clone();
            b[10] ^= 1;
            b
        }),
        ("a third line", [&bytes[..], b"more\n"].concat()),
        (
            "an unknown field",
            with_hash(text.replacen("\"v\":1,", "\"v\":1,\"x\":0,", 1).as_bytes()),
        ),
        (
            "another version",
            with_hash(text.replacen("\"v\":1,", "\"v\":2,", 1).as_bytes()),
        ),
        (
            "no line",
            with_hash(text.replacen("\"end\":18342", "\"end\":0", 1).as_bytes()),
        ),
    ];
    for (what, bad) in cases {
        assert!(Checkpoint::decode(&bad).is_err(), "{what} was taken");
    }
}
