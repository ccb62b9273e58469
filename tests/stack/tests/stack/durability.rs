//! Nothing acknowledged is lost: every decision is on disk before its answer leaves
//! (observed with strace on the real binary), and brokerd killed at random moments never
//! loses a decision a client received nor runs a witnessed call twice (a SIGKILL loop).

use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::Duration;

use daemon::conn::Conn;
use proto::attest::WitnessRef;
use proto::{AuditLine, DecisionRecord, DenyReason, Message, ToolResponse};
use stack::{Daemon, Home, read_grant, request};

/// The number after `key` in strace's escaped rendering, e.g. `\"call\":7`.
fn number_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn each_decision_is_fsynced_before_its_answer_is_written() {
    if !stack::have("strace") {
        return;
    }
    let home = Home::new("strace", "");
    let notes = home.files("notes", &[("n.md", "note")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let log = home.root.join("strace.log");
    let mut cmd = Command::new("strace");
    cmd.args([
        "-f",
        "-y",
        "-s",
        "8192",
        "-e",
        "trace=write,sendto,sendmsg,fdatasync,fsync",
        "-o",
    ])
    .arg(&log)
    .arg(stack::bin("brokerd"))
    .arg("--config")
    .arg(home.config());
    let mut d = Daemon::spawn(cmd, &home.root);
    let good = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let mut conn = Conn::connect(&home.loop_sock()).expect("connect");
    for call in 1..=6u64 {
        let args = if call.is_multiple_of(2) {
            good.as_str()
        } else {
            r#"{"path":"/etc/passwd"}"#
        };
        request(&mut conn, "s-1", call, "read_file", args);
    }
    d.kill();
    let trace = std::fs::read_to_string(&log).expect("strace log");
    // Killing strace detaches it; brokerd itself (the first pid in the trace) goes on, so
    // stop it too.
    if let Some(pid) = trace
        .split_whitespace()
        .next()
        .and_then(|p| p.parse::<i32>().ok())
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    // Per thread: the audit fd and call of the last write, whether it was synced, and every
    // call whose record was synced before anything else happened on that thread.
    let mut last_write: HashMap<String, (String, u64)> = HashMap::new();
    let mut synced: HashMap<String, HashSet<u64>> = HashMap::new();
    let mut pending_sync: HashMap<String, String> = HashMap::new();
    let mut answered = HashSet::new();
    // Per thread: the syncs, and whether the accounting's file was written, since its last
    // answer; and for each answer, what its thread did since the one before.
    let mut since: HashMap<String, (usize, bool)> = HashMap::new();
    let mut served: HashMap<u64, (usize, bool)> = HashMap::new();
    for line in trace.lines() {
        let Some((pid, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        let sync_done = |fd: &str,
                         last_write: &HashMap<String, (String, u64)>,
                         synced: &mut HashMap<String, HashSet<u64>>| {
            if let Some((wfd, c)) = last_write.get(pid)
                && wfd == fd
            {
                synced.entry(pid.to_owned()).or_default().insert(*c);
            }
        };
        // Records are write(2)s; answers on the socket are send(2)s (std uses MSG_NOSIGNAL).
        if let Some(rest) = call
            .strip_prefix("write(")
            .or_else(|| call.strip_prefix("sendto("))
            .or_else(|| call.strip_prefix("sendmsg("))
        {
            let fd: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if rest.contains("records.jsonl>") {
                since.entry(pid.to_owned()).or_default().1 = true;
            }
            if rest.contains(r#""{\"seq\":"#) {
                if let Some(c) = number_after(rest, r#"\"call\":"#) {
                    last_write.insert(pid.to_owned(), (fd, c));
                }
            } else if rest.contains(r#"tool_response"#) {
                let id = number_after(rest, r#"\"id\":"#).expect("response id");
                assert!(
                    synced.get(pid).is_some_and(|s| s.contains(&id)),
                    "the answer to call {id} was written before its audit record was synced:\n{trace}"
                );
                answered.insert(id);
                served.insert(id, since.remove(pid).unwrap_or_default());
            }
        } else if let Some(rest) = call
            .strip_prefix("fdatasync(")
            .or_else(|| call.strip_prefix("fsync("))
        {
            let fd: String = rest.chars().take_while(char::is_ascii_digit).collect();
            since.entry(pid.to_owned()).or_default().0 += 1;
            if rest.contains("unfinished") {
                pending_sync.insert(pid.to_owned(), fd);
            } else if rest.trim_end().ends_with("= 0") {
                sync_done(&fd, &last_write, &mut synced);
            }
        } else if (call.starts_with("<... fdatasync resumed>")
            || call.starts_with("<... fsync resumed>"))
            && let Some(fd) = pending_sync.remove(pid)
            && call.trim_end().ends_with("= 0")
        {
            sync_done(&fd, &last_write, &mut synced);
        }
    }
    assert_eq!(answered.len(), 6, "strace saw {answered:?}:\n{trace}");
    // A denied witnessed decision makes one fdatasync, its audit line's, and writes nothing
    // to the accounting (its tool message's record is kept in memory: decisions.md X8). An
    // allowed one syncs the record of its result too.
    for (id, (syncs, accounted)) in &served {
        if id % 2 == 1 {
            assert_eq!(
                (*syncs, *accounted),
                (1, false),
                "denied call {id}: syncs, and the accounting written:\n{trace}"
            );
        } else {
            assert!(
                *syncs >= 2 && *accounted,
                "allowed call {id}: {syncs} syncs"
            );
        }
    }
    // The witness store is synced once per report (six, one per request) and never for a
    // call's use: that is in the decision's audit line (decisions.md W9).
    let store = |l: &&str| l.contains("witness.jsonl>");
    let synced = trace
        .lines()
        .filter(store)
        .filter(|l| l.contains("fdatasync("))
        .count();
    assert_eq!(synced, 6, "{trace}");
    assert!(
        !trace
            .lines()
            .filter(store)
            .any(|l| l.contains(r#"\"used\""#)),
        "a use line in the witness store:\n{trace}"
    );
}

/// What a client of the SIGKILL loop sent: its call number, the witnessed call it named, the
/// arguments, and what it was answered (`None`: brokerd was killed first).
struct Sent {
    call: u64,
    witness: WitnessRef,
    args: String,
    answer: Option<ToolResponse>,
}

#[test]
fn brokerd_killed_at_random_moments_never_loses_an_acknowledged_decision_nor_runs_a_call_twice() {
    let rounds: u64 = std::env::var("BOXMAKER_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let home = Home::new("sigkill", "");
    let notes = home.files("notes", &[("n.md", "note")]);
    home.write_grant("notes", &read_grant("auto", &notes, ""));
    let good = format!(r#"{{"path":"{}/n.md"}}"#, notes.display());
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut sent: Vec<Sent> = Vec::new();
    let mut call = 0u64;
    for _ in 0..rounds {
        let mut d = home.start();
        let sock = home.loop_sock();
        let witness_sock = home.witness_sock();
        let first = call + 1;
        let good = good.clone();
        // Each round first sends the witnessed call the last round sent last again, whether
        // or not it was answered before the kill.
        let again = sent.last().map(|s| (s.witness.clone(), s.args.clone()));
        let (tx, rx) = std::sync::mpsc::channel();
        let client = std::thread::spawn(move || {
            let mut got = Vec::new();
            let mut call = first;
            let mut again = again;
            while let Ok(mut conn) = Conn::connect(&sock) {
                let (witness, args) = match again.take() {
                    Some(w) => w,
                    None => {
                        let args = if call.is_multiple_of(2) {
                            good.clone()
                        } else {
                            r#"{"path":"/etc/passwd"}"#.to_owned()
                        };
                        let Some(w) = stack::try_witnessed(&witness_sock, "read_file", &args)
                        else {
                            break;
                        };
                        (w, args)
                    }
                };
                let msg = Message::ToolRequest(proto::ToolRequest {
                    session: proto::SessionId::new("s-kill").expect("id"),
                    call: proto::CallId(call),
                    tool: "read_file".into(),
                    arguments: args.clone(),
                    witness: Some(witness.clone()),
                });
                let answer = match conn.call(call, msg, |_| {}) {
                    Ok(env) => match env.msg {
                        Message::ToolResponse(r @ ToolResponse::Result { .. })
                        | Message::ToolResponse(r @ ToolResponse::Denied { .. }) => Some(r),
                        other => panic!("unexpected {other:?}"),
                    },
                    Err(_) => None,
                };
                let answered = answer.is_some();
                got.push(Sent {
                    call,
                    witness,
                    args,
                    answer,
                });
                if !answered {
                    break;
                }
                let _ = tx.send(());
                call += 1;
            }
            (got, call)
        });
        // Kill at a random moment once at least one answer has been received, so every
        // round proves something whatever the machine's load.
        let _ = rx.recv_timeout(Duration::from_secs(20));
        std::thread::sleep(Duration::from_micros(next() % 30_000));
        d.kill();
        let (got, last) = client.join().expect("client");
        sent.extend(got);
        call = last + 1;
    }
    let received: Vec<&Sent> = sent.iter().filter(|s| s.answer.is_some()).collect();
    assert!(
        received.len() > usize::try_from(rounds).expect("rounds"),
        "too few answers to prove anything"
    );
    let lines = home.audit_lines();
    let decisions: HashMap<u64, bool> = lines
        .iter()
        .filter_map(|l| match l {
            AuditLine::Decision(r) => Some((
                r.call.0,
                matches!(r.decision, DecisionRecord::Allowed { .. }),
            )),
            _ => None,
        })
        .collect();
    for s in &received {
        let allowed = matches!(s.answer, Some(ToolResponse::Result { .. }));
        assert_eq!(
            decisions.get(&s.call),
            Some(&allowed),
            "call {} was answered but its decision is not in the log",
            s.call
        );
    }
    // No witnessed call was used twice: one decision line at most names each, and a call
    // sent again after one answer of it was received is already_run.
    let mut uses: HashMap<&WitnessRef, usize> = HashMap::new();
    for l in &lines {
        if let AuditLine::Decision(r) = l
            && let Some(w) = &r.witness
        {
            *uses.entry(w).or_default() += 1;
        }
    }
    assert!(uses.values().all(|&n| n == 1), "a call used twice");
    let mut answered: HashSet<&WitnessRef> = HashSet::new();
    let mut retried = 0;
    for s in &sent {
        let Some(answer) = &s.answer else { continue };
        if !answered.insert(&s.witness) {
            retried += 1;
            assert!(
                matches!(
                    answer,
                    ToolResponse::Denied {
                        reason: DenyReason::AlreadyRun,
                        ..
                    }
                ),
                "call {} ran again: {answer:?}",
                s.call
            );
        }
    }
    assert!(retried > 0, "no call was sent again after its answer");
    home.assert_audit_good();
}
