//! loopd's binary on its own: it will not start without knowing who may chat.

use std::process::Command;

#[test]
fn check_config_needs_peers_chat() {
    let dir = std::env::temp_dir().join(format!("bx-loopd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let base = "[sockets]\nloop_broker = \"/run/x/l\"\nadmin_broker = \"/run/x/a\"\n\
                [peers]\nloopd = { uid = 1 }\nadmin = { uid = 2 }\n";
    std::fs::write(dir.join("no-chat.toml"), base).expect("config");
    std::fs::write(
        dir.join("chat.toml"),
        format!("{base}chat = {{ uid = 3 }}\n"),
    )
    .expect("config");
    let run = |name: &str| {
        Command::new(env!("CARGO_BIN_EXE_loopd"))
            .arg("--config")
            .arg(dir.join(name))
            .arg("--check-config")
            .output()
            .expect("loopd")
    };
    let refused = run("no-chat.toml");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("peers.chat"));
    assert!(run("chat.toml").status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
