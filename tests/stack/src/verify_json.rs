//! `bxctl verify --json`'s output as the stack tests read it.

use std::process::Output;

use serde_json::Value;

/// Standard output as text.
pub fn stdout_text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `(check, level, said)` of each check of `bxctl verify --json`, every one asserted to be
/// of `part`.
pub fn verify_checks(out: &Output, part: &str) -> Vec<(String, String, String)> {
    let t = stdout_text(out);
    let v: Value = serde_json::from_str(&t).unwrap_or_else(|e| panic!("{e}: {t}"));
    v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            assert_eq!(c["part"], part, "{v}");
            (
                c["check"].as_str().expect("check").to_owned(),
                c["level"].as_str().expect("level").to_owned(),
                c["said"].as_str().expect("said").to_owned(),
            )
        })
        .collect()
}
