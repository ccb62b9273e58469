//! A grant that does not load: each refusal's kind, the list and index it is about, and its
//! text byte for byte, as the owner reads it from `bxctl grants check` and from brokerd's
//! refusal to start.

use grants::constraints::{
    HostError, InvalidGrant, LabelError, Mismatch, PathError, PatternError, Subject, check,
    normalize_path, validate,
};
use proto::Mode::{Ask, Auto, Deny};

use crate::constraints::{grant, read};

pub(crate) fn s(text: &str) -> String {
    text.to_owned()
}

#[test]
fn a_misfit_grant_says_which_list_and_tool() {
    for (g, want, text) in [
        (
            grant("shell", Deny, &[], &[], &[]),
            InvalidGrant::UnknownTool { tool: s("shell") },
            "no tool is named \"shell\" (the tools are read_file, list_dir, http_fetch, consult, \
             note_write, note_read, note_list, note_search, session_search, write_file, edit_file, \
             run)",
        ),
        (
            grant("list_dir", Ask, &[], &[], &["*"]),
            InvalidGrant::Required {
                list: "paths",
                tool: s("list_dir"),
            },
            "an allowing grant for list_dir must list constraints.paths (only a deny grant may \
             leave it empty, meaning every value)",
        ),
        (
            grant("http_fetch", Auto, &[], &[], &[]),
            InvalidGrant::Required {
                list: "hosts",
                tool: s("http_fetch"),
            },
            "an allowing grant for http_fetch must list constraints.hosts (only a deny grant may \
             leave it empty, meaning every value)",
        ),
        (
            grant("read_file", Deny, &[], &["example.org"], &[]),
            InvalidGrant::NotApplicable {
                list: "hosts",
                tool: s("read_file"),
                subject: Subject::Path,
            },
            "constraints.hosts does not apply to read_file (it reads local files; patterns can \
             narrow it further): remove it",
        ),
        (
            grant("http_fetch", Ask, &["/a"], &["example.org"], &[]),
            InvalidGrant::NotApplicable {
                list: "paths",
                tool: s("http_fetch"),
                subject: Subject::Url,
            },
            "constraints.paths does not apply to http_fetch (it fetches URLs; hosts and patterns \
             limit it): remove it",
        ),
        (
            grant("consult", Deny, &["/a"], &["example.org"], &[]),
            InvalidGrant::NotApplicable {
                list: "paths",
                tool: s("consult"),
                subject: Subject::Prompt,
            },
            "constraints.paths does not apply to consult (its destination is the endpoint brokerd \
             is configured with): remove it",
        ),
        (
            grant("note_read", Auto, &["/a"], &[], &[]),
            InvalidGrant::NotApplicable {
                list: "paths",
                tool: s("note_read"),
                subject: Subject::Note,
            },
            "constraints.paths does not apply to note_read (it works on brokerd's notes; patterns \
             narrow the note names): remove it",
        ),
        (
            grant("note_list", Auto, &[], &[], &["a*"]),
            InvalidGrant::NotApplicable {
                list: "patterns",
                tool: s("note_list"),
                subject: Subject::Note,
            },
            "constraints.patterns does not apply to note_list (it lists or searches brokerd's \
             notes or the session logs: there is no name to match): remove it",
        ),
        (
            proto::Grant {
                constraints: proto::Constraints {
                    max_class: Some(proto::DataClass::Private),
                    ..proto::Constraints::default()
                },
                ..grant("note_read", Auto, &[], &[], &[])
            },
            InvalidGrant::NotApplicable {
                list: "max_class",
                tool: s("note_read"),
                subject: Subject::Note,
            },
            "constraints.max_class does not apply to note_read (it works on brokerd's notes; \
             patterns narrow the note names): remove it",
        ),
    ] {
        let err = validate(&g).expect_err(text);
        assert_eq!(err, want);
        assert_eq!(err.to_string(), text);
        // A grant that fails validation covers nothing, and says why.
        let refused = check(&g, &read("/a")).expect_err(text);
        assert_eq!(refused, Mismatch::Invalid(want));
        assert_eq!(refused.to_string(), format!("the grant is invalid: {text}"));
    }
}

#[test]
fn private_networks_refusals_say_what_it_cannot_widen() {
    for (tool, mode, hosts, want, text) in [
        (
            "list_dir",
            Auto,
            &[][..],
            InvalidGrant::PrivateNetworksNoNetwork {
                tool: s("list_dir"),
            },
            "constraints.private_networks does not apply to list_dir (it reaches no network): \
             remove it",
        ),
        (
            "consult",
            Deny,
            &[],
            InvalidGrant::PrivateNetworksOnDeny,
            "constraints.private_networks means nothing on a deny grant (it only widens where an \
             allowed call may connect): remove it",
        ),
        (
            "http_fetch",
            Ask,
            &["192.168.1.10", "fd00::1"],
            InvalidGrant::PrivateNetworksNoNames,
            "constraints.private_networks is for host names, and every entry of \
             constraints.hosts is an IP address (reached as listed): remove it",
        ),
    ] {
        let paths: &[&str] = if tool == "list_dir" { &["/a"] } else { &[] };
        let mut g = grant(tool, mode, paths, hosts, &[]);
        g.constraints.private_networks = true;
        let err = validate(&g).expect_err(text);
        assert_eq!(err, want);
        assert_eq!(err.to_string(), text);
    }
}

#[test]
fn a_bad_path_entry_names_its_index_and_the_form_to_write() {
    for (entry, want, text) in [
        (
            "/b/",
            PathError::NotNormal {
                entry: s("/b/"),
                normal: s("/b"),
            },
            r#""/b/" is not in normal form: write "/b""#,
        ),
        (
            "notes",
            PathError::NotAbsolute { path: s("notes") },
            r#""notes" is not an absolute path (it must start with /)"#,
        ),
        (
            "/a/../b",
            PathError::DotDot { path: s("/a/../b") },
            "\"/a/../b\" has a `..` component, which is never resolved (it could cross a \
             symlink): name the path without it",
        ),
        (
            "/a\0",
            PathError::Nul { path: s("/a\0") },
            r#""/a\0" contains a NUL byte"#,
        ),
    ] {
        let err = validate(&grant("read_file", Deny, &["/a", entry], &[], &[])).expect_err(entry);
        assert_eq!(
            err,
            InvalidGrant::Path {
                index: 1,
                error: want
            }
        );
        assert_eq!(err.to_string(), format!("constraints.paths[1]: {text}"));
    }
    assert_eq!(
        normalize_path("/srv/../etc"),
        Err(PathError::DotDot {
            path: s("/srv/../etc")
        })
    );
}

#[test]
fn a_bad_host_entry_names_its_index_and_what_to_write() {
    let shape = |entry: &str, why: &str| format!("{entry:?}: {why}");
    let cases = [
        ("", HostError::Empty, s("an empty host entry names no host")),
        (
            "bücher.de",
            HostError::NotAscii {
                entry: s("bücher.de"),
            },
            s(
                "\"bücher.de\" is not ASCII: write an internationalised name in punycode (for \
               example xn--bcher-kva.de for bücher.de)",
            ),
        ),
        (
            "[::1]",
            HostError::Bracketed { entry: s("[::1]") },
            shape(
                "[::1]",
                "write an IPv6 address without brackets, for example ::1",
            ),
        ),
        (
            "https://a.org",
            HostError::Scheme {
                entry: s("https://a.org"),
            },
            shape("https://a.org", "write the host alone, without a scheme"),
        ),
        (
            "a.org/docs",
            HostError::Path {
                entry: s("a.org/docs"),
            },
            shape("a.org/docs", "write the host alone, without a path"),
        ),
        (
            "u@a.org",
            HostError::UserName {
                entry: s("u@a.org"),
            },
            shape("u@a.org", "write the host alone, without a user name"),
        ),
        (
            "fe80::1%eth0",
            HostError::Zone {
                entry: s("fe80::1%eth0"),
            },
            shape(
                "fe80::1%eth0",
                "an IPv6 address with a zone (%eth0) cannot be granted",
            ),
        ),
        (
            "a.org:443",
            HostError::Port {
                entry: s("a.org:443"),
            },
            shape(
                "a.org:443",
                "write the host without a port (any port of a listed host is allowed)",
            ),
        ),
        (
            "*.",
            HostError::EveryHost { entry: s("*.") },
            shape("*.", "`*` alone would grant every host; list the hosts"),
        ),
        (
            "a.*.org",
            HostError::Wildcard {
                entry: s("a.*.org"),
            },
            shape("a.*.org", "a wildcard is allowed only as a leading `*.`"),
        ),
        (
            "a..org",
            HostError::Label {
                entry: s("a..org"),
                error: LabelError::EmptyLabel,
            },
            shape(
                "a..org",
                "the name has an empty label (`..`, or a leading or second trailing dot)",
            ),
        ),
        (
            "a!b.org",
            HostError::Label {
                entry: s("a!b.org"),
                error: LabelError::Char { found: '!' },
            },
            shape(
                "a!b.org",
                "the name has '!'; host names are letters, digits, `-` and `_`",
            ),
        ),
        (
            "127.1",
            HostError::Ipv4Spelling {
                entry: s("127.1"),
                ip: [127, 0, 0, 1].into(),
            },
            s(
                "\"127.1\" is read as the IPv4 address 127.0.0.1: write IPv4 addresses as a \
               dotted quad",
            ),
        ),
        (
            "*.1.2.3.4",
            HostError::ReadsAs {
                entry: s("*.1.2.3.4"),
                seen: Some(url::Host::Ipv4([1, 2, 3, 4].into())),
            },
            s("\"*.1.2.3.4\" is not a host name (it reads as 1.2.3.4)"),
        ),
        (
            "xn--zz.de",
            HostError::NotName {
                entry: s("xn--zz.de"),
                error: url::ParseError::IdnaError,
            },
            s("\"xn--zz.de\" is not a host name: invalid international domain name"),
        ),
    ];
    for (entry, want, text) in cases {
        let g = grant("http_fetch", Auto, &[], &["a.org", "b.org", entry], &[]);
        let err = validate(&g).expect_err(entry);
        assert_eq!(
            err,
            InvalidGrant::Host {
                index: 2,
                error: want
            }
        );
        assert_eq!(err.to_string(), format!("constraints.hosts[2]: {text}"));
    }
}

#[test]
fn a_bad_pattern_names_its_index_and_the_escape() {
    for (pattern, want, text) in [
        (
            "",
            PatternError::Empty,
            "an empty pattern matches only empty text; remove it or write `*`",
        ),
        (
            r"\.md",
            PatternError::Escape {
                pattern: s(r"\.md"),
                escaped: '.',
            },
            "\"\\\\.md\" escapes '.'; only \\*, \\? and \\\\ are escapes \
             (write \\\\ for a literal backslash)",
        ),
        (
            r"a\",
            PatternError::LoneBackslash { pattern: s(r"a\") },
            r#""a\\" ends in a lone backslash (write \\ for a literal one)"#,
        ),
    ] {
        let err = validate(&grant("consult", Auto, &[], &[], &[pattern])).expect_err(text);
        assert_eq!(
            err,
            InvalidGrant::Pattern {
                index: 0,
                error: want
            }
        );
        assert_eq!(err.to_string(), format!("constraints.patterns[0]: {text}"));
    }
}
