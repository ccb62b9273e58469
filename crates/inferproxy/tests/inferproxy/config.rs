//! `--check-config`: what the NixOS build runs on the generated file.

use std::process::Command;

use crate::support::{TempDir, config};

fn check(upstream: &str, infer: &str) -> (bool, String) {
    let dir = TempDir::new("check");
    let path = config(&dir, dir.uid(), upstream, infer);
    let out = Command::new(env!("CARGO_BIN_EXE_inferproxy"))
        .arg("--config")
        .arg(&path)
        .arg("--check-config")
        .output()
        .expect("run inferproxy");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn a_good_config_is_reported_good() {
    let (ok, text) = check("http://127.0.0.1:8080", "first_byte_timeout = \"10m\"");
    assert!(ok, "{text}");
    assert!(text.contains("good; infer.sock on"), "{text}");
    assert!(text.contains("upstream http://127.0.0.1:8080"), "{text}");
}

#[test]
fn a_non_loopback_upstream_or_a_typo_is_refused() {
    for (upstream, infer, word) in [
        ("http://192.0.2.1:8080", "", "loopback"),
        ("https://127.0.0.1:8080", "", "http://"),
        (
            "http://127.0.0.1:8080",
            "max_conections = 3",
            "unknown field",
        ),
        (
            "http://127.0.0.1:8080",
            "connect_timeout = \"0s\"",
            "more than 0",
        ),
    ] {
        let (ok, text) = check(upstream, infer);
        assert!(!ok, "{upstream} {infer}: {text}");
        assert!(text.contains(word), "{upstream} {infer}: {text}");
        assert!(
            text.starts_with("error: inferproxy: configuration: "),
            "{text}"
        );
    }
}
