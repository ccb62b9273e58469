//! The chat of `bxctl dev --mattermost`: the owner's side of a Mattermost channel, in the
//! terminal. What you type is posted as the owner (the first message as a root post, the rest
//! in its thread, as in a Mattermost client); a watcher reads the channel every quarter of a
//! second through the REST API (`GET /channels/{id}/posts?since=`) and shows the bot's posts
//! as they come and grow by edits, and its approval posts, which `/approve`, `/session` and `/deny`
//! answer with a reaction, as you would in Mattermost. Everything the bot posted is shown
//! inert: a block whose lines start with `| `.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustyline::{DefaultEditor, ExternalPrinter};
use serde_json::{Value, json};

use crate::Error;
use crate::mm::Mattermost;

/// How often the channel is read.
const POLL: Duration = Duration::from_millis(250);

/// Who is who in the trial.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The server, as the owner.
    pub mm: Mattermost,
    pub owner: String,
    pub bot: String,
    pub channel: String,
}

/// What the watcher has shown, shared with the prompt.
#[derive(Debug, Default)]
struct Seen {
    /// Each of the bot's posts and the text shown of it.
    shown: HashMap<String, String>,
    /// The newest approval post, for `/approve`, `/session` and `/deny`.
    approval: Option<String>,
    /// The newest `update_at` read.
    since: i64,
}

const HELP: &str = "\
  /approve, /deny   answer the newest approval post with a +1 or -1 reaction, as the owner
  /session          approve it for this session (the :repeat: reaction), where it offers that
  /new              start a new thread (a new conversation) with the next message
  /quit             leave (so do Ctrl-D and Ctrl-C); the stack stops
  Anything else is posted in Town Square as the owner.
";

/// What one read of the channel adds to the screen.
fn news(posts: &Value, bot: &str, seen: &mut Seen) -> Vec<String> {
    let mut list: Vec<&Value> = posts["posts"]
        .as_object()
        .map(|m| m.values().collect())
        .unwrap_or_default();
    list.sort_by_key(|p| p["create_at"].as_i64());
    let mut lines = Vec::new();
    for p in list {
        seen.since = seen.since.max(p["update_at"].as_i64().unwrap_or(0));
        if p["user_id"] != bot {
            continue;
        }
        let id = p["id"].as_str().unwrap_or_default().to_owned();
        let text = p["message"].as_str().unwrap_or_default().to_owned();
        let root = p["root_id"].as_str().is_none_or(str::is_empty);
        let before = seen.shown.get(&id).cloned();
        match before {
            Some(old) if old == text => continue,
            None if root => {
                seen.approval = Some(id.clone());
                lines.push(format!(
                    "[a root post of the bot (an approval: /approve, /session or /deny answers \
                     it with a reaction)]\n{}",
                    inert::block(&text)
                ));
            }
            None => lines.push(format!(
                "[the bot, in your thread]\n{}",
                inert::block(&text)
            )),
            // A streamed answer grows by edits: show what it added.
            Some(old) if text.starts_with(&old) && !root => {
                lines.push(inert::block(&text[old.len()..]));
            }
            Some(_) => lines.push(format!(
                "[the bot edited its post]\n{}",
                inert::block(&text)
            )),
        }
        seen.shown.insert(id, text);
    }
    lines
}

/// Reads the channel until `stop`, printing what is new above the prompt.
fn watch(
    trial: Trial,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    mut printer: impl ExternalPrinter,
) {
    while !stop.load(Ordering::Acquire) {
        let since = daemon::lock(&seen).since;
        let path = format!("/channels/{}/posts?since={since}", trial.channel);
        match trial.mm.get(&path) {
            Ok(posts) => {
                let lines = news(&posts, &trial.bot, &mut daemon::lock(&seen));
                for l in lines {
                    let _ = printer.print(l.trim_end().to_owned());
                }
            }
            Err(e) => {
                let _ = printer.print(format!("[Mattermost: {e}]"));
                std::thread::sleep(Duration::from_secs(2));
            }
        }
        std::thread::sleep(POLL);
    }
}

/// Posts `text` as the owner: a root post, or a reply in `root`'s thread. Returns its id.
fn post(trial: &Trial, root: Option<&str>, text: &str) -> Result<String, String> {
    let body = json!({"channel_id": trial.channel, "root_id": root.unwrap_or(""), "message": text});
    trial
        .mm
        .post("/posts", &body)
        .map(|p| p["id"].as_str().unwrap_or_default().to_owned())
        .map_err(|e| e.to_string())
}

/// The chat, until `/quit`, Ctrl-D or Ctrl-C.
pub fn chat(trial: Trial, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let mut editor = DefaultEditor::new().map_err(Error::Prompt)?;
    writeln!(
        out,
        "Mattermost, locally: you are @owner in Town Square of a fake Mattermost server; the bot \
         (gatewayd) answers in your message's thread, by edits, and asks for approvals in posts \
         of their own.\n{HELP}"
    )
    .map_err(Error::Output)?;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let printer = editor.create_external_printer().map_err(Error::Prompt)?;
    let watcher = {
        let (trial, seen, stop) = (trial.clone(), seen.clone(), stop.clone());
        std::thread::spawn(move || watch(trial, seen, stop, printer))
    };
    let mut root: Option<String> = None;
    let result = loop {
        let line = match editor.readline("owner> ") {
            Ok(l) => l,
            Err(
                rustyline::error::ReadlineError::Eof | rustyline::error::ReadlineError::Interrupted,
            ) => break Ok(()),
            Err(e) => break Err(Error::Prompt(e)),
        };
        let text = line.trim();
        let said = match text {
            "" => continue,
            "/quit" => break Ok(()),
            "/help" => HELP.to_owned(),
            "/new" => {
                root = None;
                "  [your next message starts a new thread]\n".to_owned()
            }
            "/approve" | "/session" | "/deny" => {
                let emoji = match text {
                    "/approve" => "+1",
                    "/session" => "repeat",
                    _ => "-1",
                };
                match daemon::lock(&seen).approval.clone() {
                    None => "  [no approval post yet]\n".to_owned(),
                    Some(post_id) => {
                        let body = json!({"user_id": trial.owner, "post_id": post_id, "emoji_name": emoji});
                        match trial.mm.post("/reactions", &body) {
                            Ok(_) => format!("  [you reacted :{emoji}: on the approval post]\n"),
                            Err(e) => format!("  [the reaction failed: {e}]\n"),
                        }
                    }
                }
            }
            _ => match post(&trial, root.as_deref(), text) {
                Ok(id) => {
                    root.get_or_insert(id);
                    String::new()
                }
                Err(e) => format!("  [not posted: {e}]\n"),
            },
        };
        if let Err(e) = write!(out, "{said}") {
            break Err(Error::Output(e));
        }
    };
    stop.store(true, Ordering::Release);
    let _ = watcher.join();
    result.map(|()| ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bots_posts_are_shown_once_and_their_edits_as_what_they_added() {
        let bot = "b";
        let list = |posts: Value| json!({"order": [], "posts": posts});
        let mut seen = Seen::default();
        let a = list(
            json!({"r": {"id": "r", "user_id": "o", "root_id": "", "message": "hi", "create_at": 1, "update_at": 1},
                            "p": {"id": "p", "user_id": "b", "root_id": "r", "message": "Hel", "create_at": 2, "update_at": 2}}),
        );
        assert_eq!(
            news(&a, bot, &mut seen),
            ["[the bot, in your thread]\n| Hel\n"]
        );
        assert_eq!(seen.since, 2);
        let b = list(
            json!({"p": {"id": "p", "user_id": "b", "root_id": "r", "message": "Hello\n\u{1b}[2J", "create_at": 2, "update_at": 3}}),
        );
        assert_eq!(news(&b, bot, &mut seen), ["| lo\n| \\u{001b}[2J\n"]);
        assert!(news(&b, bot, &mut seen).is_empty(), "nothing new");
        let c = list(
            json!({"q": {"id": "q", "user_id": "b", "root_id": "", "message": "#### Approval needed", "create_at": 4, "update_at": 4}}),
        );
        assert!(news(&c, bot, &mut seen)[0].starts_with("[a root post of the bot"));
        assert_eq!(seen.approval.as_deref(), Some("q"));
    }
}
