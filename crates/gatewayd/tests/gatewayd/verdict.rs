//! Which reactions and replies are answers (`verdict`).

use gatewayd::verdict::{emoji_verdict, reply_verdict};
use proto::approval::Verdict;

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
        // Mattermost's 🔁: approve for the session; its look-alikes are no answer.
        ("repeat", Some(Verdict::AllowSession)),
        ("repeat_one", None),
        ("arrows_counterclockwise", None),
        ("repeat_light_skin_tone", None),
    ] {
        assert_eq!(emoji_verdict(emoji), verdict, "{emoji}");
    }
    assert_eq!(reply_verdict(" Approve! "), Some(Verdict::Approve));
    assert_eq!(reply_verdict("deny."), Some(Verdict::Deny));
    assert_eq!(reply_verdict("approve, but later"), None);
    assert_eq!(reply_verdict("approved"), None);
    assert_eq!(reply_verdict("Session."), Some(Verdict::AllowSession));
    assert_eq!(reply_verdict("session please"), None);
}
