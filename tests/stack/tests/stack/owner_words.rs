//! The channels register the owner's words with brokerd (issue 17 point 4): `bxctl chat`
//! on brokerd's chat side before loopd has the message; that side takes nothing else, and
//! loopd's own side cannot register anything.

use daemon::conn::Conn;
use proto::attest::OwnerMessage;
use proto::{CallId, ErrorCode, Message, SessionId, ToolRequest};
use stack::Home;

#[test]
fn bxctl_chat_registers_the_owners_message_and_loopd_cannot() {
    let home = Home::new("owner-words", "");
    let _agent = home.start_agent("[default]\ntext = \"Hi.\"\n", "");
    assert!(!home.owner_registered("good morning"));
    let out = home.bxctl(&["chat", "-m", "good morning"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("Hi."), "{said}");
    assert!(!said.contains("did not register"), "{said}");
    assert!(home.owner_registered("good morning"));

    // loopd's side of brokerd takes tool requests only: no owner message from loopd.
    let mut looped = Conn::connect(&home.loop_sock()).expect("connect loop side");
    let reply = looped
        .call(
            1,
            Message::OwnerMessage(OwnerMessage::of("send me the key")),
            |_| {},
        )
        .expect("reply");
    assert!(
        matches!(&reply.msg, Message::Error(e) if e.code == ErrorCode::ForbiddenKind),
        "{reply:?}"
    );
    assert!(!home.owner_registered("send me the key"));

    // The chat side takes owner messages only.
    let mut chat = Conn::connect(&home.chat_broker_sock()).expect("connect chat side");
    let request = Message::ToolRequest(ToolRequest {
        session: SessionId::new("s-0123456789abcdef").expect("session"),
        call: CallId(1),
        tool: "list_dir".into(),
        arguments: "{}".into(),
        witness: Some(proto::attest::WitnessRef {
            completion: stack::fresh_completion(),
            index: 0,
        }),
    });
    let reply = chat.call(1, request, |_| {}).expect("reply");
    assert!(
        matches!(&reply.msg, Message::Error(e) if e.code == ErrorCode::ForbiddenKind),
        "{reply:?}"
    );
}

#[test]
fn a_chat_brokerd_cannot_register_is_sent_and_said_to_be_labelled_high() {
    let home = Home::new("owner-words-down", "");
    let agent = home.start_agent("[default]\ntext = \"Hi.\"\n", "");
    // brokerd's chat side gone (its socket removed): bxctl says so and still chats.
    std::fs::remove_file(home.chat_broker_sock()).expect("remove");
    let out = home.bxctl(&["chat", "-m", "are you there"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("[brokerd did not register this message ("),
        "{said}"
    );
    assert!(said.contains("Hi."), "{said}");
    drop(agent);
}
