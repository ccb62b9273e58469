//! Which answer a reaction or a reply means. Only these count as answers at all; whether
//! an answer counts for the approval is brokerd's decision.

use proto::approval::Verdict;

/// The verdict an emoji stands for: thumbs and ticks approve, thumbs down and crosses deny,
/// thumbs in every skin tone, `repeat` (🔁) approves for the session; any other emoji is no
/// answer. Exact system emoji names only (a custom emoji cannot take a system emoji's name;
/// Mattermost's list is `server/public/model/emoji_data.go`).
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
        crate::card::SESSION_EMOJI => Some(Verdict::AllowSession),
        _ => None,
    }
}

/// The verdict a reply stands for: exactly `approve`, `session` or `deny` (any case,
/// trailing `.`/`!`).
pub fn reply_verdict(text: &str) -> Option<Verdict> {
    match text
        .trim()
        .trim_end_matches(['.', '!'])
        .to_lowercase()
        .as_str()
    {
        "approve" => Some(Verdict::Approve),
        "session" => Some(Verdict::AllowSession),
        "deny" => Some(Verdict::Deny),
        _ => None,
    }
}
