use std::path::Path;

use super::super::{Config, ConfigError, Invalid};
use super::*;

const BASE: &str = r#"
home = "/var/lib/boxmaker"
[sockets]
loop_broker = "/run/boxmaker/loop-broker"
admin_broker = "/run/boxmaker/admin-broker"
[peers]
loopd = { user = "boxmaker-loopd" }
admin = { group = "boxmaker-admin" }
"#;

const TIME: &str = r#"
[[mcp]]
name = "time"
command = ["/opt/mcp/bin/mcp-server-time", "--local-timezone", "UTC"]
"#;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(Path::new("c.toml"), text)
}

fn refusal(servers: &str) -> McpInvalid {
    match parse(&format!("{BASE}{servers}")) {
        Err(ConfigError::Invalid {
            reason: Invalid::Mcp(e),
            ..
        }) => e,
        other => panic!("not an [[mcp]] refusal: {other:?}"),
    }
}

#[test]
fn a_server_takes_its_defaults_and_its_pin_file() {
    let c = parse(&format!("{BASE}{TIME}")).expect("valid");
    let s = &c.mcp[0];
    assert_eq!(s.name, "time");
    assert_eq!(s.command.len(), 3);
    assert!(s.env.is_empty() && s.secret_env.is_none() && s.binds.is_empty());
    // The pin bxctl mcp pin writes, unless the configuration names one.
    assert_eq!(
        s.pin_file(&c.mcp_dir()),
        Path::new("/var/lib/boxmaker/mcp/time.json")
    );
    let named = format!("{BASE}{TIME}pin = \"/etc/boxmaker/mcp/time.json\"\n");
    let c = parse(&named).expect("a named pin");
    assert_eq!(
        c.mcp[0].pin_file(&c.mcp_dir()),
        Path::new("/etc/boxmaker/mcp/time.json")
    );
    assert!(parse(BASE).expect("no servers").mcp.is_empty());
}

#[test]
fn a_bad_name_is_refused() {
    for name in ["Time", "-time", "ti_me", "", "a234567890123456789012345"] {
        let servers = format!("[[mcp]]\nname = {name:?}\ncommand = [\"/bin/true\"]\n");
        assert_eq!(
            refusal(&servers),
            McpInvalid::Name { name: name.into() },
            "{name:?}"
        );
    }
    // 24 characters, digits and an inner '-' are a name.
    let ok = "[[mcp]]\nname = \"a-2345678901234567890123\"\ncommand = [\"/bin/true\"]\n";
    parse(&format!("{BASE}{ok}")).expect("24 characters");
}

#[test]
fn a_name_twice_is_refused() {
    assert_eq!(
        refusal(&format!("{TIME}{TIME}")),
        McpInvalid::Duplicate {
            name: "time".into()
        }
    );
}

#[test]
fn a_missing_program_is_refused() {
    for command in ["[\"\"]", "[\"\", \"--flag\"]"] {
        let servers = format!("[[mcp]]\nname = \"time\"\ncommand = {command}\n");
        assert_eq!(
            refusal(&servers),
            McpInvalid::NoCommand {
                name: "time".into()
            },
            "{command}"
        );
    }
}

#[test]
fn environment_names_are_checked_and_the_secrets_too() {
    for (line, var) in [
        ("env = { \"1TZ\" = \"UTC\" }", "1TZ"),
        ("env = { \"TZ-X\" = \"UTC\" }", "TZ-X"),
        ("env = { \"\" = \"UTC\" }", ""),
        ("secret_env = \"API KEY\"", "API KEY"),
    ] {
        assert_eq!(
            refusal(&format!("{TIME}{line}\n")),
            McpInvalid::EnvName {
                name: "time".into(),
                var: var.into()
            },
            "{line}"
        );
    }
    let ok = format!("{BASE}{TIME}env = {{ TZ = \"UTC\", _x1 = \"\" }}\nsecret_env = \"KEY\"\n");
    parse(&ok).expect("plain names");
}

#[test]
fn binds_and_the_pin_must_be_absolute() {
    for line in ["binds = [\"/opt/mcp\", \"venv\"]", "pin = \"time.json\""] {
        let e = refusal(&format!("{TIME}{line}\n"));
        assert!(
            matches!(&e, McpInvalid::NotAbsolute { name, .. } if name == "time"),
            "{line}: {e:?}"
        );
        assert!(e.to_string().contains("must be an absolute path"), "{e}");
    }
}

#[test]
fn an_mcp_file_holds_mcp_entries_alone() {
    let servers = mcp_file(TIME).expect("[[mcp]] alone");
    assert_eq!(servers[0].name, "time");
    assert!(mcp_file("").expect("empty").is_empty());
    // Anything else belongs to the configuration bxctl writes: refused, not ignored.
    assert!(mcp_file(&format!("{TIME}[peers]\n")).is_err());
    assert!(mcp_file(&format!("{TIME}network = true\n")).is_err());
}

#[test]
fn a_remote_server_is_a_url_and_nothing_of_a_started_one() {
    let remote = "[[mcp]]\nname = \"remote\"\nurl = \"http://127.0.0.1:8931/mcp\"\n";
    let c = parse(&format!("{BASE}{remote}")).expect("a remote server");
    assert_eq!(c.mcp[0].url.as_deref(), Some("http://127.0.0.1:8931/mcp"));
    assert!(c.mcp[0].command.is_empty());
    for ok in ["http://mcp.example.org", "http://[::1]:80/a?b=c"] {
        let servers = format!("[[mcp]]\nname = \"r\"\nurl = {ok:?}\n");
        parse(&format!("{BASE}{servers}")).expect(ok);
    }
    // Neither, or both.
    let name = || "remote".to_owned();
    for servers in [
        "[[mcp]]\nname = \"remote\"\n",
        "[[mcp]]\nname = \"remote\"\ncommand = []\n",
        "[[mcp]]\nname = \"remote\"\ncommand = [\"/bin/srv\"]\nurl = \"http://h/\"\n",
    ] {
        assert_eq!(
            refusal(servers),
            McpInvalid::CommandOrUrl { name: name() },
            "{servers}"
        );
    }
}

#[test]
fn a_remote_servers_url_is_http_or_https_with_a_host() {
    let entry = |url: &str| format!("[[mcp]]\nname = \"remote\"\nurl = {url:?}\n");
    for ok in ["https://mcp.example.org/mcp", "https://192.0.2.7:8443"] {
        parse(&format!("{BASE}{}", entry(ok))).expect(ok);
    }
    for url in [
        "ftp://h/",
        "h:80/mcp",
        "http://",
        "http:///mcp",
        "http://user@h/mcp",
        "http://h/a b",
        "http://h/#frag",
        "http://:80/",
        "HTTP://h/",
        "HTTPS://h/",
        "https://u@h/",
        "http://h?x=1",
    ] {
        assert_eq!(
            refusal(&entry(url)),
            McpInvalid::Url {
                name: "remote".into(),
                url: url.into()
            },
            "{url}"
        );
    }
    for (line, field) in [
        ("env = { A = \"b\" }", "env"),
        ("secret_env = \"TOKEN\"", "secret_env"),
        ("binds = [\"/opt\"]", "binds"),
    ] {
        let servers = format!("{}{line}\n", entry("http://h/mcp"));
        assert_eq!(
            refusal(&servers),
            McpInvalid::NotForUrl {
                name: "remote".into(),
                field
            },
            "{line}"
        );
    }
}

#[test]
fn a_secret_header_is_a_remote_servers_and_a_header_name() {
    let remote = |line: &str| format!("[[mcp]]\nname = \"far\"\nurl = \"https://h/mcp\"\n{line}\n");
    let c = parse(&format!(
        "{BASE}{}",
        remote("secret_header = \"Authorization\"")
    ))
    .expect("ok");
    assert_eq!(c.mcp[0].secret_header.as_deref(), Some("Authorization"));
    for header in [
        "",
        "Auth orization",
        "X:Y",
        "Host",
        "mcp-session-id",
        "Content-Length",
    ] {
        assert_eq!(
            refusal(&remote(&format!("secret_header = {header:?}"))),
            McpInvalid::Header {
                name: "far".into(),
                header: header.into()
            },
            "{header:?}"
        );
    }
    let started = format!("{TIME}secret_header = \"Authorization\"\n");
    assert_eq!(
        refusal(&started),
        McpInvalid::HeaderNeedsUrl {
            name: "time".into()
        }
    );
}
