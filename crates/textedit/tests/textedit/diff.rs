//! The card's diff: applying it to the old text gives the new one, and it stays within its
//! bounds of size and time.

use std::time::{Duration, Instant};

use textedit::{MAX_DIFF, diff, shown};

/// Applies a unified diff to `old`, strictly: every context and removed line must be the
/// old text's. Returns the new text.
fn patch(old: &str, diff: &str) -> String {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut at = 0;
    let mut lines = diff.split_inclusive('\n').peekable();
    assert!(lines.next().expect("---").starts_with("--- "));
    assert!(lines.next().expect("+++").starts_with("+++ "));
    while let Some(head) = lines.next() {
        let start: usize = head
            .strip_prefix("@@ -")
            .and_then(|r| r.split([',', ' ']).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("hunk header {head:?}"));
        let start = start.saturating_sub(1);
        // A hunk of an empty old side names line 0: it starts before line 1.
        for line in &old_lines[at..start.max(at)] {
            out.push_str(line);
        }
        at = start.max(at);
        while let Some(line) = lines.next_if(|l| !l.starts_with("@@")) {
            let no_newline = lines.next_if(|l| l.starts_with("\\ No newline"));
            let (kind, body) = line.split_at(1);
            let body = if no_newline.is_some() {
                body.strip_suffix('\n').expect("a line")
            } else {
                body
            };
            match kind {
                " " | "-" => {
                    assert_eq!(old_lines[at], body, "context or removal must match");
                    at += 1;
                    if kind == " " {
                        out.push_str(body);
                    }
                }
                "+" => out.push_str(body),
                other => panic!("line kind {other:?}"),
            }
        }
    }
    for line in &old_lines[at..] {
        out.push_str(line);
    }
    out
}

#[test]
fn the_diff_applied_to_the_old_text_gives_the_new() {
    let old: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    let cases = [
        old.replace("line 3\n", "line three\n"),
        old.replace("line 3\n", "line three\n")
            .replace("line 35\n", ""),
        format!("{old}appended\n"),
        format!("{old}no newline"),
        "entirely new\n".to_owned(),
        String::new(),
    ];
    for new in &cases {
        let d = diff("/n/a.md", &old, new);
        assert!(!d.truncated);
        assert!(
            d.text.starts_with("--- a/n/a.md\n+++ b/n/a.md\n"),
            "{}",
            d.text
        );
        assert_eq!(&patch(&old, &d.text), new, "{}", d.text);
    }
    let d = diff("/n/a.md", "", "first\n");
    assert_eq!(patch("", &d.text), "first\n");
    assert_eq!(diff("/n/a.md", &old, &old).text, "");
}

#[test]
fn a_diff_shows_three_lines_of_context() {
    let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
    let new = old.replace("10\n", "ten\n");
    let d = diff("/x", &old, &new);
    assert_eq!(
        d.text,
        "--- a/x\n+++ b/x\n@@ -7,7 +7,7 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n 12\n 13\n"
    );
}

/// `n` lines, each `0` or `1`, from a small generator seeded with `seed`.
fn coin_lines(n: usize, seed: u64) -> String {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            if x >> 63 == 0 { "0\n" } else { "1\n" }
        })
        .collect()
}

#[test]
fn a_large_diff_is_capped_and_a_crafted_one_is_bounded_in_time() {
    // Two long texts of the same two lines in unrelated orders: a minimal diff of them
    // costs time quadratic in their length.
    let old = coin_lines(128 * 1024, 1);
    let new = coin_lines(128 * 1024, 2);
    let started = Instant::now();
    let d = diff("/x", &old, &new);
    // Texts of the largest size a write leaves (256 KiB). The deadline is 100 ms; what is
    // left is the cheap fallback and the rendering (without the deadline: about 6 s here).
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(d.truncated);
    assert!(d.text.len() <= MAX_DIFF);
    let s = shown(&"é".repeat(MAX_DIFF));
    assert!(s.truncated && s.text.len() <= MAX_DIFF && s.text.len() > MAX_DIFF - 2);
    assert_eq!(shown("short").text, "short");
}
