//! The roles' memory after a soak (issue 23's measure: each role's resident set at most
//! 8 MiB; docs/performance.md). The real binaries (release build), direct runner, the fake
//! llama-server and fake-mattermost: 20 sessions of 10 turns, each turn one `read_file` call
//! under an `auto` grant and the model's answer from its result: 16 sessions on loopd's chat
//! socket as `bxctl chat` talks, 4 as Mattermost threads through gatewayd. 200 calls in all,
//! checked in the audit log. Each role's `VmRSS` and `VmHWM` (`/proc/PID/status`) after its
//! start and after the soak are printed, with the 8 MiB limit.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p stack --bench soak`.
//! Environment: `BENCH_SESSIONS` (default 20, a fifth of them in Mattermost),
//! `BENCH_TURNS` (default 10), `BENCH_BROKER` (more `[broker]` lines, say
//! `max_witness_records = 64`, to see what a bound holds).

use std::io::Write;
use std::time::Instant;

use proto::{AuditLine, DecisionRecord};
use stack::{Daemon, Home, OWNER, read_grant, replies_with};

const LIMIT_KIB: u64 = 8 * 1024;

const SCRIPT: &str = r#"
[server]
n_ctx = 65536
total_slots = 4

[[rule]]
[rule.match]
tool_result_contains = "buy milk"
[rule.answer]
text = "Your list: buy milk."

[[rule]]
[rule.match]
user_contains = "todo"
[[rule.answer.tool_calls]]
name = "read_file"
arguments = '{"path":"NOTES/todo.md"}'

[default]
text = "Hello."
"#;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("a kB figure")
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn main() {
    let mut out = std::io::stdout().lock();
    if !std::env::args().any(|a| a == "--bench") {
        let _ = writeln!(
            out,
            "soak bench: run it with `cargo bench -p stack --bench soak`"
        );
        return;
    }
    let sessions = env_or("BENCH_SESSIONS", 20);
    let turns = env_or("BENCH_TURNS", 10);
    let in_mattermost = sessions / 5;
    let home = Home::new("soak", &std::env::var("BENCH_BROKER").unwrap_or_default());
    let notes = home.files("notes", &[("todo.md", "buy milk")]);
    home.write_grant("notes-read", &read_grant("auto", &notes, ""));
    // gatewayd first: brokerd reads `[gateway]` at its start.
    let gw = home.start_gateway(
        &[OWNER.id],
        "edit_interval = \"50ms\"\ntyping_interval = \"200ms\"",
    );
    let script = SCRIPT.replace("NOTES", &notes.display().to_string());
    let agent = home.start_agent(&script, "");
    let roles: Vec<(&str, &Daemon)> = vec![
        ("brokerd", &agent.daemons[1]),
        ("loopd", &agent.daemons[0]),
        ("inferproxy", &agent.daemons[2]),
        ("gatewayd", &gw.daemons[0]),
    ];
    let started: Vec<(u64, u64)> = roles.iter().map(|(_, d)| memory(d.child.id())).collect();
    let began = Instant::now();
    for _ in 0..sessions - in_mattermost {
        let mut session = None;
        for _ in 0..turns {
            let turn = agent.chat(session.as_ref(), "what is on my todo list?");
            assert_eq!(turn.reply.text, "Your list: buy milk.", "{turn:?}");
            session = Some(turn.reply.session);
        }
    }
    for _ in 0..in_mattermost {
        let root = gw.post(OWNER, "what is on my todo list?", None);
        for n in 1..=turns {
            if n > 1 {
                gw.post(OWNER, "and what is on my todo list now?", Some(&root));
            }
            gw.wait("the answer in the thread", |s| {
                replies_with(s, &root, "Your list: buy milk.").len() >= n
            });
        }
    }
    let took = began.elapsed();
    let calls = home
        .audit_lines()
        .iter()
        .filter(|l| {
            matches!(l, AuditLine::Decision(r) if matches!(r.decision, DecisionRecord::Allowed { .. }))
        })
        .count();
    assert_eq!(calls, sessions * turns, "every turn made one allowed call");
    assert_eq!(agent.fallbacks(), Vec::<String>::new());
    let _ = writeln!(
        out,
        "soak: {sessions} sessions ({in_mattermost} in Mattermost threads) of {turns} turns, {calls} \
         read_file calls, in {:.1} s (release build, direct runner)\n",
        took.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "| role | VmRSS after its start | VmRSS after the soak | VmHWM (its peak) | at most 8 MiB |\n|---|---|---|---|---|"
    );
    let mut over = Vec::new();
    for ((name, d), (rss0, _)) in roles.iter().zip(&started) {
        let (rss, hwm) = memory(d.child.id());
        let ok = hwm <= LIMIT_KIB;
        if !ok {
            over.push(*name);
        }
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} |",
            mib(*rss0),
            mib(rss),
            mib(hwm),
            if ok { "yes" } else { "NO" }
        );
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let _ = writeln!(
        out,
        "\nload average at the end: {}{}",
        load.split(' ').take(3).collect::<Vec<_>>().join(" "),
        if over.is_empty() {
            String::new()
        } else {
            format!("\nover the limit: {}", over.join(", "))
        }
    );
}
