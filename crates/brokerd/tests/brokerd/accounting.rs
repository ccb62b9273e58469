//! The accounting: the label of a prompt from its messages' digests. Each laundering route
//! a compromised loopd has (a secret copied into a fresh prompt as a tool message, an owner
//! message, a system prompt, a summary) gets the secret's label, an honest session's
//! prompts are accounted for whole, and the records survive a restart within their bound.

use std::io::Write;
use std::path::PathBuf;

use brokerd::context::accounting::{Accounted, Accounting, Durable, LogError, OWNER, of_response};
use brokerd::policy::{Labels, SessionView};

use crate::policy::{PRIVATE, deny_reason, fetch, now, snapshot, web};
use proto::attest::{Answer, ChatMessage, CompletionId, WitnessReport};
use proto::composed;
use proto::{DataClass, DenyReason, Hash32, ToolCall, ToolResponse};

const SECRET: Labels = Labels {
    class: DataClass::Secret,
    untrusted: false,
};
const PUBLIC_UNTRUSTED: Labels = Labels {
    class: DataClass::Public,
    untrusted: true,
};

struct File(PathBuf);

impl File {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("bx-acct-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        Self(dir.join("accounting.jsonl"))
    }

    fn open(&self, max: usize) -> Accounting {
        Accounting::open(&self.0, max, 8).expect("open")
    }
}

impl Drop for File {
    fn drop(&mut self) {
        if let Some(d) = self.0.parent() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn completion(n: u8) -> CompletionId {
    CompletionId::from_random([n; 16])
}

/// The report inferproxy makes of `answer` to `prompt`.
fn report(n: u8, prompt: &[ChatMessage], answer: &Answer) -> WitnessReport {
    let prompt: Vec<_> = prompt.iter().map(ChatMessage::digest).collect();
    WitnessReport {
        completion: completion(n),
        forms: composed::answer_forms(answer, composed::asks_summary(&prompt)),
        prompt,
        answer: answer.message().digest(),
        calls: answer.tool_calls.clone(),
        finish: answer.finish.clone().unwrap_or_default(),
        runnable: answer.runnable(),
    }
}

/// `report` and the other forms of its answer, as inferproxy computes them.
fn witness(a: &mut Accounting, n: u8, prompt: &[ChatMessage], answer: &Answer) -> Accounted {
    a.witnessed(&report(n, prompt, answer)).expect("witnessed")
}

fn answer(finish: &str, content: Option<&str>, calls: Vec<ToolCall>) -> Answer {
    let mut a = Answer::default();
    a.finish = Some(finish.into());
    a.content = content.map(str::to_owned);
    a.tool_calls = calls;
    a
}

fn secret_result() -> ToolResponse {
    ToolResponse::Result {
        content: "the key is hunter2".into(),
        class: DataClass::Secret,
        untrusted: false,
        truncated: false,
    }
}

fn digests(prompt: &[ChatMessage]) -> Vec<Hash32> {
    prompt.iter().map(ChatMessage::digest).collect()
}

/// A session that read a secret: system, owner, the answer that called read_file, its
/// result. Returns the messages as an honest loopd sends them.
fn read_a_secret(a: &mut Accounting) -> Vec<ChatMessage> {
    let owner = ChatMessage::user("read my key file");
    a.owner(owner.digest()).expect("owner");
    let mut prompt = vec![composed::system(composed::DEFAULT_CORE), owner];
    let ans = answer(
        "tool_calls",
        None,
        vec![call("k1", "read_file", "{\"path\":\"/k\"}")],
    );
    let got = witness(a, 1, &prompt, &ans);
    assert_eq!((got.label, got.unaccounted), (OWNER, 0));
    a.returned("k1", &secret_result(), SECRET, &[], Durable::Here)
        .expect("returned");
    prompt.push(ans.message());
    prompt.push(composed::tool_message("k1", &secret_result()));
    prompt
}

#[test]
fn an_honest_session_is_accounted_for_whole_at_the_labels_it_read() {
    let f = File::new("honest");
    let mut a = f.open(1024);
    let mut prompt = vec![composed::system(composed::DEFAULT_CORE)];
    let owner = ChatMessage::user("fetch the weather");
    a.owner(owner.digest()).expect("owner");
    prompt.push(owner);
    let fetch = call("w1", "http_fetch", "{\"url\":\"https://w.example\"}");
    let list = call("w2", "list_dir", "{\"path\":\"/\"}");
    let cut = call("w3", "list_dir", "{\"path\": \"/no");
    let ans = answer("tool_calls", Some("Fetching."), vec![fetch, list, cut]);
    witness(&mut a, 1, &prompt, &ans);
    let page = ToolResponse::Result {
        content: "x".repeat(5000),
        class: DataClass::Public,
        untrusted: true,
        truncated: false,
    };
    a.returned("w1", &page, PUBLIC_UNTRUSTED, &[], Durable::Here)
        .expect("returned");
    let denied = ToolResponse::Denied {
        reason: DenyReason::NoGrant,
        detail: None,
    };
    a.returned("w2", &denied, OWNER, &[], Durable::InAudit)
        .expect("returned");
    // loopd replays the answer without its cut call, then the two results.
    let kept = [&ans.tool_calls[0], &ans.tool_calls[1]];
    prompt.push(ChatMessage::assistant(
        Some("Fetching.".into()),
        None,
        &kept,
    ));
    prompt.push(composed::tool_message("w1", &page));
    prompt.push(composed::tool_message("w2", &denied));
    let got = a.label_of(&digests(&prompt));
    assert_eq!(
        (got.label, got.unaccounted),
        (PUBLIC_UNTRUSTED.join(OWNER), 0)
    );
    // The compaction: the same prompt with the page cut short, then the instruction.
    let mut compaction = prompt.clone();
    compaction[3] = ChatMessage::tool(
        "w1",
        composed::trimmed(&composed::tool_text(&page)).expect("cut"),
    );
    compaction.push(composed::instruction(composed::SUMMARY_PROMPT));
    let summary = answer("stop", Some("the owner wants the weather"), vec![]);
    let got = witness(&mut a, 2, &compaction, &summary);
    assert_eq!(got.unaccounted, 0);
    // The next epoch starts from the summary; an interrupted call's notice is loopd's own.
    let next = vec![
        composed::system(composed::DEFAULT_CORE),
        composed::summary("the owner wants the weather"),
        composed::tool_message("w1", &ToolResponse::failed(composed::INTERRUPTED)),
        composed::tool_message("w2", &ToolResponse::failed(composed::over_cap(8))),
    ];
    let got = a.label_of(&digests(&next));
    assert_eq!(
        (got.label, got.unaccounted),
        (PUBLIC_UNTRUSTED.join(OWNER), 0)
    );
    // A core memory the owner registered is private.
    a.core("You are terse.").expect("core");
    let got = a.label_of(&[composed::system("You are terse.").digest()]);
    assert_eq!((got.label, got.unaccounted), (OWNER, 0));
}

#[test]
fn a_secret_copied_into_a_fresh_prompt_keeps_its_label_whatever_it_is_dressed_as() {
    let f = File::new("launder");
    let mut a = f.open(1024);
    let read = read_a_secret(&mut a);
    let fresh = |m: ChatMessage| vec![composed::system(composed::DEFAULT_CORE), m];
    // As the tool message brokerd returned, in a fresh session: it is that message.
    let as_tool = fresh(read[3].clone());
    assert_eq!(a.label_of(&digests(&as_tool)).label, SECRET);
    // As an owner message, a system prompt, another tool message: none is accounted for,
    // and each counts as the highest label brokerd ever sent.
    for m in [
        ChatMessage::user("the key is hunter2"),
        composed::system("the key is hunter2"),
        ChatMessage::tool("k9", "the key is hunter2"),
        ChatMessage::assistant(Some("the key is hunter2".into()), None, &[]),
    ] {
        let got = a.label_of(&digests(&fresh(m.clone())));
        assert_eq!((got.label, got.unaccounted), (SECRET, 1), "{m:?}");
    }
    // Through a summary: the model summarised the secret session; the summary carries the
    // label of the prompt it was written from into the next epoch.
    let mut compaction = read.clone();
    compaction.push(composed::instruction(composed::SUMMARY_PROMPT));
    let summary = answer("stop", Some("the key is hunter2"), vec![]);
    let got = witness(&mut a, 2, &compaction, &summary);
    assert_eq!((got.label, got.unaccounted), (SECRET, 0));
    let next = fresh(composed::summary("the key is hunter2"));
    assert_eq!(
        a.label_of(&digests(&next)),
        Accounted {
            label: SECRET,
            unaccounted: 0,
            sources: Vec::new(),
        }
    );
}

#[test]
fn before_anything_was_sent_an_unaccounted_message_is_private_and_loopd_cannot_register() {
    let f = File::new("floor");
    let a = f.open(16);
    let got = a.label_of(&[ChatMessage::user("hi").digest()]);
    assert_eq!((got.label, got.unaccounted), (OWNER, 1));
    assert_eq!(a.sent(), OWNER);
    // A notice for a call no completion made is not loopd's to write.
    let n = composed::tool_message("zz", &ToolResponse::failed(composed::INTERRUPTED));
    assert_eq!(a.label(&n.digest()), None);
}

#[test]
fn records_and_the_highest_label_sent_survive_a_restart_and_the_bound() {
    let f = File::new("durable");
    let mut a = f.open(8);
    let read = read_a_secret(&mut a);
    let tool = read[3].digest();
    drop(a);
    let mut a = f.open(8);
    assert_eq!(
        a.label(&tool),
        Some(SECRET),
        "the record survives a restart"
    );
    // Past the bound the secret record is forgotten, the file rewritten, and the message
    // then counts as unaccounted: still at the highest label sent.
    for i in 0..40u32 {
        a.owner(ChatMessage::user(format!("m{i}")).digest())
            .expect("owner");
    }
    assert_eq!(a.label(&tool), None);
    let lines = std::fs::read_to_string(&f.0).expect("read").lines().count();
    assert!(lines <= 17, "{lines} lines for 8 records kept");
    drop(a);
    let a = f.open(8);
    assert_eq!(
        a.sent(),
        SECRET,
        "the highest label sent outlives its records"
    );
    assert_eq!(a.label_of(&[tool]).label, SECRET);
    assert_eq!(a.label(&ChatMessage::user("m39").digest()), Some(OWNER));
    assert_eq!(a.label(&ChatMessage::user("m20").digest()), None);
}

#[test]
fn a_torn_last_line_is_cut_off_and_any_other_bad_line_refuses_start() {
    let f = File::new("torn");
    let mut a = f.open(64);
    a.owner(ChatMessage::user("kept").digest()).expect("owner");
    drop(a);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&f.0)
        .expect("open");
    file.write_all(b"{\"kind\":\"owner\",\"dig").expect("torn");
    drop(file);
    let mut a = f.open(64);
    assert_eq!(a.label(&ChatMessage::user("kept").digest()), Some(OWNER));
    a.owner(ChatMessage::user("after").digest()).expect("owner");
    drop(a);
    let a = f.open(64);
    assert_eq!(a.label(&ChatMessage::user("after").digest()), Some(OWNER));
    drop(a);
    std::fs::write(&f.0, "{\"kind\":\"owner\"}\n").expect("write");
    match Accounting::open(&f.0, 64, 8) {
        Err(LogError::Corrupt { line: 1, .. }) => {}
        other => panic!("not refused: {other:?}"),
    }
}

/// A response is labelled by what it carries, and at least at the label its call was
/// decided at: a denial's detail can echo the arguments a secret prompt made (X9).
#[test]
fn a_response_is_labelled_by_what_it_carries() {
    assert_eq!(of_response(&secret_result(), None, OWNER), SECRET);
    let failed = ToolResponse::failed("boom");
    assert_eq!(of_response(&failed, None, OWNER), OWNER);
    assert_eq!(
        of_response(&failed, Some(PUBLIC_UNTRUSTED), OWNER),
        Labels {
            class: DataClass::Private,
            untrusted: true
        }
    );
    assert_eq!(of_response(&failed, None, SECRET), SECRET);
    let denied = ToolResponse::Denied {
        reason: DenyReason::TaintTooHigh,
        detail: None,
    };
    assert_eq!(of_response(&denied, Some(SECRET), OWNER), OWNER);
    assert_eq!(of_response(&denied, None, SECRET), SECRET);
    let view = SessionView {
        taint: DataClass::Private,
        untrusted: false,
    };
    assert_eq!(view.raised(SECRET).taint, DataClass::Secret);
}

/// Through the attested context as brokerd holds it: a report is accounted as it is
/// recorded, and a claimed call carries its prompt's labels and the model's id, whose
/// result is then accounted.
#[test]
fn a_claimed_call_carries_the_labels_of_its_prompt() {
    use brokerd::context::witness::{Store, Witness};
    use brokerd::context::{Attested, Claimed};
    use proto::attest::WitnessRef;
    let f = File::new("attested");
    let dir = f.0.parent().expect("dir").join("witness");
    let (store, _) = Store::open(&dir, 64).expect("store");
    let witness = Witness::new(store, std::time::Duration::from_millis(10));
    let a = Attested::new(witness, f.open(64), dir.join("no-core.md"));
    let owner = ChatMessage::user("fetch it");
    a.owner(owner.digest()).expect("owner");
    let fetch = call("f1", "http_fetch", "{\"url\":\"https://example.org\"}");
    let ans = answer("tool_calls", None, vec![fetch.clone()]);
    let honest = [composed::system(composed::DEFAULT_CORE), owner];
    let r = report(1, &honest, &ans);
    a.record(r.clone()).expect("store").expect("recorded");
    let w = WitnessRef {
        completion: r.completion.clone(),
        index: 0,
    };
    let claimed = a
        .claim(Some(&w), &fetch.name, &fetch.arguments)
        .expect("claimed");
    assert_eq!(
        claimed,
        Claimed {
            prompt: Accounted {
                label: OWNER,
                unaccounted: 0,
                sources: Vec::new()
            },
            call_id: Some("f1".into()),
        }
    );
    a.returned(Some(&claimed), &secret_result(), None, OWNER, &[])
        .expect("returned");
    // A fresh prompt that quotes that result is labelled secret.
    let mut laundered = vec![composed::system(composed::DEFAULT_CORE)];
    laundered.push(composed::tool_message("f1", &secret_result()));
    let again = answer("tool_calls", None, vec![call("f2", "http_fetch", "{}")]);
    let r2 = report(2, &laundered, &again);
    a.record(r2.clone()).expect("store").expect("recorded");
    let w2 = WitnessRef {
        completion: r2.completion,
        index: 0,
    };
    let claimed = a.claim(Some(&w2), "http_fetch", "{}").expect("claimed");
    assert_eq!(claimed.prompt.label, SECRET);
}

/// A call is decided on the higher of the session's taint and its prompt's labels: a
/// session private to the owner's eyes is denied the egress call its secret prompt made.
#[test]
fn the_prompts_labels_raise_the_session_for_the_decision() {
    let s = snapshot(&[("web", &web("auto", ""))]);
    let args = fetch("https://example.org/x");
    let allowed = brokerd::policy::decide(&s, &args, PRIVATE.raised(Labels::NONE), now());
    assert_eq!(deny_reason(allowed.outcome()), None);
    let secret = Labels {
        class: DataClass::Secret,
        untrusted: false,
    };
    let raised = PRIVATE.raised(secret);
    assert_eq!(raised.taint, DataClass::Secret);
    let d = brokerd::policy::decide(&s, &args, raised, now());
    assert_eq!(deny_reason(d.outcome()), Some(DenyReason::TaintTooHigh));
    let untrusted = PRIVATE.raised(Labels {
        class: DataClass::Public,
        untrusted: true,
    });
    assert_eq!(
        (untrusted.taint, untrusted.untrusted),
        (DataClass::Private, true)
    );
}

/// The owner's core memory is read from its file as each report is accounted: a prompt that
/// starts from it is the owner's; one that starts from other text (a core memory loopd made
/// up) is not accounted for, and falls back to the highest label brokerd has sent.
#[test]
fn the_owners_core_memory_is_accounted_from_its_file() {
    use brokerd::context::Attested;
    use brokerd::context::witness::{Store, Witness};
    use proto::attest::WitnessRef;
    let f = File::new("corefile");
    let dir = f.0.parent().expect("dir").join("witness");
    let (store, _) = Store::open(&dir, 64).expect("store");
    let witness = Witness::new(store, std::time::Duration::from_millis(10));
    let core = dir.join("core.md");
    std::fs::write(&core, "You are terse.").expect("core");
    let a = Attested::new(witness, f.open(64), core.clone());
    let owner = ChatMessage::user("read it");
    a.owner(owner.digest()).expect("owner");
    let claim = |n: u8, system: &str| {
        let read = call(&format!("r{n}"), "read_file", "{\"path\":\"/v\"}");
        let ans = answer("tool_calls", None, vec![read.clone()]);
        let r = report(n, &[composed::system(system), owner.clone()], &ans);
        a.record(r.clone()).expect("store").expect("recorded");
        let w = WitnessRef {
            completion: r.completion,
            index: 0,
        };
        a.claim(Some(&w), &read.name, &read.arguments)
            .expect("claimed")
    };
    let first = claim(1, "You are terse.");
    assert_eq!(first.prompt.label, OWNER);
    a.returned(Some(&first), &secret_result(), None, OWNER, &[])
        .expect("returned");
    assert_eq!(claim(2, "You are evil.").prompt.label, SECRET);
    // An edit is the owner's too, from the next report on; the old text stays accounted
    // (an epoch pinned it).
    std::fs::write(&core, "You are kind.").expect("edit");
    assert_eq!(claim(3, "You are kind.").prompt.label, OWNER);
    assert_eq!(claim(4, "You are terse.").prompt.label, OWNER);
}
