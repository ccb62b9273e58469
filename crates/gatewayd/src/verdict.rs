//! Which answer a reaction or a reply means. Only these count as answers at all; whether
//! an answer counts for the approval is brokerd's decision.

use proto::approval::Verdict;

/// The verdict an emoji stands for: thumbs and ticks approve, thumbs down and crosses deny,
/// thumbs in every skin tone; any other emoji is no answer. Exact system emoji names only
/// (a custom emoji cannot take a system emoji's name).
pub fn emoji_verdict(name: &str) -> Option<Verdict> {
    const TONES: [&str; 5] = ["light", "medium_light", "medium", "medium_dark", "dark"];
    let (base, tone) = match name.split_once('_') {
        Some((base, tone)) if matches!(base, "+1" | "thumbsup" | "-1" | "thumbsdown") => {
            (base, Some(tone))
        }
        _ => (name, None),
    };
    if let Some(tone) = tone
        && !TONES
            .iter()
            .any(|t| tone.strip_suffix("_skin_tone") == Some(t))
    {
        return None;
    }
    match base {
        "+1" | "thumbsup" | "white_check_mark" | "heavy_check_mark" => Some(Verdict::Approve),
        "-1" | "thumbsdown" | "x" | "no_entry" | "no_entry_sign" => Some(Verdict::Deny),
        _ => None,
    }
}

/// The verdict a reply stands for: exactly `approve` or `deny` (any case, trailing `.`/`!`).
pub fn reply_verdict(text: &str) -> Option<Verdict> {
    match text
        .trim()
        .trim_end_matches(['.', '!'])
        .to_lowercase()
        .as_str()
    {
        "approve" => Some(Verdict::Approve),
        "deny" => Some(Verdict::Deny),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumbs_and_words_are_verdicts() {
        for (emoji, verdict) in [
            ("+1", Some(Verdict::Approve)),
            ("thumbsup", Some(Verdict::Approve)),
            ("+1_medium_dark_skin_tone", Some(Verdict::Approve)),
            ("+1_medium_light_skin_tone", Some(Verdict::Approve)),
            ("thumbsdown_light_skin_tone", Some(Verdict::Deny)),
            ("thumbsup_skin_tone_3", None),
            ("thumbsup_light", None),
            ("x_dark", None),
            ("-1", Some(Verdict::Deny)),
            ("x", Some(Verdict::Deny)),
            ("smile", None),
            ("+10", None),
        ] {
            assert_eq!(emoji_verdict(emoji), verdict, "{emoji}");
        }
        assert_eq!(reply_verdict(" Approve! "), Some(Verdict::Approve));
        assert_eq!(reply_verdict("deny."), Some(Verdict::Deny));
        assert_eq!(reply_verdict("approve, but later"), None);
        assert_eq!(reply_verdict("approved"), None);
    }
}
