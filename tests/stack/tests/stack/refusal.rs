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

use crate::jobs::{add_jobs_peer, job_entry};

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

/// A socket some role listens on, as the configuration places it and says who it admits.
pub struct Listening {
    /// The `[sockets]` key of its directory.
    pub key: &'static str,
    pub file: &'static str,
    pub role: &'static str,
    /// The name its refusals give it; `None` for infer.sock, which refuses in HTTP.
    pub name: Option<&'static str>,
    /// Who it admits: `[peers]` keys, and `job users` for each job's own user.
    pub admits: &'static [&'static str],
}

const fn at(
    key: &'static str,
    file: &'static str,
    role: &'static str,
    name: Option<&'static str>,
    admits: &'static [&'static str],
) -> Listening {
    Listening {
        key,
        file,
        role,
        name,
        admits,
    }
}

/// Every socket every role listens on (each `Policy` of brokerd, loopd, gatewayd and
/// inferproxy's admission), as docs/architecture.md's table lists them.
pub const SOCKETS: [Listening; 10] = [
    at(
        "loop_broker",
        "broker.sock",
        "brokerd",
        Some("loop"),
        &["peers.loopd"],
    ),
    at(
        "admin_broker",
        "broker.sock",
        "brokerd",
        Some("admin"),
        &["peers.admin"],
    ),
    at(
        "chat_broker",
        "broker.sock",
        "brokerd",
        Some("chat"),
        &["peers.chat", "peers.gateway"],
    ),
    at(
        "infer_broker",
        "witness.sock",
        "brokerd",
        Some("witness"),
        &["peers.infer"],
    ),
    at(
        "jobs_broker",
        "jobs.sock",
        "brokerd",
        Some("jobs"),
        &["job users", "peers.jobs"],
    ),
    at(
        "chat_loop",
        "loop.sock",
        "loopd",
        Some("chat"),
        &["peers.chat", "peers.gateway"],
    ),
    at(
        "jobs_loop",
        "loop.sock",
        "loopd",
        Some("jobs"),
        &["job users", "peers.jobs"],
    ),
    at(
        "broker_gateway",
        "gateway.sock",
        "gatewayd",
        Some("gateway"),
        &["peers.broker"],
    ),
    at(
        "jobs_gateway",
        "gateway.sock",
        "gatewayd",
        Some("jobs"),
        &["job users", "peers.jobs"],
    ),
    at(
        "loop_infer",
        "infer.sock",
        "inferproxy",
        None,
        &["peers.loopd"],
    ),
];

/// The socket directory of `key` in a [`Home`]'s config (`chat_loop` is `run/chat-loop`).
fn socket_path(home: &Home, s: &Listening) -> std::path::PathBuf {
    home.root
        .join("run")
        .join(s.key.replace('_', "-"))
        .join(s.file)
}

/// Runs the probe as `uid` on `sock` (`--http` for infer.sock): what it printed.
fn probe_as(probe: &Path, sock: &Path, http: bool, uid: u32) -> Value {
    let mut cmd = Command::new(probe);
    if http {
        cmd.arg("--http");
    }
    cmd.arg(sock).uid(uid).gid(uid);
    let out = run_copied(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: {text}{}",
            sock.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn every_role_socket_refuses_a_uid_it_does_not_admit() {
    if !stack::root() {
        return;
    }
    const NOBODY: u32 = 65534;
    let me = nix::unistd::getuid().as_raw();
    let home = Home::new("peercred", "");
    // A job, so that the jobs sockets are there (brokerd's, loopd's and gatewayd's).
    add_jobs_peer(&home);
    home.append_config(&job_entry("morning-brief", "Summarise today."));
    let _gateway = home.start_gateway(&[OWNER.id], "");
    let _agent = home.start_agent("[default]\ntext = \"hi\"\n", "");
    // The probe, from a place that uid may read and run.
    let bin = home.root.join("probe-bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let probe = bin.join("peer-probe");
    std::fs::copy(env!("CARGO_BIN_EXE_peer-probe"), &probe).expect("copy the probe");
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    open_up(&bin, &home.root);
    // In this home every `[peers]` entry is this test's uid.
    let admitted = |s: &Listening| {
        let names: Vec<String> = s
            .admits
            .iter()
            .map(|a| match *a {
                "job users" => "user boxmaker-job-morning-brief".to_owned(),
                _ => format!("uid {me}"),
            })
            .collect();
        names.join(" or ")
    };
    for s in &SOCKETS {
        let sock = socket_path(&home, s);
        let what = format!("{} {} ({})", s.role, s.file, s.key);
        // Only the peer check is left to stop that uid: the directories and the socket
        // itself let it in.
        open_up(sock.parent().expect("dir"), &home.root);
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let seen = probe_as(&probe, &sock, s.name.is_none(), NOBODY);
        match s.name {
            Some(name) => {
                assert_eq!(seen["refused"]["code"], "refused", "{what}: {seen}");
                let detail = seen["refused"]["detail"].as_str().unwrap_or_default();
                assert!(
                    detail.starts_with(&format!(
                        "the {name} socket admits only {}; you are uid {NOBODY}",
                        admitted(s)
                    )),
                    "{what}: {detail}"
                );
            }
            None => {
                assert_eq!(seen["http"]["status"], 403, "{what}: {seen}");
                assert_eq!(seen["http"]["body"]["error"]["type"], "forbidden", "{what}");
                assert_eq!(
                    seen["http"]["body"]["error"]["message"], "this socket does not admit you",
                    "{what}"
                );
            }
        }
        // And the uid it admits gets past the check (it is this test's own).
        let admitted_seen = probe_as(&probe, &sock, s.name.is_none(), me);
        assert!(
            admitted_seen.get("refused").is_none()
                && admitted_seen["http"]["status"] != 403
                && admitted_seen.get("failed").is_none(),
            "{what}: the admitted uid: {admitted_seen}"
        );
    }
}

/// docs/architecture.md's table of listening sockets has a row for each socket the test
/// above proves, naming its directory's key, its file, its role and who it admits.
#[test]
fn the_socket_table_in_the_docs_lists_every_listening_socket() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md"),
    );
    let Ok(doc) = doc else {
        // The Nix package's sources hold no docs/ (docs.rs says the same).
        assert!(
            std::env::var_os("BOXMAKER_GATE").is_none(),
            "docs/ is missing"
        );
        return;
    };
    let rows: Vec<&str> = doc
        .lines()
        .skip_while(|l| !l.starts_with("| socket | listens |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(rows.len(), SOCKETS.len(), "{rows:#?}");
    for s in &SOCKETS {
        let key = format!("`sockets.{}`", s.key);
        let row = rows
            .iter()
            .find(|r| r.contains(&key))
            .unwrap_or_else(|| panic!("no row for {key}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert!(cells[1].contains(&format!("`{}`", s.file)), "{row}");
        assert_eq!(cells[2], s.role, "{row}");
        for a in s.admits {
            assert!(cells[4].contains(a), "{row}: {a}");
        }
        let name = s.name.map_or("HTTP 403".to_owned(), |n| format!("`{n}`"));
        assert!(cells[5].contains(&name), "{row}: {name}");
    }
}
