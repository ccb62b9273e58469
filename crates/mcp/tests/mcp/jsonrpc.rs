//! Messages from the server sorted into exactly one kind, strictly.

use mcp::jsonrpc::{Id, Incoming, error_response, parse_incoming};

fn parse(text: &str) -> Result<Incoming, String> {
    parse_incoming(text.as_bytes()).map_err(|e| e.to_string())
}

#[test]
fn each_kind_is_recognised() {
    assert!(matches!(
        parse(r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#),
        Ok(Incoming::Response {
            id: Id::Number(3),
            ..
        })
    ));
    assert_eq!(
        parse(
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"no","data":{"x":1}}}"#
        ),
        Ok(Incoming::Error {
            id: Some(Id::String("a".into())),
            code: -32602,
            message: "no".into()
        })
    );
    assert_eq!(
        parse(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#),
        Ok(Incoming::Error {
            id: None,
            code: -32700,
            message: "parse".into()
        })
    );
    // server-everything's own spelling: members in another order, id 0.
    assert_eq!(
        parse(r#"{"method": "roots/list", "jsonrpc": "2.0", "id": 0}"#),
        Ok(Incoming::Request {
            id: Id::Number(0),
            method: "roots/list".into()
        })
    );
    assert_eq!(
        parse(r#"{"method":"notifications/tools/list_changed","jsonrpc":"2.0"}"#),
        Ok(Incoming::Notification {
            method: "notifications/tools/list_changed".into()
        })
    );
}

#[test]
fn anything_else_is_refused() {
    for (text, why) in [
        (
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
            "not a JSON object",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{},"extra":1}"#,
            "\"extra\"",
        ),
        (r#"{"jsonrpc":"1.0","id":1,"result":{}}"#, "jsonrpc"),
        (r#"{"id":1,"result":{}}"#, "jsonrpc"),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
            "exactly one",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            "not an integer",
        ),
        (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, "neither"),
        (r#"{"jsonrpc":"2.0","result":{}}"#, "without an id"),
        (r#"{"jsonrpc":"2.0","id":1,"result":[]}"#, "not an object"),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#,
            "integer code",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
            "duplicate key",
        ),
        ("not json", "not JSON"),
    ] {
        let err = parse(text).expect_err(text);
        assert!(err.contains(why), "{text}: {err}");
    }
}

#[test]
fn a_refusal_answers_the_servers_own_id() {
    let answer = error_response(&Id::String("req-1".into()), -32601, "refused");
    assert_eq!(
        answer,
        r#"{"error":{"code":-32601,"message":"refused"},"id":"req-1","jsonrpc":"2.0"}"#
    );
}
