//! Real-peer tier (issue 28 point 1): at temperature 0, llama.cpp's server with SmolLM2
//! answered the compaction instruction with the instruction itself, two epochs in a row,
//! and loopd kept that as the epoch's summary. Through the real binaries, the real-model
//! session (`stack::real_session`, greedy) compacts; no epoch may start from a summary that
//! repeats the instruction's own words and adds next to nothing: loopd asks again, shorter,
//! and falls back to its fixed note as for a cut summary. Ignored under a plain `cargo
//! test`; `tests/gate` step `realpeer` runs it.

use proto::LogRecord;
use proto::composed::{NO_SUMMARY, SHORT_PROMPT, SUMMARY_PROMPT};
use stack::real_session::{self, Plan};

/// Lower-cased words: runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The test's own reading of an echo (not loopd's code): six words in a row of one of
/// the instructions.
fn repeats_instruction(summary: &str) -> bool {
    let said = words(summary);
    [SUMMARY_PROMPT, SHORT_PROMPT].iter().any(|instruction| {
        let own = words(instruction);
        own.windows(6).any(|run| said.windows(6).any(|w| w == run))
    })
}

#[test]
#[ignore = "real peer: run by tests/gate realpeer"]
fn no_epoch_starts_from_a_summary_that_echoes_the_instruction() {
    let session = real_session::run(&Plan {
        greedy: true,
        ..Plan::default()
    });
    let dir = session.home.root.join("home/sessions/s-realpeer-session");
    let mut summaries = Vec::new();
    for epoch in 0.. {
        let Ok(text) = std::fs::read_to_string(dir.join(format!("{epoch}.jsonl"))) else {
            break;
        };
        for line in text.lines() {
            if let Ok(LogRecord::EpochEnd { summary, .. }) = serde_json::from_str(line) {
                summaries.push(summary);
            }
        }
    }
    assert!(
        session.run.compactions >= 1 && !summaries.is_empty(),
        "no compaction: {:?}",
        session.run.ends
    );
    for s in &summaries {
        assert!(
            !repeats_instruction(s),
            "an epoch starts from the instruction given back: {s:?}\nall: {summaries:#?}"
        );
    }
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "{} summaries, {} of them the fixed note:\n{summaries:#?}\n",
            summaries.len(),
            summaries.iter().filter(|s| *s == NO_SUMMARY).count()
        )
        .as_bytes(),
    );
}
