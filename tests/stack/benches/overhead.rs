//! What the whole stack costs a turn (issue 28's measure, docs/performance.md): a 20-turn
//! real-model session through bxctl, loopd, inferproxy and brokerd beside the same requests
//! sent straight to llama.cpp's server by a minimal client, interleaved in one run
//! (`stack::overhead`). Prints the table per request and per turn; exits 1 when the stack's
//! total is above 1.05 times the direct one, or when the two sides did not do the same work.
//!
//! Run (the model server's speed dominates; release binaries keep the stack's own cost low):
//! `eval "$(tests/realpeer/setup.sh)"; export BOXMAKER_REALPEER_PYTHON BOXMAKER_REALPEER_MODEL;`
//! `cargo build --release --workspace --bins && cargo bench -p stack --bench overhead`.
//! Environment: `BENCH_TURNS` (default 20), `BENCH_MAX_TOKENS` (default 64).

use std::io::Write;

/// The bound on the stack's total over the direct one.
const BOUND: f64 = 1.05;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> std::process::ExitCode {
    let m = stack::overhead::run(env_or("BENCH_TURNS", 20), env_or("BENCH_MAX_TOKENS", 64));
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", m.table());
    let good = m.ratio() <= BOUND && m.unequal().is_empty();
    let _ = writeln!(
        out,
        "{}: {:.3} against the bound {BOUND}",
        if good { "within" } else { "NOT within" },
        m.ratio()
    );
    if good {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
