//! The real-model session's figures (issue 12's measures, docs/performance.md): a session
//! resumed from a prepared log with tool exchanges, run for `BENCH_TURNS` turns (default
//! 20) through loopd, inferproxy and brokerd against llama.cpp's own server (one slot of
//! 2048 tokens, SmolLM2-135M); per request the prompt tokens, `cache_n`, the tokens
//! processed, the tokens genuinely new, the wasted prefill and the part of it that is the
//! re-tokenized replayed answer; then the prefill and session times. "If replayed
//! token-exactly" is the waste less that residue: what a replay that repeated the slot's
//! own tokens would have cost.
//!
//! Run (the model server's speed dominates, so the debug binaries serve):
//! `eval "$(tests/realpeer/setup.sh)"; export BOXMAKER_REALPEER_PYTHON BOXMAKER_REALPEER_MODEL;`
//! `cargo build --workspace --bins && cargo bench --profile dev -p stack --bench session`.
//! Environment: `BENCH_TURNS`, `BENCH_MAX_TOKENS` (default 64), `BENCH_COMPACT_PERCENT`
//! (default 70).

use std::io::Write;

use stack::real_session::{self, Plan};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let d = Plan::default();
    let plan = Plan {
        turns: env_or("BENCH_TURNS", d.turns),
        max_tokens: env_or("BENCH_MAX_TOKENS", d.max_tokens),
        compact_percent: env_or("BENCH_COMPACT_PERCENT", d.compact_percent),
        greedy: env_or("BENCH_GREEDY", d.greedy),
    };
    let mut session = real_session::run(&plan);
    session.measure();
    let run = &session.run;
    let after_first = run.requests.iter().skip(1);
    let plain: i64 = after_first.clone().map(|r| r.wasted).sum();
    let residue: u64 = after_first.clone().map(|r| r.residue).sum();
    let worst = after_first.clone().map(|r| r.wasted).max().unwrap_or(0);
    let worst_exact = after_first
        .map(|r| r.wasted - i64::try_from(r.residue).unwrap_or(0))
        .max()
        .unwrap_or(0);
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{plan:?}\n{}", run.table());
    let _ = writeln!(
        out,
        "wasted after the first request: plain text {plain} (worst {worst}); \
         of it re-tokenized answers {residue}; if replayed token-exactly {} (worst {worst_exact})",
        plain - i64::try_from(residue).unwrap_or(0),
    );
    let _ = writeln!(out, "turn ends: {:?}", run.ends);
}
