//! Real-peer tier for MCP through brokerd (ignored; `tests/gate` step `mcp` runs it after
//! `tests/mcp/setup.sh`): the reference servers from PyPI and npm configured as `[[mcp]]`
//! servers, pinned with `bxctl mcp pin` (brokerd lists them through the direct runner) and
//! called as the model's calls are; a real changed list (mcp-server-time's descriptions
//! name its `--local-timezone`) refused; mcp-server-fetch's own description, which tells the
//! model to trust the tool over its own limits, offered as pinned and nothing more.

use std::path::PathBuf;

use proto::mcp::McpFailure;
use proto::{DenyReason, ToolFailure, ToolResponse};
use stack::mcp::mcp_grant;
use stack::{Home, response, tool};

fn bin(var: &str, name: &str) -> String {
    match std::env::var_os(var) {
        Some(dir) => PathBuf::from(dir).join(name).to_string_lossy().into_owned(),
        None => panic!("{var} is not set: eval \"$(tests/mcp/setup.sh)\" (tests/gate mcp does)"),
    }
}

fn server(home: &Home, name: &str, command: &[String]) {
    let argv: Vec<String> = command.iter().map(|a| format!("{a:?}")).collect();
    home.append_config(&format!(
        "\n[[mcp]]\nname = \"{name}\"\ncommand = [{}]\n",
        argv.join(", ")
    ));
}

fn result(r: &ToolResponse) -> &str {
    match r {
        ToolResponse::Result { content, .. } => content,
        other => panic!("not a result: {other:?}"),
    }
}

fn call(home: &Home, session: &str, n: u64, name: &str, args: &str) -> ToolResponse {
    response(&tool(&home.loop_sock(), session, n, name, args)).clone()
}

#[test]
#[ignore = "real peer: needs tests/mcp/setup.sh"]
fn realpeer_time_pinned_called_and_its_changed_list_refused_through_brokerd() {
    let home = Home::new("mcp-real-time", "");
    let time = bin("BOXMAKER_MCP_PYTHON_BIN", "mcp-server-time");
    server(
        &home,
        "time",
        &[time, "--local-timezone".into(), "UTC".into()],
    );
    home.write_grant("time", &mcp_grant("mcp:time/*", "untrusted = false"));
    let mut brokerd = home.start();
    let shown = home.mcp_pinned("time");
    assert!(shown.contains("mcp__time__get_current_time"), "{shown}");
    let r = call(
        &home,
        "s-1",
        1,
        "mcp__time__get_current_time",
        r#"{"timezone":"Asia/Tokyo"}"#,
    );
    assert!(result(&r).contains("Asia/Tokyo"), "{r:?}");
    let bad = call(
        &home,
        "s-1",
        2,
        "mcp__time__get_current_time",
        r#"{"timezone":7}"#,
    );
    assert!(matches!(
        bad,
        ToolResponse::Denied {
            reason: DenyReason::InvalidArguments,
            ..
        }
    ));
    // The same server started otherwise lists other descriptions: refused until pinned.
    brokerd.kill();
    drop(brokerd);
    let config = std::fs::read_to_string(home.config()).expect("config");
    std::fs::write(home.config(), config.replace("\"UTC\"", "\"Europe/Paris\"")).expect("config");
    let _brokerd = home.start();
    let r = call(
        &home,
        "s-1",
        3,
        "mcp__time__get_current_time",
        r#"{"timezone":"UTC"}"#,
    );
    assert!(
        matches!(
            &r,
            ToolResponse::Failed {
                failure: Some(ToolFailure::Mcp {
                    failure: McpFailure::McpChanged { .. }
                }),
                ..
            }
        ),
        "{r:?}"
    );
    let shown = home.mcp_pinned("time");
    assert!(shown.contains("Europe/Paris"), "{shown}");
    let r = call(
        &home,
        "s-1",
        4,
        "mcp__time__get_current_time",
        r#"{"timezone":"UTC"}"#,
    );
    assert!(result(&r).contains("UTC"), "{r:?}");
    home.assert_audit_good();
}

#[test]
#[ignore = "real peer: needs tests/mcp/setup.sh"]
fn realpeer_fetch_git_filesystem_and_everything_through_brokerd() {
    let home = Home::new("mcp-real-all", "");
    let files = home.files("shared", &[("hello.txt", "hello from the owner\n")]);
    let repo = home.files("repo", &[("README", "a repository\n")]);
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("git");
        assert!(ok.status.success(), "{ok:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "first"]);
    let py = |n: &str| bin("BOXMAKER_MCP_PYTHON_BIN", n);
    let node = |n: &str| bin("BOXMAKER_MCP_NODE_BIN", n);
    server(&home, "fetch", &[py("mcp-server-fetch")]);
    server(&home, "git", &[py("mcp-server-git")]);
    server(
        &home,
        "files",
        &[node("mcp-server-filesystem"), files.display().to_string()],
    );
    server(&home, "everything", &[node("mcp-server-everything")]);
    home.write_grant(
        "fetch",
        &mcp_grant(
            "mcp:fetch/fetch",
            "[constraints.args]\n\"/url\" = [\"https://example.org/*\"]\n",
        ),
    );
    home.write_grant(
        "git",
        &mcp_grant(
            "mcp:git/*",
            &format!(
                "[constraints.args]\n\"/repo_path\" = [\"{}\"]\n",
                repo.display()
            ),
        ),
    );
    home.write_grant("files", &mcp_grant("mcp:files/*", ""));
    home.write_grant("everything", &mcp_grant("mcp:everything/*", ""));
    let _d = home.start();
    for name in ["fetch", "git", "files", "everything"] {
        home.mcp_pinned(name);
    }
    // mcp-server-fetch's own description, offered exactly as pinned.
    let offered: serde_json::Value = serde_json::from_str(&home.offered().tools).expect("tools");
    let fetch = offered
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "mcp__fetch__fetch")
        .expect("fetch offered");
    let description = fetch["function"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(description.contains("internet"), "{description}");
    // No network for the test: the grant's pattern refuses any other URL first.
    let r = call(
        &home,
        "s-1",
        1,
        "mcp__fetch__fetch",
        r#"{"url":"https://attacker.example/"}"#,
    );
    assert!(
        matches!(
            r,
            ToolResponse::Denied {
                reason: DenyReason::NoGrant,
                ..
            }
        ),
        "{r:?}"
    );
    let status = format!(r#"{{"repo_path":"{}"}}"#, repo.display());
    let r = call(&home, "s-1", 2, "mcp__git__git_status", &status);
    assert!(result(&r).contains("branch"), "{r:?}");
    let other = r#"{"repo_path":"/etc"}"#;
    let r = call(&home, "s-1", 3, "mcp__git__git_status", other);
    assert!(matches!(r, ToolResponse::Denied { .. }), "{r:?}");
    let list = format!(r#"{{"path":"{}"}}"#, files.display());
    let r = call(&home, "s-1", 4, "mcp__files__list_directory", &list);
    assert!(result(&r).contains("hello.txt"), "{r:?}");
    let r = call(
        &home,
        "s-1",
        5,
        "mcp__everything__echo",
        r#"{"message":"hi"}"#,
    );
    assert!(result(&r).contains("hi"), "{r:?}");
    home.assert_audit_good();
}

/// server-everything in its streamable HTTP mode on loopback, a remote server
/// (`[[mcp]] url`): pinned from the probe's unit, called from the call's unit at the URL
/// host's address and labelled by its grant, and a grant that does not list the host runs
/// nothing. (Its sampling tool is listed only to a client that declares sampling, which
/// boxmaker's never does; the fake's sampling over HTTP is the toolkit's test.)
#[test]
#[ignore = "real peer: needs tests/mcp/setup.sh"]
fn realpeer_everything_over_streamable_http_through_brokerd() {
    let home = Home::new("mcp-real-remote", "");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = std::process::Command::new(bin("BOXMAKER_MCP_NODE_BIN", "mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("server-everything");
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Stop(child);
    let mut waited = 0;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(waited < 150, "server-everything did not listen on {port}");
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    home.append_config(&format!("\n[[mcp]]\nname = \"far\"\nurl = \"{url}\"\n"));
    home.write_grant(
        "echo",
        &mcp_grant(
            "mcp:far/echo",
            "result_class = \"public\"\n[constraints]\nhosts = [\"127.0.0.1\"]",
        ),
    );
    home.write_grant("nohost", &mcp_grant("mcp:far/get-sum", ""));
    let _d = home.start();
    let shown = home.mcp_pinned("far");
    assert!(shown.contains("mcp__far__echo"), "{shown}");
    assert!(shown.contains(&format!("reached at {url}")), "{shown}");
    let r = call(
        &home,
        "s-1",
        1,
        "mcp__far__echo",
        r#"{"message":"over http"}"#,
    );
    let ToolResponse::Result {
        content,
        class,
        untrusted,
        ..
    } = &r
    else {
        panic!("{r:?}")
    };
    assert_eq!(content, "Echo: over http");
    // The grant's labels joined with the decided-at label, as for a stdio server.
    assert_eq!((*class, *untrusted), (proto::DataClass::Private, true));
    let r = call(&home, "s-1", 3, "mcp__far__get-sum", r#"{"a":1,"b":2}"#);
    let ToolResponse::Failed { message, .. } = &r else {
        panic!("{r:?}")
    };
    assert!(message.contains("do not list"), "{message}");
    home.assert_audit_good();
}
