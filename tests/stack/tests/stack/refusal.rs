//! A refused connection reaches the owner as a refusal, in the server's words and with a
//! `help:` line; and every role's socket refuses a uid it does not admit, by the SO_PEERCRED
//! check alone (the test opens everything else to that uid).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use daemon::conn::Conn;
use proto::Message;
use proto::approval::Empty;
use serde_json::Value;
use stack::{Home, OWNER};

/// bxctl's stderr for `args`, asserting it failed as "could not do what was asked" (2).
fn bxctl_fails(home: &Home, args: &[&str]) -> String {
    let out = home.bxctl(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

#[test]
fn bxctl_shows_who_the_admin_socket_admits_and_how_to_get_in() {
    let home = Home::new("refused-peer", "");
    let me = nix::unistd::getuid().as_raw();
    let other = me.wrapping_add(1);
    let config = std::fs::read_to_string(home.config()).expect("config");
    let config = config.replace(
        &format!("admin = {{ uid = {me} }}"),
        &format!("admin = {{ uid = {other} }}"),
    );
    std::fs::write(home.config(), config).expect("config");
    let _brokerd = home.start();
    let stderr = bxctl_fails(&home, &["approvals"]);
    let mut lines = stderr.lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "bxctl: brokerd refused the connection (refused): the admin socket admits only \
             uid {other}; you are uid {me}"
        )),
        "{stderr}"
    );
    assert_eq!(
        lines.next(),
        Some(
            "help: run bxctl as the user, or as a member of the group, that `peers.admin` in \
             the configuration names (after joining a group, log in again)"
        ),
        "{stderr}"
    );
}

#[test]
fn bxctl_says_a_full_socket_is_busy_and_to_try_again() {
    let home = Home::new("refused-full", "max_connections = 1");
    let _brokerd = home.start();
    // The one connection the admin side takes, served once so that it holds its place.
    let mut held = Conn::connect(&home.admin_sock()).expect("connect");
    held.call(1, Message::GrantsQuery(Empty {}), |_| {})
        .expect("served");
    let stderr = bxctl_fails(&home, &["grants", "show"]);
    assert_eq!(
        stderr,
        "bxctl: brokerd refused the connection (unavailable): the admin socket is at its limit \
         of 1 connections: try again shortly\nhelp: try again in a moment\n"
    );
    drop(held);
}

/// Runs a program this test has just copied. Another test's thread may fork while the copy
/// is still open for writing, and its child holds that descriptor until it execs: the
/// program is then busy (ETXTBSY) for a moment, so that error is waited out.
fn run_copied(cmd: &mut Command) -> std::process::Output {
    let mut tries = 0;
    loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other.expect("the probe"),
        }
    }
}

/// `dir` and every directory above it up to `/tmp`'s child opened for others to enter.
fn open_up(dir: &Path, root: &Path) {
    let mut d = Some(dir);
    while let Some(p) = d {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        if p == root {
            break;
        }
        d = p.parent();
    }
}

#[test]
fn every_role_socket_refuses_a_uid_it_does_not_admit() {
    if !stack::root() {
        return;
    }
    const NOBODY: u32 = 65534;
    let home = Home::new("peercred", "");
    let _gateway = home.start_gateway(&[OWNER.id], "");
    let _agent = home.start_agent("[default]\ntext = \"hi\"\n", "");
    // The probe, from a place that uid may read and run.
    let bin = home.root.join("probe-bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let probe = bin.join("peer-probe");
    std::fs::copy(env!("CARGO_BIN_EXE_peer-probe"), &probe).expect("copy the probe");
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    open_up(&bin, &home.root);
    let sockets = [
        ("loop", home.loop_sock()),
        ("admin", home.admin_sock()),
        ("chat", home.chat_sock()),
        ("gateway", home.root.join("run/broker-gateway/gateway.sock")),
    ];
    for (name, sock) in &sockets {
        // Only the peer check is left to stop that uid: the directories and the socket
        // itself let it in.
        open_up(sock.parent().expect("dir"), &home.root);
        std::fs::set_permissions(sock, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let out = run_copied(Command::new(&probe).arg(sock).uid(NOBODY).gid(NOBODY));
        let text = String::from_utf8_lossy(&out.stdout);
        let seen: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
            panic!(
                "{name}: {e}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(seen["refused"]["code"], "refused", "{name}: {seen}");
        let detail = seen["refused"]["detail"].as_str().unwrap_or_default();
        let me = nix::unistd::getuid().as_raw();
        assert!(
            detail.starts_with(&format!("the {name} socket admits only uid {me}"))
                && detail.contains(&format!("; you are uid {NOBODY}")),
            "{name}: {detail}"
        );
    }
}
