//! brokerd's binary on its own: `--check-config` checks the config and the grants without
//! starting anything, and says what is wrong with the file, line and reason.

use std::process::Command;

fn setup(name: &str, grant: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bx-brokerd-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("grants")).expect("dir");
    std::fs::write(dir.join("grants/notes.toml"), grant).expect("grant");
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "home = \"{0}/home\"\ngrants = \"{0}/grants\"\n[sockets]\nloop_broker = \"{0}/l\"\n\
             admin_broker = \"{0}/a\"\n[peers]\nloopd = {{ uid = 1 }}\nadmin = {{ uid = 2 }}\ninfer = {{ uid = 3 }}\n",
            dir.display()
        ),
    )
    .expect("config");
    dir
}

/// `brokerd --config CONFIG --check-config`.
pub fn check_config(config: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_brokerd"))
        .arg("--config")
        .arg(config)
        .arg("--check-config")
        .output()
        .expect("brokerd")
}

#[test]
fn check_config_reports_good_grants_and_refuses_bad_ones() {
    let good = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                [constraints]\npaths = [\"/srv/notes\"]\n";
    let dir = setup("good", good);
    let out = check_config(&dir.join("config.toml"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 grants (notes)"));
    assert!(
        !dir.join("home").exists(),
        "--check-config started something"
    );

    let dir = setup("bad", &good.replace("/srv/notes", "/srv/../etc"));
    let out = check_config(&dir.join("config.toml"));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("notes.toml") && err.contains(".."), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// No configuration turns witnessing off: without `peers.infer` nobody could report a
/// completion, so brokerd refuses to start (and `--check-config` says why).
#[test]
fn check_config_refuses_a_config_without_the_witness_peer() {
    let good = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                [constraints]\npaths = [\"/srv/notes\"]\n";
    let dir = setup("noinfer", good);
    let config = dir.join("config.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, text.replace("infer = { uid = 3 }\n", "")).expect("config");
    let out = check_config(&config);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("peers.infer is not set"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The owner's core memory is refused inside the notes (where `note_write` units leave the
/// model's text) or the session logs: `--check-config` names both paths, and brokerd
/// would not start.
#[test]
fn check_config_refuses_core_memory_where_a_role_writes() {
    let good = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                [constraints]\npaths = [\"/srv/notes\"]\n";
    let dir = setup("core", good);
    let config = dir.join("config.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    for (core, inside) in [
        ("home/memory/notes/core.md", "home/memory/notes"),
        ("home/sessions/core.md", "home/sessions"),
    ] {
        let core = dir.join(core);
        std::fs::write(
            &config,
            format!("core_memory = \"{}\"\n{text}", core.display()),
        )
        .expect("config");
        let out = check_config(&config);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "core_memory {} is inside {}",
                core.display(),
                dir.join(inside).display()
            )),
            "{err}"
        );
    }
    std::fs::write(
        &config,
        format!("core_memory = \"{}/owner/core.md\"\n{text}", dir.display()),
    )
    .expect("config");
    let out = check_config(&config);
    assert!(out.status.success(), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An approval waits at most an hour: a longer `broker.approval_ttl` is refused when brokerd
/// loads its configuration, and one hour is taken.
#[test]
fn check_config_refuses_an_approval_ttl_over_one_hour() {
    let good = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                [constraints]\npaths = [\"/srv/notes\"]\n";
    let dir = setup("ttl", good);
    let config = dir.join("config.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    for (ttl, ok) in [("1h 1s", false), ("1h", true)] {
        std::fs::write(
            &config,
            format!("{text}[broker]\napproval_ttl = \"{ttl}\"\n"),
        )
        .expect("config");
        let out = check_config(&config);
        assert_eq!(out.status.success(), ok, "{ttl}: {out:?}");
        if !ok {
            assert_eq!(out.status.code(), Some(1));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("broker.approval_ttl must be more than 0 and at most 1h"),
                "{err}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `broker.consult.url` brokerd's URL rules refuse (another scheme, a user name, no host)
/// fails the start and `--check-config`, as every consult would fail at its call.
#[test]
fn check_config_refuses_a_consult_url_brokerd_cannot_reach() {
    let good = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                [constraints]\npaths = [\"/srv/notes\"]\n";
    let dir = setup("consult-url", good);
    let config = dir.join("config.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    for (url, ok) in [
        ("ftp://api.example.com/v1", false),
        ("https://me@api.example.com/v1", false),
        ("api.example.com/v1", false),
        ("https://api.example.com/v1", true),
    ] {
        std::fs::write(
            &config,
            format!("{text}[broker.consult]\nurl = \"{url}\"\nmodel = \"big\"\n"),
        )
        .expect("config");
        let out = check_config(&config);
        assert_eq!(out.status.success(), ok, "{url}: {out:?}");
        if !ok {
            assert_eq!(out.status.code(), Some(1));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("broker.consult.url: "), "{err}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
