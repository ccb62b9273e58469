//! The flow table's rows for the tools that act (issue 27 point 2): the hands' writes and
//! programs (issue 25) and MCP tools (issue 26), each classified by `policy::flows::role`.

use brokerd::policy::flows::Setting;

use crate::flows::{Case, check, fetch, mcp, read, write};

#[test]
fn the_hands_and_mcp_tools() {
    let none = Setting::default();
    let notes = read("/home/owner/notes", "private", "");
    let vault = read("/home/owner/vault", "secret", "");
    let web_private = fetch("private", "", crate::flows::ORG);
    // A place read back private: every session is private from its start, so a write into
    // a public place is refused as a write down there (`write_down`), whatever it read.
    let write = |dir: &str, extra: &str| {
        write(dir, extra).replace("result_class = \"public\"", "result_class = \"private\"")
    };
    let cases: Vec<Case> = vec![
        (
            "an MCP tool whose grant lists hosts is a sink",
            vec![
                ("notes-read", notes.clone()),
                (
                    "fetch-mcp",
                    mcp("mcp:fetch/fetch", "hosts = [\"api.example.org\"]", ""),
                ),
            ],
            none.clone(),
            vec![(
                "private_out",
                None,
                "notes-read",
                "fetch-mcp",
                "api.example.org through MCP tool mcp:fetch/fetch",
            )],
        ),
        (
            "an MCP tool without hosts has no network: no sink",
            vec![
                ("notes-read", notes.clone()),
                ("time-mcp", mcp("mcp:time/*", "", "")),
            ],
            none.clone(),
            vec![],
        ),
        (
            "a deny on every tool of the MCP server stops it",
            vec![
                ("notes-read", notes.clone()),
                (
                    "git-mcp",
                    mcp(
                        "mcp:git/*",
                        "hosts = [\"git.example.org\"]",
                        "[constraints.args]\n\"/repo_path\" = [\"/srv/git/*\"]\n",
                    ),
                ),
                (
                    "git-push-deny",
                    "tool = \"mcp:git/*\"\nmode = \"deny\"\nmax_taint = \"secret\"\n".to_owned(),
                ),
            ],
            none.clone(),
            vec![],
        ),
        (
            "an MCP grant's args are met by the call tried",
            vec![
                ("notes-read", notes.clone()),
                (
                    "git-mcp",
                    mcp(
                        "mcp:git/*",
                        "hosts = [\"git.example.org\"]",
                        "[constraints.args]\n\"/repo_path\" = [\"/srv/git/*\"]\n",
                    ),
                ),
            ],
            none.clone(),
            vec![(
                "private_out",
                None,
                "notes-read",
                "git-mcp",
                "git.example.org through MCP tool mcp:git/*",
            )],
        ),
        (
            "untrusted content drives a write of yours",
            vec![
                ("web", web_private.clone()),
                ("www-write", write("/home/owner/www", "")),
            ],
            none.clone(),
            // The write's answer reads back what it wrote (private), and web sends it.
            vec![
                ("private_out", None, "www-write", "web", "api.example.org"),
                (
                    "untrusted_write",
                    None,
                    "web",
                    "www-write",
                    "/home/owner/www",
                ),
            ],
        ),
        (
            "if_untrusted = ask on the write grant stops it",
            vec![
                ("web", web_private.clone()),
                (
                    "www-write",
                    write("/home/owner/www", "if_untrusted = \"ask\""),
                ),
            ],
            none.clone(),
            // Only the write's own answer (what it wrote, private) can still leave.
            vec![("private_out", None, "www-write", "web", "api.example.org")],
        ),
        (
            "a grant saying only the owner writes there stops it (decide_in's untrusted_write)",
            vec![
                ("web", web_private.clone()),
                ("www-write", write("/home/owner/www", "")),
                ("www-read", read("/home/owner/www", "private", "")),
            ],
            none.clone(),
            // No untrusted_write; what www holds (private) can still leave through web.
            vec![
                ("private_out", None, "www-read", "web", "api.example.org"),
                ("private_out", None, "www-write", "web", "api.example.org"),
            ],
        ),
        (
            "a write is no way out: what it writes reads back no lower (decide_in's write_down)",
            vec![
                ("vault-read", vault.clone()),
                ("www-write", write("/home/owner/www", "untrusted = false")),
            ],
            none.clone(),
            vec![],
        ),
        (
            "a trusted private read then a write the policy allows: no flow",
            vec![
                ("notes-read", notes.clone()),
                ("www-write", write("/home/owner/www", "")),
            ],
            none.clone(),
            vec![],
        ),
        (
            "a program whose grant lists hosts is a sink",
            vec![
                ("notes-read", notes.clone()),
                (
                    "curl-run",
                    "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
                     result_class = \"public\"\n[constraints]\nprograms = [\"curl\"]\n\
                     patterns = [\"https://api.example.org/*\"]\nhosts = [\"api.example.org\"]\n"
                        .to_owned(),
                ),
            ],
            none.clone(),
            vec![(
                "private_out",
                None,
                "notes-read",
                "curl-run",
                "api.example.org through run curl",
            )],
        ),
        (
            "an MCP grant whose paths reach a secret place is a secret source",
            vec![
                (
                    "vault-deny",
                    "tool = \"read_file\"\nmode = \"deny\"\nmax_taint = \"secret\"\n\
                     result_class = \"secret\"\n[constraints]\npaths = [\"/home/owner/vault\"]\n"
                        .to_owned(),
                ),
                (
                    "fs-mcp",
                    mcp("mcp:fs/*", "paths = [\"/home/owner/vault\"]", ""),
                ),
                ("web", fetch("secret", "", crate::flows::ORG)),
            ],
            none.clone(),
            vec![("secret_out", None, "fs-mcp", "web", "api.example.org")],
        ),
        (
            "a program that binds a secret place and reaches a host sends it in one call",
            vec![
                ("vault-read", vault.clone()),
                (
                    "curl-run",
                    "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
                     result_class = \"public\"\n[constraints]\nprograms = [\"curl\"]\n\
                     patterns = [\"*\"]\npaths = [\"/home/owner/vault\"]\n\
                     hosts = [\"203.0.113.5\"]\n"
                        .to_owned(),
                ),
            ],
            none.clone(),
            vec![(
                "secret_out",
                None,
                "curl-run",
                "curl-run",
                "203.0.113.5 through run curl",
            )],
        ),
    ];
    for (name, grants, setting, expected) in cases {
        let grants: Vec<(&str, &str)> = grants.iter().map(|(i, t)| (*i, t.as_str())).collect();
        check(name, &grants, &setting, &expected);
    }
}
