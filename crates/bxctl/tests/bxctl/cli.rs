//! bxctl without a daemon: grant checks and audit verification on files, and what it says
//! and exits with when it cannot do what was asked.

use std::process::Command;

fn bxctl(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bxctl"))
        .args(args)
        .output()
        .expect("bxctl")
}

fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("bx-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

#[test]
fn grants_check_reports_the_file_line_and_reason() {
    let dir = temp("grants");
    std::fs::write(
        dir.join("notes.toml"),
        "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
         [constraints]\npaths = [\"/home/owner/notes\"]\n",
    )
    .expect("write");
    let ok = bxctl(&["grants", "check", dir.to_str().expect("utf8")]);
    assert!(ok.status.success());
    assert!(String::from_utf8_lossy(&ok.stdout).contains("1 grants good (notes)"));
    std::fs::write(
        dir.join("web.toml"),
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n",
    )
    .expect("write");
    let bad = bxctl(&["grants", "check", dir.to_str().expect("utf8")]);
    assert_eq!(bad.status.code(), Some(1));
    let text = String::from_utf8_lossy(&bad.stdout);
    assert!(
        text.contains("web.toml") && text.contains("constraints.hosts"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn grants_check_refuses_a_shell_without_its_key_and_warns_of_any_argument() {
    let dir = temp("grants-run");
    let grant = "tool = \"run\"\nmode = \"ask\"\nmax_taint = \"private\"\n\
                 [constraints]\nprograms = [\"sh\"]\npatterns = [\"*\"]\n";
    std::fs::write(dir.join("shell.toml"), grant).expect("write");
    let bad = bxctl(&["grants", "check", dir.to_str().expect("utf8")]);
    assert_eq!(bad.status.code(), Some(1));
    let text = String::from_utf8_lossy(&bad.stdout);
    assert!(
        text.contains("shell.toml") && text.contains("constraints.shell = true"),
        "{text}"
    );
    std::fs::write(dir.join("shell.toml"), format!("{grant}shell = true\n")).expect("write");
    let ok = bxctl(&["grants", "check", dir.to_str().expect("utf8")]);
    assert!(ok.status.success(), "{ok:?}");
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(
        text.contains("warning: grant shell passes any argument to sh"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn audit_verify_names_the_first_bad_file_and_line() {
    let dir = temp("audit");
    let mut prev = proto::Hash32::ZERO;
    let mut text = String::new();
    for seq in 0..3u64 {
        let line =
            serde_json::to_string(&proto::AuditLine::Event(proto::AuditEvent::GrantsLoaded {
                seq,
                time: proto::Timestamp::from_millis(1_789_632_300_000).expect("time"),
                prev,
                snapshot: proto::Hash32::ZERO,
                grants: vec![],
                texts: Default::default(),
                since: None,
            }))
            .expect("line");
        prev = proto::chain::line_hash(line.as_bytes());
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(dir.join("2026-09-17.jsonl"), &text).expect("write");
    let d = dir.to_str().expect("utf8");
    let ok = bxctl(&["audit", "verify", "--dir", d]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("3 records"));
    // Change the middle record: the record after it no longer links.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[1] = lines[1].replace("\"grants\":[]", "\"grants\":[\"x\"]");
    std::fs::write(dir.join("2026-09-17.jsonl"), lines.join("\n") + "\n").expect("write");
    let bad = bxctl(&["audit", "verify", "--dir", d]);
    assert_eq!(bad.status.code(), Some(1));
    let out = String::from_utf8_lossy(&bad.stdout);
    assert!(out.contains("2026-09-17.jsonl line 3"), "{out}");
    let shown = bxctl(&["audit", "show", "--dir", d]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("#0 "));
    let _ = std::fs::remove_dir_all(&dir);
}

fn run(args: &[&str]) -> Result<std::process::ExitCode, bxctl::Error> {
    use clap::Parser;
    let cli = bxctl::Cli::try_parse_from(std::iter::once("bxctl").chain(args.iter().copied()))
        .expect("arguments");
    bxctl::run(cli, &mut Vec::new())
}

#[test]
fn what_bxctl_cannot_do_is_its_own_variant_and_exits_2() {
    let dir = temp("errors");
    let missing = dir.join("absent.toml");
    let config = missing.to_str().expect("utf8");
    assert!(matches!(
        run(&["--config", config, "approvals"]),
        Err(bxctl::Error::NoConfig { path, from: "from --config" }) if path == missing
    ));
    let out = bxctl(&["--config", config, "approvals"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "bxctl: no configuration at {config} (from --config)\nhelp: "
        )) && stderr.ends_with('\n'),
        "{stderr}"
    );

    // A configuration whose admin socket nobody listens on.
    let run_dir = dir.join("run");
    let text = format!(
        "[sockets]\nloop_broker = \"{0}/lb\"\nadmin_broker = \"{0}/ab\"\nchat_loop = \"{0}/cl\"\n\
         [peers]\nloopd = {{ uid = 1 }}\nadmin = {{ uid = 1 }}\n",
        run_dir.display()
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("config");
    let config = path.to_str().expect("utf8");
    match run(&["--config", config, "approvals"]) {
        Err(bxctl::Error::Reach {
            server: "brokerd",
            path,
            ..
        }) => assert_eq!(path, run_dir.join("ab/broker.sock")),
        other => panic!("not unreachable: {other:?}"),
    }
    let out = bxctl(&["--config", config, "sessions"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "bxctl: cannot reach loopd at {}: ",
        run_dir.join("cl/loop.sock").display()
    );
    assert!(stderr.starts_with(&want), "{stderr}");
    assert!(matches!(
        run(&["--config", config, "session", "not a session id!"]),
        Err(bxctl::Error::SessionId(_))
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn boxmaker_config_names_the_configuration_for_every_subcommand() {
    let dir = temp("env");
    let grants = dir.join("grants");
    std::fs::create_dir_all(&grants).expect("grants");
    std::fs::write(
        grants.join("notes.toml"),
        "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
         [constraints]\npaths = [\"/home/owner/notes\"]\n",
    )
    .expect("grant");
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "home = \"{0}/home\"\ngrants = \"{0}/grants\"\n[sockets]\nloop_broker = \"{0}/lb\"\n\
             admin_broker = \"{0}/ab\"\nchat_loop = \"{0}/cl\"\n\
             [peers]\nloopd = {{ uid = 1 }}\nadmin = {{ uid = 1 }}\n",
            dir.display()
        ),
    )
    .expect("config");
    let with_env = |value: &std::path::Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_bxctl"))
            .args(args)
            .env("BOXMAKER_CONFIG", value)
            .output()
            .expect("bxctl")
    };
    // A subcommand that reads the configuration's grants directory.
    let out = with_env(&config, &["grants", "check"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("{}: 1 grants good", grants.display())),
        "{out:?}"
    );
    // One that reaches a socket the configuration names.
    let out = with_env(&config, &["approvals"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("{}/ab/broker.sock", dir.display())),
        "{out:?}"
    );
    // A missing one says where it looked and who said so; --config wins over the variable.
    let missing = dir.join("absent.toml");
    let out = with_env(&missing, &["sessions"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "bxctl: no configuration at {} (from BOXMAKER_CONFIG)\nhelp: ",
            missing.display()
        )),
        "{err}"
    );
    let out = with_env(
        &missing,
        &[
            "--config",
            config.to_str().expect("utf8"),
            "grants",
            "check",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_lists_the_exit_codes() {
    let out = bxctl(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "Exit codes:",
        "  0  done",
        "  1  a check failed",
        "  2  bxctl could not do",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
    // A usage error is 2.
    assert_eq!(
        bxctl(&["approvals", "--no-such-flag"]).status.code(),
        Some(2)
    );
}

#[test]
fn audit_verify_without_a_log_says_so_and_fails() {
    let dir = temp("no-audit");
    let d = dir.to_str().expect("utf8");
    let out = bxctl(&["audit", "verify", "--dir", d]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!("no audit log in {d}: ")) && text.contains("\nhelp: "),
        "{text}"
    );
    let out = bxctl(&["audit", "verify", "--dir", d, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["good"], false);
    assert_eq!(v["error"], "no audit log");
    // A directory that does not exist cannot be read at all: 2.
    let gone = dir.join("gone");
    let out = bxctl(&["audit", "verify", "--dir", gone.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn audit_verify_json_has_the_chain_head_or_the_break() {
    let dir = temp("audit-json");
    let line = serde_json::to_string(&proto::AuditLine::Event(proto::AuditEvent::GrantsLoaded {
        seq: 0,
        time: proto::Timestamp::from_millis(1_789_632_300_000).expect("time"),
        prev: proto::Hash32::ZERO,
        snapshot: proto::Hash32::ZERO,
        grants: vec![],
        texts: Default::default(),
        since: None,
    }))
    .expect("line");
    std::fs::write(dir.join("2026-09-17.jsonl"), format!("{line}\n")).expect("write");
    let d = dir.to_str().expect("utf8");
    let out = bxctl(&["audit", "verify", "--dir", d, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["good"], true);
    assert_eq!(v["records"], 1);
    assert_eq!(v["next_seq"], 1);
    assert_eq!(
        v["head"],
        proto::chain::line_hash(line.as_bytes()).to_string()
    );
    assert_eq!(v["torn_tail"], serde_json::json!([]));
    std::fs::write(dir.join("2026-09-17.jsonl"), format!("{line}\n{line}\n")).expect("write");
    let out = bxctl(&["audit", "verify", "--dir", d, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["good"], false);
    assert_eq!(v["file"], "2026-09-17.jsonl");
    assert_eq!(v["line"], 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn grants_check_warns_of_expired_grants_and_explains_toml_dates() {
    let dir = temp("grants-dates");
    let d = dir.to_str().expect("utf8");
    let grant = |expires: &str| {
        format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n{expires}\n\
             [constraints]\npaths = [\"/home/owner/notes\"]\n"
        )
    };
    std::fs::write(
        dir.join("old.toml"),
        grant("expires = \"2020-01-01T00:00:00.000Z\""),
    )
    .expect("write");
    std::fs::write(
        dir.join("new.toml"),
        grant("expires = \"2999-01-01T00:00:00.000Z\""),
    )
    .expect("write");
    let out = bxctl(&["grants", "check", d]);
    assert_eq!(out.status.code(), Some(0), "a warning is no failure");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "\nwarning: grant old expired at 2020-01-01T00:00:00.000Z: the calls it covers \
             are denied (grant_expired) until you change or remove it\n"
        ),
        "{text}"
    );
    assert!(!text.contains("grant new expired"), "{text}");
    let v: serde_json::Value =
        serde_json::from_slice(&bxctl(&["grants", "check", d, "--json"]).stdout).expect("json");
    assert_eq!(v["good"], true);
    assert_eq!(v["grants"], serde_json::json!(["new", "old"]));
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(1));

    // A bare TOML date: refused, with what to write instead.
    std::fs::write(
        dir.join("old.toml"),
        grant("expires = 2026-12-31T23:59:59Z"),
    )
    .expect("write");
    let out = bxctl(&["grants", "check", d]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("old.toml")
            && text.contains(
                "\nhelp: `expires` is a quoted UTC timestamp with exactly three fraction \
                 digits, `expires = \"2026-12-31T23:59:59.000Z\"`, not a bare TOML date\n"
            ),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_slice(&bxctl(&["grants", "check", d, "--json"]).stdout).expect("json");
    assert_eq!(v["good"], false);
    assert!(
        v["error"]["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("old.toml")),
        "{v}"
    );
    assert!(
        v["help"]
            .as_str()
            .is_some_and(|h| h.contains("bare TOML date")),
        "{v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_short_approval_prefix_is_a_usage_error_before_anything_is_asked() {
    let dir = temp("prefix");
    // No configuration at all: the prefix is refused before one is needed.
    let missing = dir.join("absent.toml");
    let out = bxctl(&[
        "--config",
        missing.to_str().expect("utf8"),
        "approve",
        "3f2a9",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("bxctl: approval 3f2a9 is too short: give the whole id or at least 6"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
