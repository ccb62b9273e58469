//! proto's tests, one module per concern: the wire specification (fixtures round-trip byte
//! for byte, malformed input is refused with its typed error, the frame decoder holds its
//! limits on any input) and the validating constructors of the types it is made of.

mod approval;
mod attest;
mod chain;
mod checkpoint;
mod deny;
mod fixtures;
mod frames;
mod grants;
mod hands;
mod ids;
mod malformed;
mod time;
mod tools;

use std::path::PathBuf;

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every fixture file whose name starts with `prefix`, sorted, with its bytes.
pub fn fixtures(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(fixture_dir())
        .expect("fixture dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .map(|p| {
            let name = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_owned();
            let bytes = std::fs::read(&p).expect("fixture bytes");
            (name, bytes)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no fixtures named {prefix}*");
    out
}
