//! `bxctl verify --hostile` interrupted: its scratch directory (the shadow's state, its
//! canaries and stand-in keys) is removed before it exits, and the directory was readable by
//! its user alone while it ran.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use stack::{Home, bin};

/// The self-test's scratch directories under `tmp`.
fn scratch(tmp: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("boxmaker-hostile-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn verify_hostile_interrupted_removes_its_scratch_directory() {
    let home = Home::new("hostile-interrupt", "");
    let notes = home.files("notes", &[("real.md", "the owner's real data\n")]);
    home.write_grant(
        "notes-read",
        &format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"private\"\nuntrusted = false\n[constraints]\npaths = [\"{}\"]\n",
            notes.display()
        ),
    );
    home.write_grant(
        "web",
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         result_class = \"public\"\n[constraints]\nhosts = [\"api.example.org\"]\n",
    );
    let tmp = home.root.join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let child = Command::new(bin("bxctl"))
        .arg("--config")
        .arg(home.config())
        .args(["verify", "--hostile", "--json"])
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bxctl");
    // Wait for the shadow's stack to start (its configuration is written as it starts).
    let deadline = Instant::now() + Duration::from_secs(60);
    let dir = loop {
        let found = scratch(&tmp);
        if let Some(d) = found
            .iter()
            .find(|d| d.join("state/config.toml").exists())
            .cloned()
        {
            break d;
        }
        assert!(
            Instant::now() < deadline,
            "no scratch directory with a configuration under {}: {found:?}",
            tmp.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mode = std::fs::metadata(&dir)
        .expect("scratch")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "{}", dir.display());
    kill(
        Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        Signal::SIGINT,
    )
    .expect("SIGINT");
    let out = child.wait_with_output().expect("bxctl");
    let err = String::from_utf8_lossy(&out.stderr);
    // What it printed, should it have ended on its own (its report goes to stdout).
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(128 + 2), "{err}\n{said}");
    assert!(
        err.contains("verify: hostile: interrupted; removed"),
        "{err}"
    );
    assert!(!dir.exists(), "{} left behind: {err}", dir.display());
    assert!(scratch(&tmp).is_empty(), "{:?}", scratch(&tmp));
}
