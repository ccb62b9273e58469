//! A unit's effective properties against what the module generated, property by property.
//!
//! The generated side is the unit's own section as the unit core wrote it (`units.json`:
//! each key's assignments in unit-file syntax, in order, `""` resetting a list); the live
//! side is `systemctl show -p …` (and, for credentials, which `systemctl show` prints as
//! `[unprintable]`, the bus property through `busctl`). Each compared property has a kind
//! that says how both sides are brought to one form: `true` and `yes` are one value,
//! `localhost` is `127.0.0.0/8 ::1/128`, `-/srv` bound read-only is `-/srv:/srv:rbind`, a
//! command is its flags and argv, lists compare as multisets.
//!
//! Compared (docs/verify.md says why each): who the unit runs as and which groups it
//! enters; every command it runs and with which privileges; its environment; what of the
//! file system it sees and may write; its credentials; its network; its privileges and
//! kernel protections; for a socket, where it listens and who may connect; for a timer or
//! path unit, what it starts. A property the generated unit leaves unset is compared with
//! systemd's default where that default is empty (a drop-in that adds `ExecStartPre=`,
//! `Environment=`, `BindPaths=`, `SupplementaryGroups=`, `LoadCredential=` is found);
//! otherwise it is not compared. `SystemCallFilter=` is not compared here: `systemctl show`
//! prints it expanded to syscall names, which the unit core cannot know; its groups are
//! what `systemd-analyze security` scores, and the exposure check holds that.

use std::collections::BTreeMap;

/// How a property's two sides are brought to one form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One value, the last assignment; `true`/`on` read as `yes`, `false`/`off` as `no`.
    Word,
    /// Space-separated words, accumulated over assignments, compared as a multiset.
    Words,
    /// Like `Words`, case-insensitive (capability names).
    Caps,
    /// `ExecStart=` and the like: per command, its flags and argv.
    Exec,
    /// `Environment=`: `NAME=value` words, quoted as systemd quotes them.
    Env,
    /// `BindPaths=`, `BindReadOnlyPaths=`: `src:dst:opts`.
    Binds,
    /// `IPAddressAllow=`, `IPAddressDeny=`: address prefixes.
    Addrs,
    /// `RestrictAddressFamilies=`: an allow or a deny list.
    Families,
    /// `SystemCallErrorNumber=`: the errno's number.
    Errno,
    /// `ListenStream=` and the like, shown as `Listen=PATH (Stream)`.
    Listen,
    /// `LoadCredential=ID:PATH` (read from the bus).
    Credentials,
    /// `SetCredential=ID:DATA`: the ids alone (the data may be a secret).
    CredentialIds,
}

/// One compared property: its name in `systemctl show` (and on the bus), the unit-file
/// keys that set it, its kind, and whether systemd's default is empty (then it is compared
/// even when the generated unit does not set it).
#[derive(Debug, Clone, Copy)]
pub struct Property {
    pub shown: &'static str,
    pub keys: &'static [&'static str],
    pub kind: Kind,
    pub empty_default: bool,
}

const fn p(shown: &'static str, kind: Kind, empty_default: bool) -> Property {
    Property {
        shown,
        keys: &[],
        kind,
        empty_default,
    }
}

const fn from(
    shown: &'static str,
    keys: &'static [&'static str],
    kind: Kind,
    empty_default: bool,
) -> Property {
    Property {
        shown,
        keys,
        kind,
        empty_default,
    }
}

use Kind::*;

/// What is compared for a service.
pub const SERVICE: &[Property] = &[
    p("User", Word, false),
    p("Group", Word, false),
    p("DynamicUser", Word, false),
    p("SupplementaryGroups", Words, true),
    from("ExecStartEx", &["ExecStart"], Exec, true),
    from("ExecStartPreEx", &["ExecStartPre"], Exec, true),
    from("ExecStartPostEx", &["ExecStartPost"], Exec, true),
    from("ExecConditionEx", &["ExecCondition"], Exec, true),
    from("ExecReloadEx", &["ExecReload"], Exec, true),
    from("ExecStopEx", &["ExecStop"], Exec, true),
    from("ExecStopPostEx", &["ExecStopPost"], Exec, true),
    p("Environment", Env, true),
    from("EnvironmentFiles", &["EnvironmentFile"], Words, true),
    p("ProtectSystem", Word, false),
    p("ProtectHome", Word, false),
    p("PrivateTmp", Word, false),
    p("PrivateDevices", Word, false),
    p("PrivateMounts", Word, false),
    p("PrivateIPC", Word, false),
    p("PrivateUsers", Word, false),
    p("PrivateNetwork", Word, false),
    p("ProtectProc", Word, false),
    p("ProcSubset", Word, false),
    p("RootDirectory", Word, true),
    p("ReadWritePaths", Words, true),
    p("ReadOnlyPaths", Words, true),
    p("InaccessiblePaths", Words, true),
    p("NoExecPaths", Words, true),
    p("ExecPaths", Words, true),
    p("BindPaths", Binds, true),
    p("BindReadOnlyPaths", Binds, true),
    p("TemporaryFileSystem", Words, true),
    p("StateDirectory", Words, true),
    p("RuntimeDirectory", Words, true),
    p("UMask", Word, false),
    p("LoadCredential", Credentials, true),
    p("SetCredential", CredentialIds, true),
    p("RestrictAddressFamilies", Families, false),
    p("IPAddressAllow", Addrs, true),
    p("IPAddressDeny", Addrs, true),
    p("SocketBindDeny", Words, true),
    p("SocketBindAllow", Words, true),
    p("NoNewPrivileges", Word, false),
    p("CapabilityBoundingSet", Caps, false),
    p("AmbientCapabilities", Caps, true),
    p("RestrictSUIDSGID", Word, false),
    p("RestrictNamespaces", Word, false),
    p("RestrictRealtime", Word, false),
    p("LockPersonality", Word, false),
    p("MemoryDenyWriteExecute", Word, false),
    p("SystemCallArchitectures", Words, false),
    p("SystemCallErrorNumber", Errno, false),
    p("ProtectClock", Word, false),
    p("ProtectKernelTunables", Word, false),
    p("ProtectKernelModules", Word, false),
    p("ProtectKernelLogs", Word, false),
    p("ProtectControlGroups", Word, false),
    p("ProtectHostname", Word, false),
    p("KeyringMode", Word, false),
    p("DevicePolicy", Word, false),
];

/// What is compared for a socket.
pub const SOCKET: &[Property] = &[
    from(
        "Listen",
        &["ListenStream", "ListenDatagram", "ListenSequentialPacket"],
        Listen,
        true,
    ),
    p("SocketUser", Word, false),
    p("SocketGroup", Word, false),
    p("SocketMode", Word, false),
    p("DirectoryMode", Word, false),
    p("FileDescriptorName", Word, false),
    p("Accept", Word, false),
    from("Triggers", &["Service"], Word, false),
    // A socket's commands have no `…Ex` form on the bus: the argv alone (a prefix's flags
    // are not shown; a command added at all is found).
    p("ExecStartPre", Exec, true),
    p("ExecStartPost", Exec, true),
    p("ExecStopPre", Exec, true),
    p("ExecStopPost", Exec, true),
];

/// What is compared for a timer or a path unit: what it starts.
pub const TRIGGER: &[Property] = &[p("Unit", Word, false)];

/// The properties compared for a unit of this name.
pub fn table(unit: &str) -> &'static [Property] {
    if unit.ends_with(".service") {
        SERVICE
    } else if unit.ends_with(".socket") {
        SOCKET
    } else {
        TRIGGER
    }
}

/// One property that is not as generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub property: &'static str,
    pub live: String,
    pub generated: String,
}

/// The generated assignments of `prop` (from the unit's section), if it is compared.
fn generated(prop: &Property, section: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    let keys: &[&str] = if prop.keys.is_empty() {
        std::slice::from_ref(&prop.shown)
    } else {
        prop.keys
    };
    let mut found = None;
    for key in keys {
        if let Some(values) = section.get(*key) {
            let all: &mut Vec<String> = found.get_or_insert_with(Vec::new);
            for v in values {
                all.push(match prop.kind {
                    Listen => format!("{v} ({})", key.trim_start_matches("Listen")),
                    _ => v.clone(),
                });
            }
        }
    }
    match found {
        Some(v) => Some(v),
        None if prop.empty_default => Some(Vec::new()),
        None => None,
    }
}

/// What a comparison found.
#[derive(Debug, Default)]
pub struct Compared {
    /// The properties whose live value differs from the generated one.
    pub differ: Vec<Difference>,
    /// The properties the live side did not report.
    pub unread: Vec<&'static str>,
    /// How many were compared.
    pub count: usize,
}

/// Every compared property of `unit`: its live value (`live`, keyed by its shown name)
/// against the generated `section`.
pub fn compare(
    unit: &str,
    section: &BTreeMap<String, Vec<String>>,
    live: &BTreeMap<String, String>,
) -> Compared {
    let mut c = Compared::default();
    for prop in table(unit) {
        let Some(made) = generated(prop, section) else {
            continue;
        };
        let Some(now) = live.get(prop.shown) else {
            c.unread.push(prop.shown);
            continue;
        };
        c.count += 1;
        let want = super::normal::normal(prop.kind, &made, false);
        let got = super::normal::normal(prop.kind, std::slice::from_ref(now), true);
        if want != got {
            c.differ.push(Difference {
                property: prop.shown,
                live: got.join(" "),
                generated: want.join(" "),
            });
        }
    }
    c
}
