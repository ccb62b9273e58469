use super::*;

const MINIMAL: &str = r#"
[sockets]
loop_broker = "/run/boxmaker/loop-broker"
admin_broker = "/run/boxmaker/admin-broker"
[peers]
loopd = { user = "boxmaker-loopd" }
admin = { group = "boxmaker-admin" }
"#;

#[test]
fn a_minimal_config_takes_the_defaults() {
    let c = Config::parse(Path::new("c.toml"), MINIMAL).expect("valid");
    assert_eq!(c.home, Path::new("/var/lib/boxmaker"));
    assert_eq!(c.broker.runner, RunnerKind::Systemd);
    assert_eq!(c.broker.approval_ttl, Duration::from_secs(600));
    assert_eq!(c.peers.admin, Peer::Group("boxmaker-admin".into()));
    assert_eq!(c.sockets.loop_infer, Path::new("/run/boxmaker/loop-infer"));
    assert_eq!(c.infer.upstream.addr.to_string(), "127.0.0.1:8080");
    assert_eq!(c.infer.first_byte_timeout, Duration::from_secs(300));
    assert_eq!(c.infer.max_request_bytes, 4 * 1024 * 1024);
    assert_eq!(c.infer.witness_timeout, Duration::from_secs(5));
    assert_eq!(c.broker.witness_wait, Duration::from_secs(5));
    assert_eq!(c.broker.max_witness_records, 4096);
    assert_eq!(
        c.sockets.infer_broker_sock(),
        Path::new("/run/boxmaker/infer-broker/witness.sock")
    );
    assert_eq!(c.peers.infer, None);
}

#[test]
fn compact_percent_may_be_10_to_80() {
    for p in [10, 80] {
        let text = format!("{MINIMAL}[loop]\ncompact_percent = {p}\n");
        let c = Config::parse(Path::new("c.toml"), &text).expect("valid");
        assert_eq!(c.r#loop.compact_percent, p);
    }
}

/// An approval waits at most one hour (brief decision 5): one hour is taken, a second more is
/// refused at load, with its own variant.
#[test]
fn approval_ttl_is_at_most_one_hour() {
    for ttl in ["1h", "60m", "3600s", "1s"] {
        let text = format!("{MINIMAL}[broker]\napproval_ttl = \"{ttl}\"\n");
        let c = Config::parse(Path::new("c.toml"), &text).unwrap_or_else(|e| panic!("{ttl}: {e}"));
        assert!(c.broker.approval_ttl <= MAX_APPROVAL_TTL, "{ttl}");
    }
    assert_eq!(MAX_APPROVAL_TTL, Duration::from_secs(3600));
    for (ttl, secs) in [
        ("1h 1s", 3601),
        ("61m", 3660),
        ("2h", 7200),
        ("30days", 2_592_000),
    ] {
        let text = format!("{MINIMAL}[broker]\napproval_ttl = \"{ttl}\"\n");
        match Config::parse(Path::new("c.toml"), &text) {
            Err(ConfigError::Invalid { reason, .. }) => assert_eq!(
                reason,
                Invalid::ApprovalTtl {
                    ttl: Duration::from_secs(secs)
                },
                "{ttl}"
            ),
            other => panic!("{ttl}: {other:?}"),
        }
    }
}

#[test]
fn bad_configs_say_where_and_why() {
    let cases = [
        (
            format!("{MINIMAL}[broker]\nrunnr = \"direct\"\n"),
            "unknown field",
        ),
        (
            format!("{MINIMAL}[broker]\napproval_ttl = \"2h\"\n"),
            "at most 1h",
        ),
        (
            format!("{MINIMAL}[broker]\napproval_ttl = \"soon\"\n"),
            "not a duration",
        ),
        (
            format!("{MINIMAL}[broker]\ntool = \"boxmaker-tool\"\n"),
            "absolute",
        ),
        (
            format!("{MINIMAL}[broker]\nmax_pending_approvals = 0\n"),
            "more than 0",
        ),
        (MINIMAL.replace("admin-broker", "loop-broker"), "different"),
        (MINIMAL.replace("{ user", "{ name"), "unknown variant"),
        (
            format!("{MINIMAL}[infer]\nupstream = \"http://192.168.1.2:8080\"\n"),
            "loopback",
        ),
        (
            format!("{MINIMAL}[infer]\nupstrem = \"x\"\n"),
            "unknown field",
        ),
        (
            format!("{MINIMAL}[infer]\nidle_timeout = \"0s\"\n"),
            "more than 0",
        ),
        (
            format!(
                "{MINIMAL}[gateway]\nserver = \"mm\"\nowners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n"
            ),
            "http",
        ),
        (
            format!("{MINIMAL}[gateway]\nserver = \"http://m\"\nowners = []\nchannel = \"c\"\n"),
            "owners",
        ),
        (
            MINIMAL.replace(
                "[peers]",
                "loop_infer = \"/run/boxmaker/loop-broker\"\n[peers]",
            ),
            "directory of its own",
        ),
    ];
    for (text, word) in cases {
        let err = Config::parse(Path::new("c.toml"), &text).expect_err(word);
        assert!(err.to_string().contains(word), "{err}");
        assert!(err.to_string().starts_with("c.toml: "), "{err}");
    }
}

/// Each refusal's kind and the setting it is about, and its text byte for byte (the owner
/// reads it from `--check-config` and a role's refusal to start).
#[test]
fn each_invalid_setting_is_its_own_variant() {
    let broker = |kv: &str| format!("{MINIMAL}[broker]\n{kv}\n");
    let gateway = |kv: &str| {
        format!(
            "{MINIMAL}[gateway]\nserver = \"http://m\"\nowners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n{kv}\n"
        )
    };
    let cases = [
        (
            MINIMAL.replace("\"/run/boxmaker/loop-broker\"", "\"rel/x\""),
            Invalid::NotAbsolute {
                name: "sockets.loop_broker",
                path: PathBuf::from("rel/x"),
            },
            "sockets.loop_broker must be an absolute path, not rel/x",
        ),
        (
            MINIMAL.replace("admin-broker", "loop-broker"),
            Invalid::SameBrokerDirectory {
                dir: PathBuf::from("/run/boxmaker/loop-broker"),
            },
            "sockets.loop_broker and sockets.admin_broker must be different directories: the \
             socket a connection arrives on decides what it may ask",
        ),
        (
            MINIMAL.replace(
                "[peers]",
                "chat_loop = \"/run/boxmaker/admin-broker\"\n[peers]",
            ),
            Invalid::SharedSocketDirectory {
                dir: PathBuf::from("/run/boxmaker/admin-broker"),
            },
            "each [sockets] entry must be a directory of its own: each pair of roles has its own \
             socket directory",
        ),
        (
            broker("approval_ttl = \"0s\""),
            Invalid::ApprovalTtl {
                ttl: Duration::ZERO,
            },
            "broker.approval_ttl must be more than 0 and at most 1h",
        ),
        (
            broker("tool_tasks_max = 0"),
            Invalid::Zero {
                name: "broker.tool_tasks_max",
            },
            "broker.tool_tasks_max must be more than 0",
        ),
        (
            broker("max_witness_records = 0"),
            Invalid::Zero {
                name: "broker.max_witness_records",
            },
            "broker.max_witness_records must be more than 0",
        ),
        (
            broker("witness_wait = \"0s\""),
            Invalid::Zero {
                name: "broker.witness_wait",
            },
            "broker.witness_wait must be more than 0",
        ),
        (
            format!("{MINIMAL}[infer]\nwitness_timeout = \"0s\"\n"),
            Invalid::Zero {
                name: "infer.witness_timeout",
            },
            "infer.witness_timeout must be more than 0",
        ),
        (
            MINIMAL.replace(
                "[peers]",
                "infer_broker = \"/run/boxmaker/loop-broker\"\n[peers]",
            ),
            Invalid::SharedSocketDirectory {
                dir: PathBuf::from("/run/boxmaker/loop-broker"),
            },
            "each [sockets] entry must be a directory of its own: each pair of roles has its own \
             socket directory",
        ),
        (
            format!("{MINIMAL}[infer]\nfirst_byte_timeout = \"0s\"\n"),
            Invalid::Zero {
                name: "infer.first_byte_timeout",
            },
            "infer.first_byte_timeout must be more than 0",
        ),
        (
            broker("max_result_bytes = 100000000"),
            Invalid::ResultTooLarge {
                max_result_bytes: 100_000_000,
                most: 174_080,
            },
            "broker.max_result_bytes must be at most 174080 (one frame)",
        ),
        (
            format!("{MINIMAL}[loop]\nmax_tokens = 0\n"),
            Invalid::LoopZero,
            "loop.max_tool_calls, loop.request_timeout and loop.max_tokens must be more than 0",
        ),
        (
            format!("{MINIMAL}[loop]\ncompact_percent = 81\n"),
            Invalid::CompactPercent { percent: 81 },
            "loop.compact_percent must be between 10 and 80 (the summary is written in what \
             is left of the context)",
        ),
        (
            gateway("").replace("http://m", "mm"),
            Invalid::GatewayServer {
                server: "mm".into(),
            },
            "gateway.server must be an http:// or https:// URL",
        ),
        (
            gateway("").replace("[\"ownerkp1dx4oy7wqbsm3e9t6ua\"]", "[\"\"]"),
            Invalid::GatewayOwners,
            "gateway.owners must name at least one Mattermost user id",
        ),
        (
            gateway("").replace(
                "\"ownerkp1dx4oy7wqbsm3e9t6ua\"",
                "\"ownerkp1dx4oy7wqbsm3e9t6ua\", \"alice\"",
            ),
            Invalid::GatewayOwnerId { id: "alice".into() },
            "gateway.owners: \"alice\" is not a Mattermost user id (26 letters and digits, not a \
             user name): the System Console's user list shows it, or \
             `GET /api/v4/users/username/NAME` answers it as `id`",
        ),
        (
            gateway("").replace("ownerkp1dx4oy7wqbsm3e9t6ua", "ownerkp1dx4oy7wqbsm3e9t6u-"),
            Invalid::GatewayOwnerId {
                id: "ownerkp1dx4oy7wqbsm3e9t6u-".into(),
            },
            "gateway.owners: \"ownerkp1dx4oy7wqbsm3e9t6u-\" is not a Mattermost user id (26 letters \
             and digits, not a user name): the System Console's user list shows it, or \
             `GET /api/v4/users/username/NAME` answers it as `id`",
        ),
        (
            gateway("typing_interval = \"0s\""),
            Invalid::GatewayEmpty,
            "gateway.channel, gateway.edit_interval and gateway.typing_interval must not be empty",
        ),
        (
            gateway("token_credential = \"a/b\""),
            Invalid::GatewayTokenCredential { name: "a/b".into() },
            "gateway.token_credential must be a plain credential name",
        ),
    ];
    for (text, want, why) in cases {
        let err = Config::parse(Path::new("c.toml"), &text).expect_err(why);
        assert_eq!(err.to_string(), format!("c.toml: {why}"));
        // The setting's own error is kept, typed; its text is printed, not chained (F16).
        match err {
            ConfigError::Invalid { path, reason } => {
                assert_eq!(path, Path::new("c.toml"));
                assert_eq!(reason, want);
            }
            other => panic!("{why}: not Invalid: {other:?}"),
        }
    }
}
