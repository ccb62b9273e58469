//! An MCP call through brokerd beside the bare server (issue 26's measures,
//! docs/performance.md):
//! - the call through brokerd (direct runner: a witnessed `tool_request` for a pinned tool,
//!   decided, audited, run by `boxmaker-tool mcp-call`, which starts the server, initializes,
//!   lists its tools to check the pin, calls and stops it) beside the same server started,
//!   initialized, called once and stopped over stdio by a minimal client here;
//! - the pin check's price: the minimal client with one `tools/list` round trip more, beside
//!   the minimal client.
//!
//! The three alternate within each round, so that whatever else the shared machine does
//! weighs on them alike; each figure is the median over the rounds, with the range beside.
//! The server is mcp-server-time from PyPI when `BOXMAKER_MCP_PYTHON_BIN` is set (eval
//! `tests/mcp/setup.sh`), the scripted fake otherwise.
//!
//! Run: `cargo build --workspace --bins && cargo bench --profile dev -p stack --bench mcp`.
//! Environment: `BENCH_ROUNDS` (default 15).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use daemon::conn::Conn;
use stack::mcp::mcp_grant;
use stack::{Home, bin, request_as, witnessed};

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn spread(v: &[f64]) -> String {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    format!(
        "{:.1} ms ({:.1} to {:.1})",
        median(v) * 1e3,
        s[0] * 1e3,
        s[s.len() - 1] * 1e3
    )
}

/// The server started, initialized, (listed,) called once and stopped by the least client.
fn bare(argv: &[String], tool: &str, arguments: &str, list: bool) -> Duration {
    let started = Instant::now();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("server");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut ask = |line: &str, answer: bool| {
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
        if answer {
            let mut reply = String::new();
            stdout.read_line(&mut reply).expect("read");
            assert!(reply.contains("\"result\""), "{reply}");
        }
    };
    ask(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
        true,
    );
    ask(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        false,
    );
    if list {
        ask(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#, true);
    }
    ask(
        &format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
        ),
        true,
    );
    drop(stdin);
    child.wait().expect("wait");
    started.elapsed()
}

fn main() {
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let home = Home::new("bench-mcp", "");
    let (argv, tool, arguments, name) = match std::env::var_os("BOXMAKER_MCP_PYTHON_BIN") {
        Some(dir) => (
            vec![
                std::path::Path::new(&dir)
                    .join("mcp-server-time")
                    .display()
                    .to_string(),
                "--local-timezone".into(),
                "UTC".into(),
            ],
            "get_current_time",
            r#"{"timezone":"UTC"}"#,
            "mcp-server-time",
        ),
        None => {
            let script = home.root.join("fake.json");
            std::fs::write(
                &script,
                r#"{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"result":{"content":["echo_arguments"]}}]}"#,
            )
            .expect("script");
            (
                vec![
                    bin("fake-mcp-server").display().to_string(),
                    script.display().to_string(),
                ],
                "echo",
                r#"{"text":"hi"}"#,
                "the scripted fake",
            )
        }
    };
    let quoted: Vec<String> = argv.iter().map(|a| format!("{a:?}")).collect();
    home.append_config(&format!(
        "\n[[mcp]]\nname = \"bench\"\ncommand = [{}]\n",
        quoted.join(", ")
    ));
    home.write_grant("bench", &mcp_grant("mcp:bench/*", ""));
    let _brokerd = home.start();
    home.mcp_pinned("bench");
    let offered = format!("mcp__bench__{tool}");
    let mut conn = Conn::connect(&home.loop_sock()).expect("loop side");
    let (mut direct, mut listed, mut broker) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        direct.push(bare(&argv, tool, arguments, false).as_secs_f64());
        listed.push(bare(&argv, tool, arguments, true).as_secs_f64());
        // The report first, as inferproxy sends it before loopd has the answer.
        let witness = witnessed(&home.witness_sock(), &offered, arguments);
        let started = Instant::now();
        let frames = request_as(
            &mut conn,
            "s-bench",
            round as u64 + 1,
            &offered,
            arguments,
            witness,
        );
        broker.push(started.elapsed().as_secs_f64());
        assert!(
            matches!(stack::response(&frames), proto::ToolResponse::Result { .. }),
            "{frames:?}"
        );
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "MCP call of {name}, {rounds} rounds (median, range):");
    let _ = writeln!(
        out,
        "  minimal client (start, initialize, call, stop): {}",
        spread(&direct)
    );
    let _ = writeln!(
        out,
        "  minimal client with one tools/list more:        {}",
        spread(&listed)
    );
    let _ = writeln!(
        out,
        "  through brokerd (direct runner):                {}",
        spread(&broker)
    );
    let _ = writeln!(
        out,
        "  brokerd / minimal client: {:.3}  (bound 1.2)",
        median(&broker) / median(&direct)
    );
    let _ = writeln!(
        out,
        "  one tools/list round trip: {:.2} ms; brokerd's whole cost over the client: {:.2} ms",
        (median(&listed) - median(&direct)) * 1e3,
        (median(&broker) - median(&direct)) * 1e3
    );
}
