//! The fake writes what the reference servers write: for each kind of message the fake
//! sends, the same request goes to a real server and to the fake, and every member the
//! fake's message has must be in the real one, holding the same kind of JSON value, all
//! the way down (a real message may say more).

use mcp::Declared;
use serde_json::{Value, json};

use super::{Tape, initialize, node, python, start};

/// Members whose content is the tool's or the server's own (a schema), compared as objects
/// only.
const OPAQUE: [&str; 3] = ["inputSchema", "requestedSchema", "structuredContent"];

/// `fake`'s shape is within `real`'s: the same JSON type, and for an object every member of
/// `fake` in `real` with a shape within it; for arrays, the first elements compared.
fn assert_within(what: &str, fake: &Value, real: &Value, at: &str) {
    let opaque = OPAQUE.iter().any(|o| at.ends_with(&format!("/{o}")));
    match (fake, real) {
        (Value::Object(_), Value::Object(_)) if opaque => {}
        (Value::Object(f), Value::Object(r)) => {
            for (key, value) in f {
                let there = r.get(key).unwrap_or_else(|| {
                    panic!("{what}: the fake writes {at}/{key}, the real server does not: {real}")
                });
                assert_within(what, value, there, &format!("{at}/{key}"));
            }
        }
        (Value::Array(f), Value::Array(r)) => {
            if let (Some(f), Some(r)) = (f.first(), r.first()) {
                assert_within(what, f, r, &format!("{at}/0"));
            }
        }
        (Value::Number(_), Value::Number(_))
        | (Value::String(_), Value::String(_))
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Null, Value::Null) => {}
        _ => panic!("{what}: at {at} the fake writes {fake}, the real server {real}"),
    }
}

/// The first message on `tape` that `pick` chooses.
fn find(tape: &Tape, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
    tape.messages()
        .into_iter()
        .find(|m| pick(m))
        .unwrap_or_else(|| panic!("{what}: no such message in {:?}", tape.messages()))
}

fn by_id(id: i64) -> impl Fn(&Value) -> bool {
    move |m| m.get("id") == Some(&json!(id)) && m.get("method").is_none()
}

fn by_method(method: &'static str) -> impl Fn(&Value) -> bool {
    move |m| m.get("method") == Some(&json!(method))
}

/// The fake binary, built next to this test's executables.
fn fake_argv(script: &str) -> (Vec<String>, super::Scratch) {
    let dir = super::Scratch::new("shapes");
    let path = dir.0.join("script.json");
    std::fs::write(&path, script).expect("script");
    let exe = std::env::current_exe().expect("exe");
    let bin = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target")
        .join("fake-mcp-server");
    assert!(
        bin.exists(),
        "{} is not built: cargo build --workspace --bins",
        bin.display()
    );
    (
        vec![
            bin.to_string_lossy().into_owned(),
            path.to_string_lossy().into_owned(),
        ],
        dir,
    )
}

const FAKE: &str = r#"{"tools": [
  {"name": "text", "description": "d", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}, "result": {"content": [{"text": "hello"}]}},
  {"name": "fail", "result": {"content": [{"text": "it broke"}], "is_error": true}},
  {"name": "sample", "steps": [{"ask": "sampling/createMessage"}]},
  {"name": "elicit", "steps": [{"ask": "elicitation/create"}]},
  {"name": "image", "result": {"content": [{"text": "an image:"}, {"image": "image/png"}]}},
  {"name": "links", "result": {"content": [{"text": "links:"}, {"resource_link": "demo://resource/dynamic/text/1"}]}},
  {"name": "resource", "result": {"content": [{"text": "a resource:"}, {"resource": ["demo://resource/dynamic/text/1", "text"]}]}},
  {"name": "log", "steps": [{"notify": "notifications/message"}], "result": {"content": [{"text": "logged"}]}}
], "on_initialized": [{"notify": "notifications/tools/list_changed"}, {"ask": "roots/list"}]}"#;

#[test]
#[ignore = "real peer: needs tests/mcp/setup.sh"]
fn the_fake_writes_what_the_reference_servers_write() {
    let (argv, _dir) = fake_argv(FAKE);
    let declared = Declared {
        sampling: true,
        elicitation: true,
        roots: true,
    };
    let (mut fake, fake_peer) = start(&argv);
    initialize(&mut fake, declared);
    fake.list_tools().expect("fake list");
    let (mut time, time_peer) = start(&[python("mcp-server-time")]);
    initialize(&mut time, declared);
    time.list_tools().expect("time list");
    let (mut every, every_peer) = start(&[node("mcp-server-everything")]);
    initialize(&mut every, declared);
    every.list_tools().expect("everything list");
    let (f, t, e) = (&fake_peer.tape, &time_peer.tape, &every_peer.tape);
    // initialize and tools/list: the Python SDK's.
    assert_within(
        "initialize",
        &find(f, "fake", by_id(1)),
        &find(t, "time", by_id(1)),
        "",
    );
    assert_within(
        "tools/list",
        &find(f, "fake", by_id(2)),
        &find(t, "time", by_id(2)),
        "",
    );
    // A notification and a request after initialized: server-everything's.
    let changed = by_method("notifications/tools/list_changed");
    assert_within(
        "list_changed",
        &find(f, "fake", &changed),
        &find(e, "everything", &changed),
        "",
    );
    // server-everything asks for the roots for this tool (and 350 ms after initialized).
    every
        .call_tool("get-roots-list", &json!({}))
        .expect("roots");
    let roots = by_method("roots/list");
    assert_within(
        "roots/list",
        &find(f, "fake", &roots),
        &find(e, "everything", &roots),
        "",
    );

    // Calls: each the same in kind on both sides; the results compared by the call's id.
    let calls: [(&str, Value, &str, Value, &Tape); 7] = [
        (
            "text",
            json!({"x": "a"}),
            "get_current_time",
            json!({"timezone": "UTC"}),
            t,
        ),
        (
            "fail",
            json!({}),
            "get_current_time",
            json!({"timezone": "Nowhere/Nothing"}),
            t,
        ),
        ("image", json!({}), "get-tiny-image", json!({}), e),
        (
            "links",
            json!({}),
            "get-resource-links",
            json!({"count": 1}),
            e,
        ),
        (
            "resource",
            json!({}),
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 1}),
            e,
        ),
        (
            "sample",
            json!({}),
            "trigger-sampling-request",
            json!({"prompt": "hi"}),
            e,
        ),
        (
            "elicit",
            json!({}),
            "trigger-elicitation-request",
            json!({}),
            e,
        ),
    ];
    let mut next_fake = 3;
    let (mut next_time, mut next_every) = (3, 4);
    for (fake_tool, fake_args, real_tool, real_args, tape) in calls {
        fake.call_tool(fake_tool, &fake_args).expect("fake call");
        let real_id = if std::ptr::eq(tape, t) {
            time.call_tool(real_tool, &real_args).expect("time call");
            next_time += 1;
            next_time - 1
        } else {
            every
                .call_tool(real_tool, &real_args)
                .expect("everything call");
            next_every += 1;
            next_every - 1
        };
        assert_within(
            fake_tool,
            &find(f, fake_tool, by_id(next_fake)),
            &find(tape, real_tool, by_id(real_id)),
            "",
        );
        next_fake += 1;
    }
    // The server's requests in the middle of a call.
    for method in ["sampling/createMessage", "elicitation/create"] {
        assert_within(
            method,
            &find(f, method, by_method(method)),
            &find(e, method, by_method(method)),
            "",
        );
    }
    // A tool the server does not have: a JSON-RPC error, as the Python servers answer.
    let err = fake
        .call_tool("nosuch", &json!({}))
        .expect_err("fake unknown");
    let real = time
        .call_tool("nosuch", &json!({}))
        .expect_err("time unknown");
    assert_eq!(
        (
            err.to_string().contains("-32602"),
            real.to_string().contains("-32602")
        ),
        (true, true),
        "{err} / {real}"
    );
    assert_within(
        "unknown tool",
        &find(f, "fake", by_id(next_fake)),
        &find(t, "time", by_id(next_time)),
        "",
    );
}
