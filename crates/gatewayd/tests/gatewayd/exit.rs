//! Why gatewayd does not start (`Error`, each with what it was about) and the status the
//! binary exits with for it (docs/gateway.md, src/main.rs).

use std::path::{Path, PathBuf};
use std::process::Command;

use daemon::CommonArgs;
use gatewayd::state::StateError;
use gatewayd::{Args, Error};

const BASE: &str = r#"
[sockets]
loop_broker = "/run/boxmaker-test/loop-broker"
admin_broker = "/run/boxmaker-test/admin-broker"
[peers]
loopd = { user = "boxmaker-loopd" }
admin = { group = "boxmaker-admin" }
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gw-exit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// A config in `dir` with BASE, `peers.broker` when `broker`, and a `[gateway]` table with
/// `extra` lines when `gateway`.
fn config(dir: &Path, broker: bool, gateway: Option<&str>) -> PathBuf {
    let mut text = BASE.to_owned();
    if broker {
        text.push_str("broker = { user = \"boxmaker-brokerd\" }\n");
    }
    if let Some(extra) = gateway {
        text.push_str(&format!(
            "[gateway]\nserver = \"http://127.0.0.1:9\"\nowners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n\
             state = \"{}\"\n{extra}",
            dir.join("state").display()
        ));
    }
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("config");
    path
}

fn run(config: &Path) -> Result<(), Error> {
    gatewayd::run(Args {
        common: CommonArgs {
            config: config.to_owned(),
            check_config: false,
        },
    })
}

/// The binary's status, stdout and stderr, with `--check-config` when `check`.
fn binary(config: &Path, check: bool) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gatewayd"));
    cmd.arg("--config").arg(config);
    if check {
        cmd.arg("--check-config");
    }
    let out = cmd
        .env_remove("LISTEN_FDS")
        .env_remove("NOTIFY_SOCKET")
        .env_remove("CREDENTIALS_DIRECTORY")
        .output()
        .expect("gatewayd runs");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8");
    (out.status.code(), text(out.stdout), text(out.stderr))
}

#[test]
fn each_reason_not_to_start_is_its_own_variant_with_what_it_was_about() {
    let dir = scratch("variants");
    let path = config(&dir, true, None);
    assert!(matches!(run(&path), Err(Error::NoGateway { config }) if config == path));
    let path = config(&dir, false, Some(""));
    assert!(matches!(run(&path), Err(Error::NoBrokerPeer { config }) if config == path));
    assert!(matches!(
        run(&dir.join("absent.toml")),
        Err(Error::Config(config::ConfigError::Read { .. }))
    ));
    let token = dir.join("token");
    let path = config(
        &dir,
        true,
        Some(&format!("token_file = \"{}\"\n", token.display())),
    );
    match run(&path) {
        Err(Error::Token {
            path,
            error: source,
        }) => {
            assert_eq!(path, token);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("not a token error: {other:?}"),
    }
    std::fs::write(&token, " \n").expect("token");
    assert!(matches!(run(&path), Err(Error::EmptyToken { path }) if path == token));
    std::fs::write(&token, "secret\n").expect("token");
    std::fs::create_dir_all(dir.join("state")).expect("state dir");
    std::fs::write(dir.join("state/state.json"), "{\"threads\":{").expect("state");
    match run(&path) {
        Err(Error::State(StateError::Parse { path, .. })) => {
            assert_eq!(path, dir.join("state/state.json"));
        }
        other => panic!("not a state error: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_binary_exits_with_the_documented_status_and_says_why_once() {
    let dir = scratch("binary");
    let (status, _, stderr) = binary(&config(&dir, true, None), false);
    assert_eq!(status, Some(1), "{stderr}");
    let want = format!(
        "error: gatewayd: {}: no [gateway] table: name the Mattermost server, owners and channel\n",
        dir.join("config.toml").display()
    );
    assert_eq!(stderr, want);

    let token = dir.join("token");
    let path = config(
        &dir,
        true,
        Some(&format!("token_file = \"{}\"\n", token.display())),
    );
    let (status, _, stderr) = binary(&path, false);
    assert_eq!(status, Some(1), "{stderr}");
    let want = format!("error: gatewayd: the bot token {}: ", token.display());
    assert!(stderr.starts_with(&want), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // --check-config refuses a token_file that is not there...
    let (status, stdout, stderr) = binary(&path, true);
    assert_eq!(status, Some(1), "{stderr}");
    assert_eq!(stdout, "");
    let want = format!(
        "error: gatewayd: gateway.token_file {}: No such file or directory (os error 2): put the \
         bot's token there, or remove token_file to read the systemd credential \
         gateway.token_credential\n",
        token.display()
    );
    assert_eq!(stderr, want);
    // ...but never reads it: an empty one passes the check (it fails at start).
    std::fs::write(&token, "").expect("token");
    let (status, stdout, stderr) = binary(&path, true);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(stdout, format!("{}: good\n", path.display()));
    let (status, _, stderr) = binary(&path, false);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stderr.contains("is empty"), "{stderr}");
    // An owner that is a user name, not an id, is refused by the check.
    let named = config(&dir, true, Some(""));
    let text = std::fs::read_to_string(&named).expect("config");
    std::fs::write(&named, text.replace("ownerkp1dx4oy7wqbsm3e9t6ua", "alice")).expect("config");
    let (status, _, stderr) = binary(&named, true);
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains("gateway.owners: \"alice\" is not a Mattermost user id"),
        "{stderr}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_gatewayd"))
        .arg("--no-such-flag")
        .output()
        .expect("gatewayd runs");
    assert_eq!(out.status.code(), Some(2), "a bad command line is clap's 2");
    let _ = std::fs::remove_dir_all(dir);
}
