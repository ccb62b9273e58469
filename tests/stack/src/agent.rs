//! The agent as the owner's client sees it ([`Agent`]: the stack in front of a model
//! server, a turn at a time), and what brokerd accounts of the owner's words.

use std::path::PathBuf;

use daemon::conn::Conn;
use proto::{Message, SessionId};

use crate::{Daemon, Home};

impl Home {
    /// brokerd's chat side, where channels register the owner's words.
    pub fn chat_broker_sock(&self) -> PathBuf {
        self.root.join("run/chat-broker/broker.sock")
    }

    /// brokerd's accounting records (`home/accounting/records.jsonl`), each line's JSON.
    pub fn accounting(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.root.join("home/accounting/records.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("an accounting record"))
            .collect()
    }

    /// Whether brokerd accounts `text` as an owner's message a channel registered.
    pub fn owner_registered(&self, text: &str) -> bool {
        let digest = proto::attest::OwnerMessage::of(text).digest.to_hex();
        self.accounting()
            .iter()
            .any(|r| r["kind"] == "owner" && r["digest"] == digest.as_str())
    }
}

/// The whole stack: fake llama-server, inferproxy, brokerd and loopd.
#[derive(Debug)]
pub struct Agent {
    /// The fake llama-server's `host:port`.
    pub addr: String,
    pub chat: PathBuf,
    /// brokerd's chat side: [`Agent::chat`] registers each message there first, as
    /// `bxctl chat` does.
    pub broker: PathBuf,
    pub daemons: Vec<Daemon>,
}

/// One turn as the owner's client sees it.
#[derive(Debug, Clone)]
pub struct Turn {
    pub events: Vec<proto::chat::ChatEvent>,
    pub reply: proto::chat::ChatReply,
}

impl Agent {
    /// Registers the owner's `text` with brokerd, as a channel does before loopd has it.
    pub fn register(&self, text: &str) {
        owner_words::register(&self.broker, text).expect("register the owner's message");
    }

    /// The lines in which brokerd said a prompt held a message it could not account for.
    pub fn fallbacks(&self) -> Vec<String> {
        let brokerd = self.daemons.iter().find(|d| {
            d.stderr
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("stderr-brokerd"))
        });
        brokerd.map_or_else(Vec::new, |d| {
            d.log()
                .lines()
                .filter(|l| l.contains("are not accounted for") || l.contains("no longer kept"))
                .map(str::to_owned)
                .collect()
        })
    }

    /// Sends one chat message and collects the turn, the message registered with brokerd
    /// first as an honest channel does.
    pub fn chat(&self, session: Option<&SessionId>, text: &str) -> Turn {
        self.register(text);
        let mut conn = Conn::connect(&self.chat).expect("connect chat");
        let mut events = Vec::new();
        let last = conn
            .call(
                1,
                Message::ChatSend(proto::chat::ChatSend {
                    session: session.cloned(),
                    text: text.to_owned(),
                    cancel_on_hangup: false,
                }),
                |e| {
                    if let Message::ChatEvent(ev) = &e.msg {
                        events.push(ev.clone());
                    }
                },
            )
            .expect("chat");
        match last.msg {
            Message::ChatReply(reply) => Turn { events, reply },
            other => panic!("not a chat reply: {other:?}"),
        }
    }

    /// The fake server's request log (`GET /fake/requests`).
    pub fn requests(&self) -> serde_json::Value {
        let mut s = std::net::TcpStream::connect(&self.addr).expect("fake");
        std::io::Write::write_all(
            &mut s,
            b"GET /fake/requests HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .expect("request");
        let mut text = String::new();
        std::io::Read::read_to_string(&mut s, &mut text).expect("response");
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .unwrap_or_default();
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }
}
