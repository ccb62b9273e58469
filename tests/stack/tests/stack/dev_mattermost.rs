//! `bxctl dev --mattermost` (issue 28 point 6): Mattermost tried locally before deploying.
//! Through a real pseudo-terminal, the owner's messages go to the fake Mattermost as the
//! owner's posts; gatewayd answers in the thread by edits; an approval comes as a root post
//! that a reaction answers; every role, the fake Mattermost and gatewayd too, ends with bxctl.

use std::time::Duration;

use expectrl::Expect;
use expectrl::session::OsSession;

use crate::dev::{on_pty, roles, roles_gone, state_dir};

#[test]
fn mattermost_locally_threads_streamed_edits_and_reaction_approvals() {
    let state = state_dir("mattermost");
    let mut s = on_pty(&state, &["--mattermost"]);
    s.set_expect_timeout(Some(Duration::from_secs(30)));
    s.expect("Mattermost (a fake server, on this machine only) at http://127.0.0.1:")
        .expect("the banner");
    s.expect("owner> ").expect("the prompt");
    s.send_line("What is on my todo list?").expect("send");
    s.expect("[the bot, in your thread]")
        .expect("the bot's reply");
    s.expect("buy milk").expect("its text, by edits");
    s.send_line("List my notes").expect("send");
    s.expect(
        "[a root post of the bot (an approval: /approve, /session or /deny answers it with a reaction)]",
    )
    .expect("the approval post");
    s.expect("Approval needed").expect("the card");
    s.expect("note_list").expect("its tool");
    s.expect("**For this session:**")
        .expect("the card offers the session answer");
    s.send_line("/session").expect("approve for the session");
    s.expect("[you reacted :repeat: on the approval post]")
        .expect("the reaction");
    // The approval post shows the outcome, and the call ran and the bot answered: two posts
    // the watcher may show in either order, so the output is read until both are in it.
    let shown = read_until_all(
        &mut s,
        &["**Approved for this session** by", "Those are your notes"],
    );
    assert!(
        shown.is_some(),
        "the outcome and the answer were not both shown"
    );
    // gatewayd and the fake Mattermost are roles of the stack: they go with it.
    let names: Vec<String> = roles(&state).into_iter().map(|(n, _)| n).collect();
    assert!(
        names.contains(&"gatewayd".to_owned()) && names.contains(&"fake-mattermost".to_owned()),
        "{names:?}"
    );
    s.send_line("/quit").expect("quit");
    assert_eq!(
        crate::dev::exit_code(&s, Duration::from_secs(15)),
        Some(0),
        "bxctl did not end as it should"
    );
    roles_gone(&state, 7, Duration::from_secs(10));
    let _ = std::fs::remove_dir_all(&state);
}

/// Reads what the terminal shows for up to 30 s, until every one of `wanted` was in it.
fn read_until_all(s: &mut OsSession, wanted: &[&str]) -> Option<String> {
    let mut all = Vec::new();
    let mut buf = vec![0u8; 65536];
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if let Ok(n) = s.try_read(&mut buf) {
            all.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&all);
        if wanted.iter().all(|w| text.contains(w)) {
            return Some(text.into_owned());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}
