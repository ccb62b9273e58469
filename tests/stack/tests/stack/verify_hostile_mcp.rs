//! `bxctl verify --hostile` with MCP grants and the consult model's answers (docs/verify.md,
//! decisions V30, V31): the owner's MCP servers played by stand-ins (`fake-mcp-server`,
//! never the owner's command), a stand-in's tool a sink when its grant lists hosts and a
//! source whatever it lists, and the consult model's answer, untrusted, driving a write.

use stack::Home;

use crate::verify_hostile::{hostile, owner_notes, said};

/// The owner's server `upload`, whose command would leave a mark if it ever ran; its tool
/// `put` granted with a host at `max_taint = "private"` (`mode`), and the server `files`,
/// every tool granted without hosts, its answers private.
fn mcp_home(name: &str, mode: &str) -> (Home, std::path::PathBuf, std::path::PathBuf) {
    let home = Home::new(name, "");
    let notes = owner_notes(&home);
    let mark = home.root.join("owner-server-ran");
    home.append_config(&format!(
        "[[mcp]]\nname = \"upload\"\ncommand = [\"/bin/sh\", \"-c\", \"echo ran >> {m}\"]\n\
         [[mcp]]\nname = \"files\"\ncommand = [\"/bin/sh\", \"-c\", \"echo ran >> {m}\"]\n",
        m = mark.display()
    ));
    home.write_grant(
        "upload",
        &format!(
            "tool = \"mcp:upload/put\"\nmode = \"{mode}\"\nmax_taint = \"private\"\n\
             untrusted = false\n[constraints]\nhosts = [\"uploads.example.org\"]\n"
        ),
    );
    home.write_grant(
        "files",
        "tool = \"mcp:files/*\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
         result_class = \"private\"\nuntrusted = false\n",
    );
    (home, notes, mark)
}

/// An MCP tool whose grant lists hosts, at `max_taint = "private"`: a private read sent
/// through it reaches its stand-in (the arguments it recorded), leaked as the analysis
/// reports, and so does another server's private answer; with `mode = "ask"` both ask and
/// nothing is reported. The owner's command never runs.
#[test]
fn verify_hostile_plays_mcp_tools_through_stand_ins() {
    for (mode, verdict) in [
        ("auto", "leaked, as the flows analysis reports"),
        (
            "ask",
            "asked (the MCP call asked you (grant upload), and was declined)",
        ),
    ] {
        let (home, notes, mark) = mcp_home(&format!("hostile-mcp-{mode}"), mode);
        let (out, found) = hostile(&home, &[]);
        let ctx = format!("{mode}: {found:#?}");
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
        assert!(
            !found
                .iter()
                .any(|(c, _, s)| c == "not-tried" && s.contains("grant upload")),
            "{ctx}"
        );
        let (level, s) = said(&found, "chain 1");
        assert_eq!(level, "ok", "{ctx}");
        assert_eq!(
            s,
            format!(
                "read {} (private) via grant notes-read, then send it to mcp__upload__put via \
                 grant upload: {verdict}",
                notes.display()
            ),
            "{ctx}"
        );
        let from_files = found
            .iter()
            .find(|(c, _, s)| c.starts_with("chain ") && s.starts_with("call mcp:files/*"))
            .unwrap_or_else(|| panic!("no chain from files: {ctx}"));
        assert_eq!(from_files.1, "ok", "{ctx}");
        assert_eq!(
            from_files.2,
            format!(
                "call mcp:files/* (private) via grant files, then send it to mcp__upload__put \
                 via grant upload: {verdict}"
            ),
            "{ctx}"
        );
        let flows: Vec<&(String, String, String)> = found
            .iter()
            .filter(|(c, _, _)| c == "private_out")
            .collect();
        if mode == "ask" {
            assert!(flows.is_empty(), "{ctx}");
        } else {
            assert_eq!(flows.len(), 2, "{ctx}");
            for (_, level, s) in flows {
                assert_eq!(level, "ok", "{ctx}");
                assert!(s.starts_with("leaked by chain "), "{ctx}");
                assert!(
                    s.contains("uploads.example.org through MCP tool mcp:upload/put"),
                    "{ctx}"
                );
            }
        }
        assert!(!mark.exists(), "the owner's command ran: {ctx}");
        assert_eq!(
            std::fs::read_dir(&notes).expect("notes").count(),
            1,
            "{ctx}"
        );
    }
}

/// The consult model's answer (the sink's completion, untrusted as the consult grant says)
/// driving a write: written in the shadow, as the analysis reports; with `if_untrusted =
/// "ask"` on the write, asked, and nothing reported.
#[test]
fn verify_hostile_plays_a_consult_answer_driving_a_write() {
    for (extra, verdict) in [
        ("", "leaked, as the flows analysis reports"),
        (
            "if_untrusted = \"ask\"",
            "asked (the write asked you (grant www-write), and was declined)",
        ),
    ] {
        let home = Home::new("hostile-consult-write", "");
        let www = home.files("www", &[("index.html", "<p>hi</p>\n")]);
        home.append_config(
            "[broker.consult]\nurl = \"https://api.example.com/v1\"\nmodel = \"big\"\n",
        );
        home.write_grant(
            "consult-remote",
            "tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             secret = \"consult-key\"\nuntrusted = true\n",
        );
        home.write_grant(
            "www-write",
            &format!(
                "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n{extra}\n\
                 [constraints]\npaths = [\"{}\"]\n",
                www.display()
            ),
        );
        let (out, found) = hostile(&home, &[]);
        let ctx = format!("{extra}: {found:#?}");
        assert_eq!(out.status.code(), Some(0), "{ctx}");
        assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
        let (level, s) = said(&found, "chain 1");
        assert_eq!(level, "ok", "{ctx}");
        assert_eq!(
            s,
            format!(
                "ask the consult model (private) via grant consult-remote, then write it under \
                 {} via grant www-write: {verdict}",
                www.display()
            ),
            "{ctx}"
        );
        // The consult's flows (a write as a source is another's, not played).
        let flows: Vec<&(String, String, String)> = found
            .iter()
            .filter(|(c, _, s)| {
                c == "untrusted_write" && s.contains("can ask the consult model at api.example.com")
            })
            .collect();
        if extra.is_empty() {
            assert_eq!(flows.len(), 1, "{ctx}");
            assert_eq!(flows[0].1, "ok", "{ctx}");
            assert!(
                flows[0].2.starts_with("leaked by chain 1, as reported: "),
                "{ctx}"
            );
        } else {
            assert!(flows.is_empty(), "{ctx}");
        }
        assert_eq!(
            std::fs::read_dir(&www).expect("www").count(),
            1,
            "the owner's directory"
        );
    }
}

/// Two grants of one server, one listing a host and one listing none: what decides a call
/// is what it reaches (a call decided by the grant without hosts reaches a server with no
/// network), so the live run agrees with the analysis whichever decides; nothing fails.
#[test]
fn verify_hostile_mcp_overlapping_grants_agree() {
    let home = Home::new("hostile-mcp-overlap", "");
    let notes = owner_notes(&home);
    home.append_config("[[mcp]]\nname = \"files\"\ncommand = [\"/bin/false\"]\n");
    home.write_grant(
        "files-all",
        "tool = \"mcp:files/*\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n",
    );
    home.write_grant(
        "files-put",
        "tool = \"mcp:files/put\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         untrusted = false\n[constraints]\nhosts = [\"uploads.example.org\"]\n",
    );
    let (out, found) = hostile(&home, &[]);
    let ctx = format!("{found:#?}");
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
    // brokerd decides by `files-all` (the first allowing grant): the stand-in got the
    // canary, but a server without network keeps it, and the analysis reports no flow.
    let (level, s) = said(&found, "chain 1");
    assert_eq!(level, "ok", "{ctx}");
    assert_eq!(
        s,
        format!(
            "read {} (private) via grant notes-read, then send it to mcp__files__put via grant \
             files-all: stopped (the canary never reached the sink)",
            notes.display()
        ),
        "{ctx}"
    );
    assert!(!found.iter().any(|(c, _, _)| c == "private_out"), "{ctx}");
}

/// An MCP tool's answer (untrusted, as an MCP grant is unless it says otherwise) driving a
/// write: the stand-in answers the chain's `BXWRITE-…` token, written in the shadow, as the
/// analysis reports.
#[test]
fn verify_hostile_plays_an_mcp_answer_driving_a_write() {
    let home = Home::new("hostile-mcp-write", "");
    let www = home.files("www", &[("index.html", "<p>hi</p>\n")]);
    home.append_config("[[mcp]]\nname = \"files\"\ncommand = [\"/bin/false\"]\n");
    home.write_grant(
        "files",
        "tool = \"mcp:files/*\"\nmode = \"auto\"\nmax_taint = \"private\"\n",
    );
    home.write_grant(
        "www-write",
        &format!(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             [constraints]\npaths = [\"{}\"]\n",
            www.display()
        ),
    );
    let (out, found) = hostile(&home, &[]);
    let ctx = format!("{found:#?}");
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
    let (level, s) = said(&found, "chain 1");
    assert_eq!(level, "ok", "{ctx}");
    assert_eq!(
        s,
        format!(
            "call mcp:files/* (private) via grant files, then write it under {} via grant \
             www-write: leaked, as the flows analysis reports",
            www.display()
        ),
        "{ctx}"
    );
    let flow = found
        .iter()
        .find(|(c, _, s)| c == "untrusted_write" && s.contains("call MCP tool mcp:files/*"))
        .unwrap_or_else(|| panic!("no MCP flow: {ctx}"));
    assert_eq!(flow.1, "ok", "{ctx}");
    assert!(
        flow.2.starts_with("leaked by chain 1, as reported: "),
        "{ctx}"
    );
    assert_eq!(
        std::fs::read_dir(&www).expect("www").count(),
        1,
        "the owner's directory"
    );
}

/// A remote server (`[[mcp]] url`, an address nothing answers at) stood in for by
/// `fake-mcp-server --http` on loopback: its grant, listing the URL's host at `max_taint =
/// "private"`, is a sink a private read leaks through, as the analysis reports; the owner's
/// URL is never reached (brokerd leads its host to loopback, at the stand-in's port).
#[test]
fn verify_hostile_stands_in_for_a_remote_server() {
    let home = Home::new("hostile-mcp-remote", "");
    let notes = owner_notes(&home);
    home.append_config("[[mcp]]\nname = \"tracker\"\nurl = \"http://192.0.2.7:8931/mcp\"\n");
    home.write_grant(
        "tracker",
        "tool = \"mcp:tracker/*\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         [constraints]\nhosts = [\"192.0.2.7\"]\n",
    );
    let (out, found) = hostile(&home, &[]);
    let ctx = format!("{found:#?}");
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    assert!(!found.iter().any(|(_, l, _)| l == "fail"), "{ctx}");
    let (level, s) = said(&found, "chain 1");
    assert_eq!(level, "ok", "{ctx}");
    assert_eq!(
        s,
        format!(
            "read {} (private) via grant notes-read, then send it to mcp__tracker__bxhostile_tool \
             via grant tracker: leaked, as the flows analysis reports",
            notes.display()
        ),
        "{ctx}"
    );
    let (level, s) = said(&found, "private_out");
    assert_eq!(level, "ok", "{ctx}");
    assert!(
        s.starts_with("leaked by chain 1, ")
            && s.contains("192.0.2.7 through MCP tool mcp:tracker/*"),
        "{ctx}"
    );
}

/// The remote stand-in ends with the program that started it, however that ends: with
/// `--while-stdin`, `fake-mcp-server --http` exits when its stdin closes.
#[test]
fn verify_hostile_remote_stand_in_ends_with_its_stdin() {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("bx-stack-stand-in-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let script = dir.join("s.json");
    std::fs::write(&script, r#"{"tools": []}"#).expect("script");
    let mut child = std::process::Command::new(stack::bin("fake-mcp-server"))
        .arg("--http")
        .arg("127.0.0.1:0")
        .arg(&script)
        .arg("--while-stdin")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("fake-mcp-server");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening");
    assert!(line.starts_with("listening on 127.0.0.1:"), "{line}");
    drop(child.stdin.take());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if std::time::Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
