//! brokerd's audit checkpoint with the real binaries (docs/decisions.md A8): a start verifies
//! only the lines after it, so a change before it is found by the full verifications
//! (`bxctl audit verify`, and brokerd's own on `bxctl audit verify --brokerd`, the daily
//! timer's), which say so in the journal and on Mattermost; a checkpoint that disagrees with
//! the log refuses the start with the owner's way out; the full verification moves the
//! checkpoint, so the next start reads only what came after it.

use std::path::PathBuf;
use std::process::{Command, Output};

use proto::ToolResponse;
use proto::checkpoint::{self, Checkpoint};
use stack::{BOT, Daemon, Home, OWNER, posts, read_grant, response, tool};

/// A home whose `auto` grant lets calls read one note.
fn home(name: &str) -> (Home, String) {
    let home = Home::new(name, "");
    let notes = home.files("notes", &[("n.md", "note")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let path = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    (home, path)
}

fn read_ok(home: &Home, call: u64, path: &str) {
    let got = tool(&home.loop_sock(), "s-1", call, "read_file", path);
    assert!(
        matches!(response(&got), ToolResponse::Result { .. }),
        "call {call}"
    );
}

/// The newest audit day file.
fn newest(home: &Home) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(home.audit_dir())
        .expect("audit dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files.pop().expect("a day file")
}

fn checkpoint_of(home: &Home) -> Checkpoint {
    let bytes = std::fs::read(home.audit_dir().join(checkpoint::FILE)).expect("checkpoint");
    Checkpoint::decode(&bytes).expect("a checkpoint")
}

/// Changes one byte of the second audit line (a grant id's last letter), which the chain
/// then breaks on at the third.
fn change_line_two(home: &Home) {
    let path = newest(home);
    let mut bytes = std::fs::read(&path).expect("read");
    let second = bytes.iter().position(|&b| b == b'\n').expect("a line") + 1;
    let third = second
        + bytes[second..]
            .iter()
            .position(|&b| b == b'\n')
            .expect("two");
    let at = bytes[second..third]
        .windows(5)
        .position(|w| w == b"notes")
        .map(|i| second + i + 4)
        .or_else(|| {
            bytes[second..third]
                .iter()
                .position(|&b| b == b'1')
                .map(|i| second + i)
        })
        .expect("a byte to change");
    bytes[at] = if bytes[at] == b'X' { b'Y' } else { b'X' };
    std::fs::write(&path, bytes).expect("write");
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// brokerd's start, expected to fail: its exit status and what it said.
fn start_refused(home: &Home) -> (Option<i32>, String) {
    let out = Command::new(stack::bin("brokerd"))
        .arg("--config")
        .arg(home.config())
        .output()
        .expect("brokerd");
    (out.status.code(), text(&out))
}

/// Three calls, a restart (whose start writes the checkpoint after them), two more calls.
fn checkpointed(home: &Home, path: &str) -> Daemon {
    let mut d = home.start();
    for call in 1..=3 {
        read_ok(home, call, path);
    }
    d.kill();
    let d = home.start();
    assert!(
        d.log().contains("checkpoint written at seq 3"),
        "{}",
        d.log()
    );
    for call in 4..=5 {
        read_ok(home, call, path);
    }
    d
}

#[test]
fn a_change_before_the_checkpoint_is_found_by_the_full_verifications_not_by_the_start() {
    let (home, path) = home("cp-change");
    let mut d = checkpointed(&home, &path);
    d.kill();
    change_line_two(&home);
    // The start reads past the checkpoint only: it serves.
    let d = home.start();
    assert!(
        d.log().contains("verified past its checkpoint (seq 3"),
        "{}",
        d.log()
    );
    read_ok(&home, 6, &path);
    // That start wrote its own checkpoint after what it read (seq 6).
    let start_cp = checkpoint_of(&home);
    assert_eq!(start_cp.seq, 6);
    // The owner's verification reads the whole log.
    let out = home.bxctl(&["audit", "verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("audit chain BROKEN at"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("line 3"), "{}", text(&out));
    // So does brokerd's, on the timer's request: in its journal, and the timer's unit fails.
    let out = home.bxctl(&["audit", "verify", "--brokerd"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("audit chain BROKEN (verified by brokerd)"),
        "{}",
        text(&out)
    );
    assert!(
        d.log()
            .contains("error: audit log: the verification of the whole chain FAILED"),
        "{}",
        d.log()
    );
    // brokerd serves on; a failed verification writes no checkpoint.
    assert_eq!(checkpoint_of(&home), start_cp);
    read_ok(&home, 7, &path);
}

#[test]
fn the_full_verification_moves_the_checkpoint_and_the_next_start_reads_only_after_it() {
    let (home, path) = home("cp-move");
    let mut d = checkpointed(&home, &path);
    let out = home.bxctl(&["audit", "verify", "--brokerd", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(got["verified"]["outcome"], "good", "{got}");
    // Seq 0 to 3 before the restart, 4 its snapshot line, 5 and 6 the two calls.
    assert_eq!(got["verified"]["checkpoint"], 6, "{got}");
    assert_eq!(checkpoint_of(&home).seq, 6);
    let good = home.assert_audit_good();
    assert!(good.contains("checkpoint at seq 6"), "{good}");
    d.kill();
    let size = std::fs::metadata(newest(&home)).expect("day file").len();
    let d = home.start();
    assert!(
        d.log().contains("verified past its checkpoint (seq 6")
            && d.log().contains(": 0 bytes read"),
        "{}",
        d.log()
    );
    assert_eq!(checkpoint_of(&home).end, size);
}

#[test]
fn a_checkpoint_that_disagrees_with_the_log_refuses_the_start_until_the_owner_removes_it() {
    let (home, path) = home("cp-refuse");
    let mut d = checkpointed(&home, &path);
    d.kill();
    let file = home.audit_dir().join(checkpoint::FILE);
    let mut cp = checkpoint_of(&home);
    cp.seq += 1;
    std::fs::write(&file, cp.encode()).expect("write");
    let out = home.bxctl(&["audit", "verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("DISAGREES with the log"),
        "{}",
        text(&out)
    );
    let (code, said) = start_refused(&home);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("does not match the audit log")
            && said.contains(&format!("remove {}", file.display())),
        "{said}"
    );
    // Torn, it refuses the same way.
    let bytes = std::fs::read(&file).expect("read");
    std::fs::write(&file, &bytes[..bytes.len() / 2]).expect("tear");
    let (code, said) = start_refused(&home);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("cannot be read as brokerd writes it"),
        "{said}"
    );
    // As the message says: removed, the whole log is verified at the next start.
    std::fs::remove_file(&file).expect("remove");
    let d = home.start();
    assert!(
        d.log().contains("verified from its first line"),
        "{}",
        d.log()
    );
    read_ok(&home, 6, &path);
    assert_eq!(checkpoint_of(&home).seq, 6);
}

#[test]
fn a_failed_full_verification_is_posted_on_mattermost() {
    let (home, path) = home("cp-alert");
    let gw = home.start_gateway(&[OWNER.id], "");
    let mut d = checkpointed(&home, &path);
    d.kill();
    change_line_two(&home);
    let _d = home.start();
    let out = home.bxctl(&["audit", "verify", "--brokerd"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let state = gw.wait("the audit alert posted", |s| {
        posts(s).iter().any(|p| {
            p["user_id"] == BOT
                && p["root_id"] == ""
                && p["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("the audit log does not verify"))
        })
    });
    let alert = posts(&state)
        .into_iter()
        .find(|p| {
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains("does not verify"))
        })
        .expect("the alert");
    let message = alert["message"].as_str().expect("text");
    assert!(message.contains("line 3"), "{message}");
}
