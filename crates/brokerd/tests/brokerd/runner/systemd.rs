//! The systemd runner's command line and unit properties: the property list here is the
//! specification of the tool unit.

use std::path::{Path, PathBuf};

use brokerd::run::runner::{
    RunOutcome, RunSpec, SystemdRunner, check_granted_path, check_unit_path,
};

use super::{Execute, bind_at, http_fetch_spec, read_file_spec, secret_spec};

const TOOL: &str = "/opt/boxmaker/bin/boxmaker-tool";

/// A Debian-style runner: the tool outside the binds, so it is bound itself.
pub(super) fn runner() -> SystemdRunner {
    SystemdRunner {
        tool: PathBuf::from(TOOL),
        root: PathBuf::from("/run/boxmaker/tool-root"),
        binds: vec!["/usr".into(), "-/lib".into(), "-/lib64".into()],
        systemd_run: PathBuf::from("/usr/bin/systemd-run"),
        hands_user: None,
        systemd_version: 257,
    }
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The read_file unit, property by property: this list is the specification.
fn read_file_properties() -> Vec<(String, String)> {
    owned(&[
        ("DynamicUser", "yes"),
        ("RootDirectory", "/run/boxmaker/tool-root"),
        ("PrivateMounts", "yes"),
        ("BindReadOnlyPaths", "/usr"),
        ("BindReadOnlyPaths", "-/lib"),
        ("BindReadOnlyPaths", "-/lib64"),
        ("BindReadOnlyPaths", TOOL),
        ("BindReadOnlyPaths", "-/srv/notes/todo.md"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        (
            "TemporaryFileSystem",
            "/srv:ro /tmp:ro /var/tmp:ro /dev/shm:ro",
        ),
        ("PrivateDevices", "yes"),
        ("DevicePolicy", "closed"),
        ("UMask", "0077"),
        ("ProtectProc", "invisible"),
        ("ProcSubset", "pid"),
        ("ProtectKernelTunables", "yes"),
        ("ProtectKernelModules", "yes"),
        ("ProtectKernelLogs", "yes"),
        ("ProtectControlGroups", "yes"),
        ("ProtectClock", "yes"),
        ("ProtectHostname", "yes"),
        ("PrivateUsers", "yes"),
        ("PrivateIPC", "yes"),
        ("KeyringMode", "private"),
        ("RestrictNamespaces", "yes"),
        ("NoNewPrivileges", "yes"),
        ("CapabilityBoundingSet", ""),
        ("AmbientCapabilities", ""),
        ("RestrictSUIDSGID", "yes"),
        ("RestrictRealtime", "yes"),
        ("LockPersonality", "yes"),
        ("MemoryDenyWriteExecute", "yes"),
        ("SystemCallArchitectures", "native"),
        ("SystemCallFilter", "@system-service"),
        ("SystemCallFilter", "~@privileged @resources"),
        ("SystemCallErrorNumber", "EPERM"),
        ("PrivateNetwork", "yes"),
        ("RestrictAddressFamilies", "AF_UNIX"),
        ("RestrictAddressFamilies", "~AF_UNIX"),
        ("IPAddressDeny", "any"),
        ("RuntimeMaxSec", "30s"),
        ("MemoryMax", "268435456"),
        ("TasksMax", "16"),
        ("LimitCORE", "0"),
    ])
}

#[test]
fn a_no_network_read_file_unit_has_exactly_the_specified_properties() {
    assert_eq!(
        runner().properties(&read_file_spec()),
        read_file_properties()
    );
}

#[test]
fn the_command_line_carries_the_same_properties() {
    let spec = read_file_spec();
    let command = runner().command(&spec);
    assert_eq!(command.get_program(), "/usr/bin/systemd-run");
    let args: Vec<String> = command
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut expected: Vec<String> = [
        "--pipe",
        "--wait",
        "--collect",
        "--no-ask-password",
        "--service-type=exec",
        "--unit=boxmaker-tool-chat-7-3",
    ]
    .map(String::from)
    .to_vec();
    for (key, value) in read_file_properties() {
        expected.push("-p".into());
        expected.push(format!("{key}={value}"));
    }
    expected.push("--".into());
    expected.push(TOOL.into());
    assert_eq!(args, expected);
}

#[test]
fn an_http_fetch_unit_reaches_only_the_resolved_addresses() {
    let props = runner().properties(&http_fetch_spec());
    let mut expected = read_file_properties();
    // No granted path (so no tmpfs over its top); the network block differs; nothing else does.
    expected.retain(|(k, v)| {
        !(k == "BindReadOnlyPaths" && v == "-/srv/notes/todo.md")
            && k != "PrivateNetwork"
            && k != "RestrictAddressFamilies"
    });
    for (k, v) in &mut expected {
        if k == "TemporaryFileSystem" {
            *v = "/tmp:ro /var/tmp:ro /dev/shm:ro".into();
        }
    }
    let deny = expected
        .iter()
        .position(|(k, _)| k == "IPAddressDeny")
        .expect("IPAddressDeny");
    expected.insert(
        deny,
        ("RestrictAddressFamilies".into(), "AF_INET AF_INET6".into()),
    );
    expected.insert(
        deny + 2,
        (
            "IPAddressAllow".into(),
            "93.184.216.34 2606:2800:220:1::248".into(),
        ),
    );
    assert_eq!(props, expected);

    // An IPv4-mapped address is allowed in both forms, its socket family is AF_INET6.
    let mut mapped = http_fetch_spec();
    mapped.addresses = vec!["::ffff:93.184.216.34".parse().expect("mapped")];
    let props = runner().properties(&mapped);
    assert!(props.contains(&("RestrictAddressFamilies".into(), "AF_INET6".into())));
    assert!(props.contains(&(
        "IPAddressAllow".into(),
        "::ffff:93.184.216.34 93.184.216.34".into()
    )));

    // Only the families of the addresses there are.
    let mut v4 = http_fetch_spec();
    v4.addresses.truncate(1);
    assert!(
        runner()
            .properties(&v4)
            .contains(&("RestrictAddressFamilies".into(), "AF_INET".into()))
    );
}

#[test]
fn a_secret_is_a_load_credential_and_nothing_else() {
    let source = Path::new("/run/credentials/brokerd.service/api-key");
    let props = runner().properties(&secret_spec(source));
    let mut expected = read_file_properties();
    expected.push((
        "LoadCredential".into(),
        "api-key:/run/credentials/brokerd.service/api-key".into(),
    ));
    assert_eq!(props, expected);
    let args: Vec<String> = runner()
        .command(&secret_spec(source))
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert!(
        args.contains(&"LoadCredential=api-key:/run/credentials/brokerd.service/api-key".into())
    );
}

#[test]
fn a_tool_inside_a_bind_is_not_bound_again() {
    let nixos = SystemdRunner {
        tool: PathBuf::from("/nix/store/0abc-boxmaker/bin/boxmaker-tool"),
        binds: vec!["/nix/store".into()],
        ..runner()
    };
    let props = nixos.properties(&read_file_spec());
    let binds: Vec<&str> = props
        .iter()
        .filter(|(k, _)| k == "BindReadOnlyPaths")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(binds, ["/nix/store", "-/srv/notes/todo.md"]);
}

#[test]
fn a_grant_under_home_gets_an_empty_home_instead_of_none() {
    let mut spec = read_file_spec();
    spec.bind = Some(bind_at("/home/owner/notes/todo.md"));
    let props = runner().properties(&spec);
    assert!(props.contains(&("ProtectHome".into(), "tmpfs".into())));
    spec.bind = Some(bind_at("/root/notes"));
    assert!(
        runner()
            .properties(&spec)
            .contains(&("ProtectHome".into(), "tmpfs".into()))
    );
    // A look-alike prefix is not under /home.
    spec.bind = Some(bind_at("/homes/notes"));
    assert!(
        runner()
            .properties(&spec)
            .contains(&("ProtectHome".into(), "yes".into()))
    );
}

/// The bound path's top directory is an empty tmpfs of the unit's own, so systemd leaves no
/// mount point naming the path in the root every tool unit shares; not where another rule
/// already gives one (/home) or where the runner binds the tool's own files (/usr).
#[test]
fn the_top_of_a_bound_path_is_a_tmpfs_of_the_units_own() {
    let tmpfs = |path: &str| {
        let mut spec = read_file_spec();
        spec.bind = Some(bind_at(path));
        runner()
            .properties(&spec)
            .into_iter()
            .find(|(k, _)| k == "TemporaryFileSystem")
            .map(|(_, v)| v)
            .expect("TemporaryFileSystem")
    };
    assert_eq!(
        tmpfs("/srv/notes/todo.md"),
        "/srv:ro /tmp:ro /var/tmp:ro /dev/shm:ro"
    );
    assert_eq!(
        tmpfs("/var/lib/notes"),
        "/var:ro /tmp:ro /var/tmp:ro /dev/shm:ro"
    );
    assert_eq!(
        tmpfs("/home/owner/notes"),
        "/tmp:ro /var/tmp:ro /dev/shm:ro"
    );
    assert_eq!(tmpfs("/usr/share/doc/x"), "/tmp:ro /var/tmp:ro /dev/shm:ro");
    // A bind at a top directory itself (a note listing's /notes) leaves no other name.
    assert_eq!(tmpfs("/notes"), "/tmp:ro /var/tmp:ro /dev/shm:ro");
    // The tool's own directory (/opt/boxmaker/bin) is bound by the runner too.
    assert_eq!(tmpfs("/opt/notes"), "/tmp:ro /var/tmp:ro /dev/shm:ro");
}

/// A search unit has each index partition it reaches bound read-only, file by file, at
/// `/index/<label>.sqlite` (under an empty tmpfs of its own), and nothing else of `index/`.
#[test]
fn a_search_unit_binds_each_reached_partition_read_only() {
    let mut spec = read_file_spec();
    spec.bind = None;
    for file in ["private.sqlite", "secret-untrusted.sqlite"] {
        spec.index_binds.push(brokerd::run::bind::Bind {
            source: format!("/var/lib/private/boxmaker/index/{file}"),
            target: format!("/index/{file}"),
        });
    }
    let props = runner().properties(&spec);
    let binds: Vec<&str> = props
        .iter()
        .filter(|(k, _)| k == "BindReadOnlyPaths")
        .map(|(_, v)| v.as_str())
        .filter(|v| v.contains("index"))
        .collect();
    assert_eq!(
        binds,
        [
            "-/var/lib/private/boxmaker/index/private.sqlite:/index/private.sqlite",
            "-/var/lib/private/boxmaker/index/secret-untrusted.sqlite:/index/secret-untrusted.sqlite",
        ]
    );
    assert!(!props.iter().any(|(k, _)| k == "BindPaths"), "{props:?}");
    let tmpfs = props
        .iter()
        .find(|(k, _)| k == "TemporaryFileSystem")
        .map(|(_, v)| v.as_str());
    assert_eq!(tmpfs, Some("/index:ro /tmp:ro /var/tmp:ro /dev/shm:ro"));
    // Each is checked as a bound path is.
    spec.index_binds[0].source = "/proc/self/mem".into();
    assert!(runner().check(&spec).is_err());
}

#[test]
fn the_unit_file_is_the_property_list() {
    let spec = read_file_spec();
    let file = runner().unit_file(&spec);
    assert!(file.contains("\n[Service]\nType=exec\nExecStart=/opt/boxmaker/bin/boxmaker-tool\n"));
    assert!(file.contains("Description=boxmaker tool run boxmaker-tool-chat-7-3\n"));
    let lines: Vec<String> = read_file_properties()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let tail: Vec<&str> = file.lines().rev().take(lines.len()).collect();
    let tail: Vec<String> = tail.into_iter().rev().map(String::from).collect();
    assert_eq!(tail, lines);
}

#[test]
fn paths_systemd_would_not_read_literally_are_refused() {
    for bad in [
        "relative", "/a b", "/a:b", "/a%n", "/a$HOME", "/a\"b", "/a\\b", "/a'b", "/a\tb", "/a/",
        "/a//b", "/a/./b", "/a/../b", "",
    ] {
        assert!(check_unit_path(bad).is_err(), "{bad:?}");
    }
    for good in ["/", "/srv/notes", "/home/o/Notizen-Ärzte", "/a.b/c_d/e+f@g"] {
        assert_eq!(check_unit_path(good), Ok(()), "{good:?}");
    }
    for bad in [
        "/",
        "/run",
        "/run/dbus",
        "/proc/1",
        "/sys",
        "/dev/shm",
        "/var/run/x",
    ] {
        assert!(check_granted_path(bad).is_err(), "{bad:?}");
    }
    assert_eq!(check_granted_path("/running/notes"), Ok(()));
}

#[test]
fn execute_refuses_a_bad_spec_before_starting_anything() {
    type Mutation = fn(&mut RunSpec, &mut SystemdRunner);
    let cases: [(&str, Mutation); 7] = [
        ("address", |s, _| {
            s.addresses.push("0.0.0.0".parse().expect("ip"))
        }),
        ("address", |s, _| {
            s.addresses.push("ff02::1".parse().expect("ip"))
        }),
        ("granted path", |s, _| {
            s.bind = Some(bind_at("/srv/My Notes"))
        }),
        ("granted path", |s, _| {
            s.bind = Some(bind_at("/run/systemd"))
        }),
        ("unit name", |s, _| s.unit = "other-unit".into()),
        ("unit name", |s, _| s.unit = "boxmaker-tool-A".into()),
        ("bind", |_, r| r.binds.push("/usr:/x:ro".into())),
    ];
    for (what, mutate) in cases {
        let mut spec = read_file_spec();
        let mut runner = SystemdRunner {
            // Would fail loudly if it were ever started.
            systemd_run: PathBuf::from("/nonexistent/systemd-run"),
            ..runner()
        };
        mutate(&mut spec, &mut runner);
        match runner.execute(&spec) {
            RunOutcome::Failed { message, .. } => {
                assert!(message.starts_with("tool run refused: "), "{message}");
                assert!(
                    message.contains(what) || message.contains("path"),
                    "{message}"
                );
            }
            other => panic!("{what}: expected a refusal, got {other:?}"),
        }
    }
}
