//! The `slots` check: inferproxy refuses `/slots*` (the server's slots hold every session's
//! prompt cache, and `/slots` shows and erases them). Asked of the running inferproxy, as
//! the peer it admits (`peers.loopd`):
//!
//! - when bxctl is that peer (`bxctl dev`, where every role runs as the developer), on
//!   infer.sock directly;
//! - as root under systemd, by a transient unit that runs `bxctl verify --probe-infer` as
//!   loopd's user (its DynamicUser, shared for the unit's life, as systemd shares a dynamic
//!   user between the units that name it) in the pair directory's group;
//! - otherwise it is not asked, and the line says so (`warn`).
//!
//! A refusal counts only when it is inferproxy's own (its 403 names what it forwards): a
//! 403 of llama-server's would mean the request went through.

use std::io;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use config::{Config, Peer};
use serde::{Deserialize, Serialize};

use super::report::{Check, Part};

const P: Part = Part::Model;

/// The requests asked: the listing, a slot's own path, and a slot action.
pub const PROBES: [(&str, &str); 3] = [
    ("GET", "/slots"),
    ("GET", "/slots/0"),
    ("POST", "/slots/0?action=save"),
];

/// What inferproxy's allowlist refusal says (inferproxy's `abort::FORBIDDEN`).
const OURS: &str = "inferproxy forwards only";
/// What inferproxy says to a peer it does not admit.
const NOT_ADMITTED: &str = "this socket does not admit you";

/// One probe's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub request: String,
    pub status: u16,
    /// The refusal is inferproxy's allowlist's.
    pub refused: bool,
}

#[derive(Debug)]
pub enum Asked {
    Answers(Vec<Answer>),
    /// inferproxy does not admit this user.
    NotAdmitted,
    /// infer.sock could not be reached.
    Unreachable(io::Error),
}

/// Asks inferproxy at `sock` each of [`PROBES`].
pub fn ask(sock: &Path) -> Asked {
    let mut answers = Vec::new();
    for (method, target) in PROBES {
        let stream = match UnixStream::connect(sock) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return Asked::NotAdmitted,
            Err(e) => return Asked::Unreachable(e),
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let body: &[u8] = if method == "POST" { b"{}" } else { b"" };
        let headers = [("Content-Type", "application/json")];
        let resp = match strict_http::request(stream, method, target, &headers, body) {
            Ok(r) => r,
            Err(e) => return Asked::Unreachable(io::Error::other(e.to_string())),
        };
        let status = resp.status;
        let text =
            String::from_utf8_lossy(&resp.read_body(64 * 1024).unwrap_or_default()).into_owned();
        if status == 403 && text.contains(NOT_ADMITTED) {
            return Asked::NotAdmitted;
        }
        answers.push(Answer {
            request: format!("{method} {target}"),
            status,
            refused: status == 403 && text.contains(OURS),
        });
    }
    Asked::Answers(answers)
}

/// `bxctl verify --probe-infer SOCK`: the answers as one line of JSON, for the transient
/// unit root starts as loopd's user.
pub fn probe_main(sock: &Path, out: &mut dyn io::Write) -> io::Result<()> {
    let line = match ask(sock) {
        Asked::Answers(a) => serde_json::to_string(&a).unwrap_or_default(),
        Asked::NotAdmitted => "\"not admitted\"".to_owned(),
        Asked::Unreachable(e) => serde_json::to_string(&e.to_string()).unwrap_or_default(),
    };
    writeln!(out, "{line}")
}

pub fn check(config: &Config) -> Check {
    let sock = config.sockets.loop_infer_sock();
    match ask(&sock) {
        Asked::Answers(a) => judge(&a, "asked directly"),
        Asked::Unreachable(e) => Check::fail(
            P,
            "slots",
            format!("cannot reach inferproxy at {}: {e}", sock.display()),
        )
        .help("under systemd see `systemctl status boxmaker-inferproxy.socket`"),
        Asked::NotAdmitted => as_loopd(config, &sock),
    }
}

fn not_asked(config: &Config) -> Check {
    Check::warn(
        P,
        "slots",
        format!(
            "not checked: inferproxy admits only {}, and bxctl runs as neither it nor root",
            config.peers.loopd
        ),
    )
    .help("`sudo bxctl verify` asks it as loopd's user, through a transient unit")
}

/// Root under systemd: the probe as loopd's user in a transient unit.
fn as_loopd(config: &Config, sock: &Path) -> Check {
    let Peer::User(user) = &config.peers.loopd else {
        return not_asked(config);
    };
    let root = nix::unistd::Uid::effective().is_root();
    if !root || !Path::new("/run/systemd/system").is_dir() {
        return not_asked(config);
    }
    let Some(group) = sock
        .parent()
        .and_then(|d| std::fs::metadata(d).ok())
        .map(|m| std::os::unix::fs::MetadataExt::gid(&m))
        .and_then(|gid| nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid)).ok())
        .flatten()
    else {
        return not_asked(config);
    };
    let Ok(bxctl) = std::env::current_exe() else {
        return not_asked(config);
    };
    let out = Command::new("systemd-run")
        .args([
            "--quiet",
            "--wait",
            "--pipe",
            "--collect",
            "--service-type=exec",
            &format!("--unit=boxmaker-verify-probe-{}", std::process::id()),
            "-p",
            "DynamicUser=yes",
            "-p",
            &format!("User={user}"),
            "-p",
            &format!("Group={}", group.name),
            "-p",
            "ProtectSystem=strict",
            "-p",
            "ProtectHome=yes",
            "-p",
            "PrivateNetwork=yes",
            "-p",
            "NoNewPrivileges=yes",
            "-p",
            "CapabilityBoundingSet=",
            "--",
        ])
        .arg(&bxctl)
        .arg("verify")
        .arg("--probe-infer")
        .arg(sock)
        .stdin(Stdio::null())
        .output();
    let text = match &out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => {
            return Check::fail(
                P,
                "slots",
                format!(
                    "the probe as {user} did not run: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            );
        }
        Err(e) => return Check::fail(P, "slots", format!("systemd-run: {e}")),
    };
    match serde_json::from_str::<Vec<Answer>>(text.trim()) {
        Ok(a) => judge(&a, &format!("asked as {user}")),
        Err(_) => Check::fail(
            P,
            "slots",
            format!("the probe as {user} said {}", text.trim()),
        ),
    }
}

/// ok when inferproxy refused every probe itself.
pub fn judge(answers: &[Answer], how: &str) -> Check {
    let through: Vec<String> = answers
        .iter()
        .filter(|a| !a.refused)
        .map(|a| format!("{} -> {}", a.request, a.status))
        .collect();
    if through.is_empty() && !answers.is_empty() {
        return Check::ok(
            P,
            "slots",
            format!(
                "inferproxy refuses {} ({how}: 403, its own refusal)",
                answers
                    .iter()
                    .map(|a| a.request.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    Check::fail(
        P,
        "slots",
        format!(
            "inferproxy did not refuse {} ({how}): the server's slots hold every session's \
             prompt cache",
            through.join(", ")
        ),
    )
    .help(
        "the running inferproxy is not the package's, or not the config's: check its unit \
         (the `units` part) and `infer.upstream`",
    )
}
