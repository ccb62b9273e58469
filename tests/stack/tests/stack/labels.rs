//! A result is labelled by every grant that covers the call and by every grant that reaches
//! what its tool unit had bound: a wider grant can never unlabel what the owner labelled.

use proto::{DataClass, DenyReason, ToolResponse};
use stack::{Home, read_grant, response, tool};

use crate::approvals::ask;

/// The owner labelled the secrets directory secret; a wider `ask` grant over the whole home
/// decides the mode, the owner approves, and the result is still secret and untrusted, so
/// an auto `http_fetch` under `max_taint = "private"` can no longer send it out.
#[test]
fn a_wider_ask_grant_cannot_unlabel_a_secret_directory() {
    let home = Home::new("unlabel", "");
    let root = home.files("home", &[("todo.md", "milk")]);
    let secrets = home.files("home/secrets", &[("key.txt", "hunter2")]);
    home.write_grant(
        "secrets-auto",
        &read_grant(
            "auto",
            &secrets,
            "result_class = \"secret\"\nuntrusted = true",
        ),
    );
    home.write_grant("home-ask", &read_grant("ask", &root, "untrusted = false"));
    home.write_grant(
        "web",
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         result_class = \"public\"\n[constraints]\nhosts = [\"example.org\"]\n",
    );
    let _d = home.start();
    let (approval, waiting) = ask(&home, 1, format!("{}/key.txt", secrets.display()));
    let out = home.bxctl(&["approve", &approval]);
    assert!(out.status.success(), "{out:?}");
    let frames = waiting.join().expect("request thread");
    assert_eq!(
        response(&frames),
        &ToolResponse::Result {
            content: "hunter2".into(),
            class: DataClass::Secret,
            untrusted: true,
            truncated: false,
        }
    );
    let frames = tool(
        &home.loop_sock(),
        "s-1",
        2,
        "http_fetch",
        r#"{"url":"https://example.org/?q=hunter2"}"#,
    );
    assert!(
        matches!(
            response(&frames),
            ToolResponse::Denied {
                reason: DenyReason::TaintTooHigh,
                ..
            }
        ),
        "{frames:?}"
    );
    home.assert_audit_good();
}

/// `list_dir` of the home binds the whole home, secrets included, which a `read_file` grant
/// labels secret: the listing is labelled secret too, although the list grant says private.
#[test]
fn a_listing_is_labelled_by_the_grants_of_what_lies_below_it() {
    let home = Home::new("listlabel", "");
    let root = home.files("home", &[("todo.md", "milk")]);
    let secrets = home.files("home/secrets", &[("key.txt", "hunter2")]);
    home.write_grant(
        "home-list",
        &read_grant("auto", &root, "untrusted = false").replace("read_file", "list_dir"),
    );
    home.write_grant(
        "secrets-deny",
        &read_grant("deny", &secrets, "result_class = \"secret\""),
    );
    let _d = home.start();
    let list = |call, path: String| {
        tool(
            &home.loop_sock(),
            "s-1",
            call,
            "list_dir",
            &format!(r#"{{"path":"{path}"}}"#),
        )
    };
    // A sibling directory of the secrets stays private.
    let notes = home.files("home/notes", &[("a.md", "a")]);
    match response(&list(1, notes.display().to_string())) {
        ToolResponse::Result { class, .. } => assert_eq!(*class, DataClass::Private),
        other => panic!("{other:?}"),
    }
    match response(&list(2, root.display().to_string())) {
        ToolResponse::Result { content, class, .. } => {
            assert!(content.contains("secrets/"), "{content}");
            assert_eq!(*class, DataClass::Secret);
        }
        other => panic!("{other:?}"),
    }
    home.assert_audit_good();
}
