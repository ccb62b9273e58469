//! The alerts brokerd hands over for the owner's channel, each a root post with nothing to
//! answer (no approval is behind it, and no reaction or reply on it is heard as one):
//!
//! - brokerd's own verification of its audit chain failed (`audit_alert`);
//! - a failed `bxctl verify --alert` (`verify_post`): an admin peer's `FAIL` lines, which
//!   brokerd audited and forwarded (docs/verify.md, docs/decisions.md V18).
//!
//! Either text is shown inert and cut to one post: brokerd's words in prose, the peer's
//! lines each alone in a fenced block, where nothing renders, each after [`inert::MARK`].

use proto::alert::VerifyPost;
use proto::gateway::AuditAlert;

use crate::card::fenced;
use crate::render::{code, inert};

/// The most characters of brokerd's words shown.
const DETAIL: usize = 4000;

/// The most characters one line of a verify alert takes once inert (hidden characters are
/// shown escaped, so a line can grow); longer ones are cut. With
/// [`proto::alert::MAX_LINES`] lines and the words around them the post fits.
const LINE: usize = 600;

/// brokerd's alert that its audit log does not verify (the daily full check), as the owner
/// reads it: brokerd's words inert (they name files and quote nothing the model wrote, but
/// one rule for all text keeps it simple), cut to one post.
pub fn audit(a: &AuditAlert) -> String {
    let mut detail = inert(&a.detail);
    if detail.chars().count() > DETAIL {
        detail = detail.chars().take(DETAIL).collect::<String>() + "…";
    }
    format!(
        "**boxmaker: the audit log does not verify** (brokerd's check of the whole chain, {})\n\n\
         {detail}\n\nbrokerd serves on; it refuses to start on a break past its checkpoint. On \
         the host, `sudo bxctl audit verify` names the first bad file and line (docs/broker.md).",
        a.time
    )
}

/// A failed `bxctl verify`, as the owner reads it: how many lines, who handed them to
/// brokerd and when, then the lines in one fenced block, then where to look. Never an
/// approval: nothing to answer.
///
/// Each line is inert (no line break or hidden character it holds is shown as anything but
/// an escape, so no line is cut into another) and starts with [`inert::MARK`]. The mark
/// keeps the block one block for Mattermost's server too: when it looks for mentions it
/// ends a code block at any line of exactly three backticks or tildes, however long the
/// fence that opened it, so a peer's line `~~~` would close it and a following `@channel`
/// would notify the whole channel. No marked line is a fence or starts with anything.
///
/// The count is of lines, not of failing checks: past [`proto::alert::MAX_LINES`] `FAIL`s
/// bxctl's last line says how many more there are, and the peer's words are not counted.
pub fn verify(v: &VerifyPost) -> String {
    let shown: Vec<String> = v
        .lines
        .iter()
        .take(proto::alert::MAX_LINES)
        .map(|l| {
            let l = inert::line(l);
            let l = if l.chars().count() > LINE {
                l.chars().take(LINE).collect::<String>() + "…"
            } else {
                l
            };
            format!("{}{l}", inert::MARK)
        })
        .collect();
    format!(
        "**boxmaker: `bxctl verify` failed** ({n} line(s), handed to brokerd by {by} at \
         {time})\n{block}\nOn the host, `journalctl -u boxmaker-verify -p err` shows the run and \
         `sudo bxctl verify` checks again; docs/verify.md says what each check means and how to \
         fix it. Nothing to answer here.",
        n = shown.len(),
        by = code(&v.by),
        time = v.time,
        block = fenced(&shown.join("\n")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::POST_LIMIT;

    fn time() -> proto::Timestamp {
        proto::Timestamp::parse("2026-12-01T04:00:12.345Z").expect("time")
    }

    #[test]
    fn an_audit_alert_shows_brokerds_words_inert_and_fits_a_post() {
        let alert = |detail: String| {
            audit(&AuditAlert {
                time: time(),
                detail,
            })
        };
        let text = alert("line 3: ![x](https://evil.example/a.png) `code`".into());
        assert!(
            text.starts_with("**boxmaker: the audit log does not verify**"),
            "{text}"
        );
        assert!(text.contains("line 3:"), "{text}");
        assert!(
            text.contains("`![x](https://evil.example/a.png)`"),
            "a link-like token is inline code, no image or link: {text}"
        );
        assert!(text.contains("\\`code\\`"), "backticks escaped: {text}");
        let long = alert("x ".repeat(20_000));
        assert!(
            long.chars().count() < POST_LIMIT,
            "{}",
            long.chars().count()
        );
    }

    /// The peer's lines sit in one fenced block, whatever they hold: a fence of their own,
    /// a link or image, a line break, an escape sequence; and the largest alert brokerd
    /// takes, every character hidden (shown escaped, nine times longer), fits a post.
    #[test]
    fn a_verify_alert_shows_the_peers_lines_inert_in_one_block_and_fits_a_post() {
        let post = |lines: Vec<String>| {
            verify(&VerifyPost {
                time: time(),
                by: "uid 990 (boxmaker-verify)".into(),
                lines,
            })
        };
        let text = post(vec![
            "FAIL  state  audit: audit chain BROKEN".into(),
            "FAIL  units  x: ````\n![x](https://evil.example/a.png)\u{1b}[2J\u{202e}".into(),
        ]);
        assert!(
            text.starts_with("**boxmaker: `bxctl verify` failed** (2 line(s), handed to brokerd by `uid 990 (boxmaker-verify)`"),
            "{text}"
        );
        // The block opens with a fence longer than the line's own (four), and holds exactly
        // the two lines: the break inside the second is shown, not made.
        let fence = "\n`````\n";
        let start = text.find(fence).expect("a fence of five") + fence.len();
        let end = start + text[start..].find("\n`````\n").expect("its end");
        let block: Vec<&str> = text[start..end].lines().collect();
        assert_eq!(block.len(), 2, "{text}");
        assert_eq!(block[0], "| FAIL  state  audit: audit chain BROKEN");
        assert!(
            block[1].contains("\\u{000a}![x](https://evil.example/a.png)"),
            "{text}"
        );
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text}"
        );
        assert!(text.ends_with("Nothing to answer here."), "{text}");
        assert!(
            !text.contains(":+1:") && !text.contains("approve"),
            "{text}"
        );
        let largest = post(vec![
            "\u{1}".repeat(proto::alert::MAX_LINE_BYTES);
            proto::alert::MAX_LINES
        ]);
        assert!(
            largest.chars().count() < POST_LIMIT,
            "{}",
            largest.chars().count()
        );
        assert_eq!(largest.matches('…').count(), proto::alert::MAX_LINES);
    }

    /// What Mattermost's server reads for mentions: the text outside code blocks as it finds
    /// them (server `app/notification.go`, `codeBlockPattern`): a block opens at a line
    /// that starts, after blanks, with three backticks or tildes, and ends at the next line
    /// that is, after blanks, exactly three of either, or at the end of the message. Inline
    /// code is kept here (the server removes it too), so this reads more than the server.
    fn outside_code(text: &str) -> String {
        let fence = |l: &str, exact: bool| {
            let t = l.trim_start_matches([' ', '\t']);
            let three = t.chars().take(3).filter(|c| matches!(c, '`' | '~')).count() == 3;
            three && (!exact || t.chars().count() == 3)
        };
        let (mut out, mut inside) = (String::new(), false);
        for l in text.lines() {
            if inside {
                inside = !fence(l, true);
            } else if fence(l, false) {
                inside = true;
            } else {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    /// A peer's line can neither end the block for the server's mention scan (a fence of
    /// three backticks or tildes, indented or not) nor start with a mention: `@channel`,
    /// `@all` and `@here` after any of them stay inside the block, so nobody is notified.
    /// The header counts the lines shown, not failing checks.
    #[test]
    fn a_verify_alerts_lines_cannot_close_the_block_or_mention_anyone() {
        let lines: Vec<String> = [
            "FAIL  state  audit: audit chain BROKEN",
            "~~~",
            "@channel",
            "```",
            "@all",
            "   ~~~",
            "@here",
            "\t```",
            "  `~`",
            "@channel look",
            "… and 11 more",
        ]
        .map(str::to_owned)
        .to_vec();
        let text = verify(&VerifyPost {
            time: time(),
            by: "uid 0 (root)".into(),
            lines: lines.clone(),
        });
        let read = outside_code(&text);
        for mention in ["@channel", "@all", "@here"] {
            assert!(
                !read.contains(mention),
                "{mention} outside a block: {read}\n{text}"
            );
        }
        assert!(
            read.contains("**boxmaker: `bxctl verify` failed**"),
            "{read}"
        );
        let shown: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(inert::MARK))
            .collect();
        assert_eq!(shown.len(), lines.len(), "{text}");
        assert_eq!(shown[1], "| ~~~");
        assert!(
            text.contains("(11 line(s), handed to brokerd by `uid 0 (root)`"),
            "{text}"
        );
    }
}
