//! What a grant covers: the load-time check of its constraints, and which calls each tool's
//! paths, hosts and patterns let through.

use grants::constraints::{Covered, Host, check, validate};
use proto::tools::{ConsultArgs, HttpFetchArgs, ListDirArgs, NoteReadArgs, ReadFileArgs, ToolArgs};
use proto::{Constraints, DataClass, Grant, Mode};

pub(crate) fn grant(
    tool: &str,
    mode: Mode,
    paths: &[&str],
    hosts: &[&str],
    patterns: &[&str],
) -> Grant {
    let own = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect();
    Grant {
        tool: tool.into(),
        mode,
        max_taint: DataClass::Private,
        result_class: DataClass::Private,
        untrusted: true,
        expires: None,
        secret: None,
        constraints: Constraints {
            paths: own(paths),
            hosts: own(hosts),
            patterns: own(patterns),
            private_networks: false,
            max_class: None,
            ..Constraints::default()
        },
        if_untrusted: None,
        job: None,
        always_ask: false,
    }
}

pub(crate) fn read(path: &str) -> ToolArgs {
    ToolArgs::ReadFile(ReadFileArgs { path: path.into() })
}

pub(crate) fn list(path: &str) -> ToolArgs {
    ToolArgs::ListDir(ListDirArgs { path: path.into() })
}

pub(crate) fn fetch(url: &str) -> ToolArgs {
    ToolArgs::HttpFetch(HttpFetchArgs { url: url.into() })
}

pub(crate) fn consult(prompt: &str) -> ToolArgs {
    ToolArgs::Consult(ConsultArgs {
        prompt: prompt.into(),
    })
}

#[test]
fn validate_refuses_each_misfit_with_a_reason() {
    use Mode::{Ask, Auto, Deny};
    for (g, word) in [
        (grant("shell", Deny, &[], &[], &[]), "no tool is named"),
        (
            grant("read_file", Auto, &[], &[], &[]),
            "must list constraints.paths",
        ),
        (
            grant("list_dir", Ask, &[], &[], &["*"]),
            "must list constraints.paths",
        ),
        (
            grant("http_fetch", Auto, &[], &[], &["https://*"]),
            "must list constraints.hosts",
        ),
        (
            grant("read_file", Auto, &["/a"], &["example.org"], &[]),
            "constraints.hosts does not apply",
        ),
        (
            grant("read_file", Deny, &[], &["example.org"], &[]),
            "constraints.hosts does not apply",
        ),
        (
            grant("http_fetch", Ask, &["/a"], &["example.org"], &[]),
            "constraints.paths does not apply",
        ),
        (
            grant("consult", Auto, &["/a"], &[], &[]),
            "constraints.paths does not apply",
        ),
        (
            grant("consult", Deny, &[], &["example.org"], &[]),
            "constraints.hosts does not apply",
        ),
        (
            grant("read_file", Auto, &["/a", "/b/"], &[], &[]),
            "constraints.paths[1]",
        ),
        (grant("read_file", Auto, &["notes"], &[], &[]), "absolute"),
        (grant("read_file", Deny, &["/a/../b"], &[], &[]), "`..`"),
        (
            grant("http_fetch", Auto, &[], &["*"], &[]),
            "constraints.hosts[0]",
        ),
        (
            grant("http_fetch", Auto, &[], &["example.org:443"], &[]),
            "port",
        ),
        (
            grant("consult", Auto, &[], &[], &["ok", ""]),
            "constraints.patterns[1]",
        ),
        (grant("consult", Auto, &[], &[], &["a\\"]), "lone backslash"),
    ] {
        let err = validate(&g).expect_err(word).to_string();
        assert!(err.contains(word), "{word}: {err}");
        let refused = check(&g, &read("/a")).expect_err(word).to_string();
        assert!(refused.starts_with("the grant is invalid"), "{refused}");
    }
}

#[test]
fn validate_accepts_what_each_tool_means() {
    use Mode::{Ask, Auto, Deny};
    for g in [
        grant("read_file", Auto, &["/home/owner/notes"], &[], &[]),
        grant("list_dir", Ask, &["/"], &[], &["/srv/*"]),
        grant("read_file", Deny, &[], &[], &[]),
        grant("read_file", Deny, &[], &[], &["*.key"]),
        grant(
            "http_fetch",
            Ask,
            &[],
            &["example.org", "*.Wikipedia.org."],
            &["https://*"],
        ),
        grant("http_fetch", Deny, &[], &[], &[]),
        grant("consult", Auto, &[], &[], &[]),
        grant("consult", Deny, &[], &[], &["*password*"]),
    ] {
        validate(&g).expect(&g.tool);
    }
}

#[test]
fn paths_cover_by_component_prefix_and_report_the_normal_form() {
    let g = grant(
        "read_file",
        Mode::Auto,
        &["/home/owner/notes", "/srv/share"],
        &[],
        &[],
    );
    for (raw, normal) in [
        ("/home/owner/notes", "/home/owner/notes"),
        ("/home/owner/notes/", "/home/owner/notes"),
        ("/home/owner/notes/./a.md", "/home/owner/notes/a.md"),
        ("//home//owner/notes/a.md", "/home/owner/notes/a.md"),
        ("/srv/share/x", "/srv/share/x"),
    ] {
        let covered = check(&g, &read(raw)).expect(raw);
        assert_eq!(covered.path.as_deref(), Some(normal), "{raw}");
        assert_eq!(covered.host, None);
        assert_eq!(covered.url, None);
    }
    let err = check(&g, &read("/etc/shadow"))
        .expect_err("outside")
        .to_string();
    assert_eq!(
        err,
        "\"/etc/shadow\" is not under any of /home/owner/notes, /srv/share"
    );
    for (raw, word) in [
        ("/home/owner/notes2/a", "not under"),
        ("/home/owner", "not under"),
        ("/home/owner/notes/../.ssh/id_ed25519", "`..`"),
        ("/home/owner/notes/..", "`..`"),
        ("../notes/a.md", "absolute"),
        ("notes/a.md", "absolute"),
        ("/home/owner/notes/a\0", "NUL"),
    ] {
        let err = check(&g, &read(raw)).expect_err(raw).to_string();
        assert!(err.contains(word), "{raw}: {err}");
    }
}

#[test]
fn list_dir_follows_the_same_path_rules() {
    let g = grant("list_dir", Mode::Ask, &["/srv"], &[], &[]);
    assert_eq!(
        check(&g, &list("/srv/")).expect("dir").path.as_deref(),
        Some("/srv")
    );
    assert!(check(&g, &list("/srv/../etc")).is_err());
    assert!(check(&g, &list("/srvx")).is_err());
    let root = grant("list_dir", Mode::Ask, &["/"], &[], &[]);
    assert!(
        check(&root, &list("/etc")).is_ok(),
        "a / grant covers everything"
    );
    assert!(check(&root, &list("/etc/..")).is_err(), "but never `..`");
}

#[test]
fn a_grant_covers_only_its_own_tool() {
    let g = grant("read_file", Mode::Auto, &["/srv"], &[], &[]);
    let err = check(&g, &list("/srv"))
        .expect_err("other tool")
        .to_string();
    assert_eq!(err, "the grant is for read_file, the call is to list_dir");
}

#[test]
fn every_non_empty_list_must_match() {
    let g = grant("read_file", Mode::Auto, &["/srv"], &[], &["*.md", "*.txt"]);
    assert!(check(&g, &read("/srv/a.md")).is_ok());
    assert!(
        check(&g, &read("/srv/b/c.txt")).is_ok(),
        "any pattern of the list"
    );
    let err = check(&g, &read("/srv/a.key"))
        .expect_err("no pattern")
        .to_string();
    assert_eq!(
        err,
        r#""/srv/a.key" matches none of the patterns "*.md", "*.txt""#
    );
    assert!(check(&g, &read("/etc/a.md")).is_err(), "paths still apply");
    // Patterns see the normal form, so spelling the path differently changes nothing.
    let only_a = grant("read_file", Mode::Auto, &["/srv"], &[], &["/srv/a"]);
    assert!(check(&only_a, &read("//srv/./a/")).is_ok());
}

#[test]
fn deny_grants_with_empty_lists_cover_every_value() {
    let all = grant("read_file", Mode::Deny, &[], &[], &[]);
    for p in ["/", "/etc/shadow", "/home/owner/notes/a.md"] {
        assert!(check(&all, &read(p)).is_ok(), "{p}");
    }
    let keys = grant("read_file", Mode::Deny, &[], &[], &["*.key", "*/.ssh/*"]);
    assert!(check(&keys, &read("/srv/tls.key")).is_ok());
    assert!(check(&keys, &read("/home/owner/.ssh/id_ed25519")).is_ok());
    assert!(check(&keys, &read("/srv/readme")).is_err());
    let fetch_all = grant("http_fetch", Mode::Deny, &[], &[], &[]);
    assert!(check(&fetch_all, &fetch("https://anything.example/")).is_ok());
    let consult_all = grant("consult", Mode::Deny, &[], &[], &[]);
    assert!(check(&consult_all, &consult("hello")).is_ok());
    // Malformed arguments are covered by no grant, a deny grant included; the caller denies
    // them for want of a grant.
    assert!(check(&all, &read("relative")).is_err());
    assert!(check(&fetch_all, &fetch("file:///etc/passwd")).is_err());
}

#[test]
fn hosts_cover_urls_by_normalised_host() {
    let g = grant(
        "http_fetch",
        Mode::Auto,
        &[],
        &["example.org", "*.wikipedia.org", "::1"],
        &[],
    );
    for (raw, host, url) in [
        (
            "https://EXAMPLE.org./a#x",
            "example.org",
            "https://example.org/a",
        ),
        (
            "http://example.org:8080/",
            "example.org",
            "http://example.org:8080/",
        ),
        (
            "https://de.wikipedia.org/wiki/X",
            "de.wikipedia.org",
            "https://de.wikipedia.org/wiki/X",
        ),
        (
            "https://a.b.wikipedia.org./",
            "a.b.wikipedia.org",
            "https://a.b.wikipedia.org/",
        ),
    ] {
        let covered = check(&g, &fetch(raw)).expect(raw);
        assert_eq!(covered.host, Some(Host::Name(host.into())), "{raw}");
        assert_eq!(
            covered.url.as_ref().map(url::Url::as_str),
            Some(url),
            "{raw}"
        );
        assert_eq!(covered.path, None);
    }
    let v6 = check(&g, &fetch("http://[::1]:8000/")).expect("listed ip");
    assert_eq!(v6.host, Some(Host::Ip("::1".parse().expect("ip"))));
    for (raw, word) in [
        ("https://wikipedia.org/", "is not any of"),
        ("https://example.org.evil.com/", "is not any of"),
        ("https://evil-example.org/", "is not any of"),
        ("https://www.example.org/", "is not any of"),
        ("http://127.0.0.1/", "is not any of"),
        ("http://[::2]/", "is not any of"),
        ("https://example.org@evil.com/", "user name or password"),
        ("ftp://example.org/", "only http and https"),
    ] {
        let err = check(&g, &fetch(raw)).expect_err(raw).to_string();
        assert!(err.contains(word), "{raw}: {err}");
    }
    let err = check(&g, &fetch("https://evil.com/"))
        .expect_err("evil")
        .to_string();
    assert_eq!(
        err,
        "the host evil.com of \"https://evil.com/\" is not any of example.org, *.wikipedia.org, ::1"
    );
}

#[test]
fn url_patterns_match_the_normalised_url() {
    let g = grant(
        "http_fetch",
        Mode::Auto,
        &[],
        &["example.org"],
        &["https://example.org/docs/*"],
    );
    for ok in [
        "https://example.org/docs/a",
        "HTTPS://EXAMPLE.ORG./docs/a#frag",
        "https://example.org:443/docs/",
        "https://example.org/%64ocs/a",
    ] {
        assert!(check(&g, &fetch(ok)).is_ok(), "{ok}");
    }
    for bad in [
        "http://example.org/docs/a",
        "https://example.org:8443/docs/a",
        "https://example.org/docs",
        "https://example.org/docs/../secret",
        "https://example.org/docs/%2e%2e/secret",
        "https://example.org/docs/..%2fsecret",
        "https://example.org/docs/..;/secret",
    ] {
        assert!(check(&g, &fetch(bad)).is_err(), "{bad}");
    }
}

#[test]
fn consult_patterns_match_the_prompt() {
    let g = grant(
        "consult",
        Mode::Auto,
        &[],
        &[],
        &["Summarise:*", "Translate:*"],
    );
    assert!(check(&g, &consult("Summarise: a long text\nwith lines")).is_ok());
    assert!(check(&g, &consult("Translate:")).is_ok());
    let err = check(&g, &consult("summarise: lower case"))
        .expect_err("case")
        .to_string();
    assert!(err.starts_with("the prompt matches none"), "{err}");
    let open = grant("consult", Mode::Auto, &[], &[], &[]);
    assert_eq!(check(&open, &consult("anything")), Ok(Covered::default()));
}

/// The examples of docs/grants.md, byte for byte, so the owner's reference cannot drift from
/// what loads. (The docs are outside the crate's sources, so they are repeated here.)
#[test]
fn the_documented_examples_load() {
    for text in [
        r#"# /etc/boxmaker/grants/notes-read.toml
tool = "read_file"
mode = "auto"
max_taint = "secret"
untrusted = false

[constraints]
paths = ["/home/owner/notes"]
patterns = ["*.md", "*.txt"]
"#,
        r#"# /etc/boxmaker/grants/notes-list.toml
tool = "list_dir"
mode = "auto"
max_taint = "secret"
untrusted = false

[constraints]
paths = ["/home/owner/notes"]
"#,
        r#"# /etc/boxmaker/grants/no-keys.toml
tool = "read_file"
mode = "deny"
max_taint = "secret"

[constraints]
patterns = ["*/.ssh/*", "*.key", "*/.gnupg/*"]
"#,
        r#"# /etc/boxmaker/grants/web-ask.toml
tool = "http_fetch"
mode = "ask"
max_taint = "private"
result_class = "public"
if_untrusted = "deny"

[constraints]
hosts = ["example.org", "*.wikipedia.org"]
"#,
        r#"# /etc/boxmaker/grants/docs-rs.toml
tool = "http_fetch"
mode = "auto"
max_taint = "private"
result_class = "public"
expires = "2027-01-01T00:00:00.000Z"

[constraints]
hosts = ["docs.rs"]
patterns = ["https://docs.rs/*"]
"#,
        r#"# /etc/boxmaker/grants/consult.toml
tool = "consult"
mode = "auto"
max_taint = "private"
secret = "consult-key"
if_untrusted = "ask"
"#,
        r#"# /etc/boxmaker/grants/nas-ask.toml
tool = "http_fetch"
mode = "ask"
max_taint = "private"

[constraints]
hosts = ["nas.home.arpa"]
private_networks = true
"#,
        r#"# /etc/boxmaker/grants/no-consult.toml
tool = "consult"
mode = "deny"
max_taint = "secret"
"#,
        r#"# /etc/boxmaker/grants/bank.toml
tool = "http_fetch"
mode = "ask"
max_taint = "private"
always_ask = true

[constraints]
hosts = ["bank.example.com"]
"#,
    ] {
        let g = Grant::from_toml(text).expect(text);
        validate(&g).expect(text);
    }
}

#[test]
fn a_note_grants_patterns_match_the_notes_name() {
    let g = grant("note_read", Mode::Auto, &[], &[], &["shop-*"]);
    let read = |name: &str| {
        ToolArgs::NoteRead(NoteReadArgs {
            name: name.to_owned(),
        })
    };
    assert!(check(&g, &read("shop-monday")).is_ok());
    let refused = check(&g, &read("diary")).expect_err("not a shop note");
    assert_eq!(
        refused.to_string(),
        "\"diary\" matches none of the patterns \"shop-*\""
    );
}
