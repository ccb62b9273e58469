//! How a flow is said (issue 27 point 2): the one line a person acts on, and what
//! `brokerd --flows [--json]` prints from a configuration and its grant files.

use brokerd::policy::flows::{self, Setting};

use crate::flows::{FUTURE, ORG, fetch, read};
use crate::policy::{now, snapshot};

#[test]
fn a_flow_is_one_line_that_says_what_to_do() {
    let snapshot = snapshot(&[
        ("notes-read", &read("/home/owner/notes", "private", "")),
        (
            "consult-remote",
            "tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"private\"\nsecret = \"consult-key\"\n",
        ),
        ("web", &fetch("secret", FUTURE, ORG)),
        ("vault-read", &read("/home/owner/vault", "secret", "")),
    ]);
    let setting = Setting {
        consult: Some("api.example.com".into()),
        ..Setting::default()
    };
    let flows = flows::analyse(&snapshot, &setting, now()).expect("analysed");
    let texts: Vec<&str> = flows.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "a hijacked model can read /home/owner/vault (secret) via grant vault-read and send \
             it to api.example.org via grant web (until 2099-01-01T00:00:00.000Z), without \
             asking you: set max_taint = \"private\" on web, or mode = \"ask\"",
            // consult's answers are private and untrusted by the grant's defaults.
            "a hijacked model can ask the consult model at api.example.com (private, \
             untrusted) via grant consult-remote and send it to api.example.org via grant web \
             (until 2099-01-01T00:00:00.000Z), without asking you: set max_taint = \"public\" \
             on web (which turns it off: every session is private from its start), or mode = \
             \"ask\", or if_untrusted = \"ask\"",
            "a hijacked model can read /home/owner/notes (private) via grant notes-read and \
             send it to the consult model at api.example.com via grant consult-remote, without \
             asking you: set max_taint = \"public\" on consult-remote (which turns it off: \
             every session is private from its start), or mode = \"ask\"",
            "a hijacked model can read /home/owner/notes (private) via grant notes-read and \
             send it to api.example.org via grant web (until 2099-01-01T00:00:00.000Z), \
             without asking you: set max_taint = \"public\" on web (which turns it off: every \
             session is private from its start), or mode = \"ask\"",
        ]
    );
}

/// `brokerd --flows [--json]` reads the configuration and the grants, prints the flows and
/// starts nothing; the jobs and the consult model come from the configuration.
#[test]
fn the_binary_prints_the_flows_from_config_and_grants() {
    let dir = std::env::temp_dir().join(format!("bx-brokerd-flows-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("grants")).expect("dir");
    let grants = [
        ("notes-read", read("/home/owner/notes", "private", "")),
        ("web", fetch("private", "", ORG)),
        (
            "brief-notes",
            read("/srv/notes", "secret", "job = \"morning-brief\""),
        ),
    ];
    for (id, text) in &grants {
        std::fs::write(dir.join(format!("grants/{id}.toml")), text).expect("grant");
    }
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "home = \"{0}/home\"\ngrants = \"{0}/grants\"\n[sockets]\nloop_broker = \"{0}/l\"\n\
             admin_broker = \"{0}/a\"\n[peers]\nloopd = {{ uid = 1 }}\nadmin = {{ uid = 2 }}\n\
             infer = {{ uid = 3 }}\njobs = {{ uid = 4 }}\ngateway = {{ uid = 5 }}\n\
             [[jobs]]\nname = \"morning-brief\"\nschedule = \"daily\"\nprompt = \"p\"\n\
             deliver = \"mattermost\"\n[gateway]\nserver = \"https://chat.example.com\"\n\
             owners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\nchannel = \"c\"\n",
            dir.display()
        ),
    )
    .expect("config");
    let run = |json: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_brokerd"));
        cmd.arg("--config")
            .arg(dir.join("config.toml"))
            .arg("--flows");
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().expect("brokerd");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let text = run(false);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with(
            "secret_out      a hijacked model in job morning-brief's runs can \
                              read /srv/notes (secret) via grant brief-notes and post it to \
                              Mattermost"
        ),
        "{text}"
    );
    assert!(
        lines[1].starts_with("private_out     a hijacked model can read /home/owner/notes"),
        "{text}"
    );
    assert!(
        lines[2].starts_with(
            "flows: 1 secret_out, 1 private_out, 0 untrusted_write from 3 grant(s), snapshot "
        ),
        "{text}"
    );
    let report: proto::flows::FlowsReport =
        serde_json::from_str(run(true).trim_end()).expect("one line of JSON");
    assert_eq!(report.flows.len(), 2);
    assert_eq!(report.grants, ["brief-notes", "notes-read", "web"]);
    assert!(!dir.join("home").exists(), "--flows started something");
    let _ = std::fs::remove_dir_all(&dir);
}
