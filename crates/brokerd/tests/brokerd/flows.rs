//! The flow table (issue 27 point 2): grant sets and the flows a hostile model can complete
//! without asking, as `brokerd::policy::flows::analyse` finds them with `decide_in`.

use brokerd::policy::flows::{self, Setting};
use proto::JobName;
use proto::flows::Flow;

use crate::policy::{now, snapshot};

pub(crate) fn read(id_path: &str, class: &str, extra: &str) -> String {
    format!(
        "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \
         \"{class}\"\nuntrusted = false\n{extra}\n[constraints]\npaths = [\"{id_path}\"]\n"
    )
}

pub(crate) fn fetch(max_taint: &str, extra: &str, hosts: &str) -> String {
    format!(
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"{max_taint}\"\nresult_class = \
         \"public\"\n{extra}\n[constraints]\nhosts = [{hosts}]\n"
    )
}

/// An `auto` MCP grant at `max_taint = "private"` with public results.
pub(crate) fn mcp(tool: &str, constraints: &str, tables: &str) -> String {
    format!(
        "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"private\"\nresult_class = \
         \"public\"\n[constraints]\n{constraints}\n{tables}"
    )
}

/// An `auto` write grant below `dir` for `*.html`, its place public.
pub(crate) fn write(dir: &str, extra: &str) -> String {
    format!(
        "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
         result_class = \"public\"\n{extra}\n\
         [constraints]\npaths = [\"{dir}\"]\npatterns = [\"*.html\"]\n"
    )
}

/// [`write`] into a place read back private, where a session (private from its start) may
/// write.
fn private_place(dir: &str, extra: &str) -> String {
    write(dir, extra).replace("result_class = \"public\"", "result_class = \"private\"")
}

pub(crate) const ORG: &str = "\"api.example.org\"";
const PAST: &str = "expires = \"2020-01-01T00:00:00.000Z\"";
pub(crate) const FUTURE: &str = "expires = \"2099-01-01T00:00:00.000Z\"";

fn job(name: &str) -> JobName {
    JobName::new(name.to_owned()).expect("job name")
}

/// (severity, job, source grant, sink grant or `deliver`, sink what).
pub(crate) type Row = (
    &'static str,
    Option<&'static str>,
    &'static str,
    &'static str,
    &'static str,
);

/// (what it shows, the grant files, the configuration's part, the flows expected).
pub(crate) type Case = (&'static str, Vec<(&'static str, String)>, Setting, Vec<Row>);

fn found(flows: &[Flow]) -> Vec<(String, Option<String>, String, String, String)> {
    flows
        .iter()
        .map(|f| {
            (
                f.severity.as_str().to_owned(),
                f.job.as_ref().map(ToString::to_string),
                f.source.grant.clone().unwrap_or_default(),
                f.sink.grant.clone().unwrap_or_else(|| f.sink.tool.clone()),
                f.sink.what.clone(),
            )
        })
        .collect()
}

pub(crate) fn check(name: &str, grants: &[(&str, &str)], setting: &Setting, expected: &[Row]) {
    let snapshot = snapshot(grants);
    let flows = flows::analyse(&snapshot, setting, now()).expect("analysed");
    let want: Vec<_> = expected
        .iter()
        .map(|(s, j, src, sink, what)| {
            (
                (*s).to_owned(),
                j.map(str::to_owned),
                (*src).to_owned(),
                (*sink).to_owned(),
                (*what).to_owned(),
            )
        })
        .collect();
    assert_eq!(found(&flows), want, "{name}: {flows:#?}");
}

#[test]
fn the_table() {
    let none = Setting::default();
    let notes = read("/home/owner/notes", "private", "");
    let vault = read("/home/owner/vault", "secret", "");
    let web_private = fetch("private", "", ORG);
    let web_secret = fetch("secret", "", ORG);
    let cases: Vec<Case> = vec![
        (
            "private notes, then an auto fetch that applies at private",
            vec![("notes-read", notes.clone()), ("web", web_private.clone())],
            none.clone(),
            vec![("private_out", None, "notes-read", "web", "api.example.org")],
        ),
        (
            "max_taint = public on the sink stops it",
            vec![
                ("notes-read", notes.clone()),
                ("web", fetch("public", "", ORG)),
            ],
            none.clone(),
            vec![],
        ),
        (
            "a secret source is stopped by max_taint = private, the private one is not",
            vec![
                ("notes-read", notes.clone()),
                ("vault-read", vault.clone()),
                ("web", web_private.clone()),
            ],
            none.clone(),
            vec![("private_out", None, "notes-read", "web", "api.example.org")],
        ),
        (
            "secret out when the sink allows secret",
            vec![("vault-read", vault.clone()), ("web", web_secret.clone())],
            none.clone(),
            vec![("secret_out", None, "vault-read", "web", "api.example.org")],
        ),
        (
            "ask mode on the sink",
            vec![
                ("notes-read", notes.clone()),
                (
                    "web",
                    web_private.replace("mode = \"auto\"", "mode = \"ask\""),
                ),
            ],
            none.clone(),
            vec![],
        ),
        (
            "ask mode on the source",
            vec![
                (
                    "notes-read",
                    notes.replace("mode = \"auto\"", "mode = \"ask\""),
                ),
                ("web", web_private.clone()),
            ],
            none.clone(),
            vec![],
        ),
        (
            "if_untrusted stops the flow from an untrusted source",
            vec![
                (
                    "notes-read",
                    notes.replace("untrusted = false", "untrusted = true"),
                ),
                ("web", fetch("private", "if_untrusted = \"ask\"", ORG)),
            ],
            none.clone(),
            vec![],
        ),
        (
            "if_untrusted does not stop a trusted source",
            vec![
                ("notes-read", notes.clone()),
                ("web", fetch("private", "if_untrusted = \"deny\"", ORG)),
            ],
            none.clone(),
            vec![("private_out", None, "notes-read", "web", "api.example.org")],
        ),
        (
            "an expired sink grant carries nothing",
            vec![
                ("notes-read", notes.clone()),
                ("web", fetch("private", PAST, ORG)),
            ],
            none.clone(),
            vec![],
        ),
        (
            "an expired source grant reads nothing",
            vec![
                ("notes-read", read("/home/owner/notes", "private", PAST)),
                ("web", web_private.clone()),
            ],
            none.clone(),
            vec![],
        ),
        (
            "a grant expiring later still flows",
            vec![
                ("notes-read", notes.clone()),
                ("web", fetch("private", FUTURE, ORG)),
            ],
            none.clone(),
            vec![("private_out", None, "notes-read", "web", "api.example.org")],
        ),
        (
            "overlapping: a deny on one host leaves the others of a wildcard",
            vec![
                ("notes-read", notes.clone()),
                ("web", fetch("private", "", "\"*.example.org\"")),
                (
                    "evil-deny",
                    "tool = \"http_fetch\"\nmode = \"deny\"\nmax_taint = \"secret\"\n\
                     [constraints]\nhosts = [\"evil.example.org\"]\n"
                        .to_owned(),
                ),
            ],
            none.clone(),
            vec![("private_out", None, "notes-read", "web", "*.example.org")],
        ),
        (
            "overlapping: listing a directory is labelled by a secret grant below it",
            vec![
                (
                    "home-list",
                    "tool = \"list_dir\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                     result_class = \"private\"\nuntrusted = false\n\
                     [constraints]\npaths = [\"/home/owner\"]\n"
                        .to_owned(),
                ),
                (
                    "vault-read",
                    vault.replace("mode = \"auto\"", "mode = \"ask\""),
                ),
                ("web", web_secret.clone()),
            ],
            none.clone(),
            vec![("secret_out", None, "home-list", "web", "api.example.org")],
        ),
        (
            "overlapping: a covering grant of higher class labels what another allows",
            vec![
                ("home-read", read("/home/owner", "private", "")),
                (
                    "vault-label",
                    read("/home/owner/vault", "secret", "").replace("\"auto\"", "\"ask\""),
                ),
                ("web", web_secret.clone()),
            ],
            none.clone(),
            // The vault's grant asks, and ask dominates auto: only /home/owner itself flows.
            vec![("private_out", None, "home-read", "web", "api.example.org")],
        ),
        (
            "overlapping: a file below another tool's secret grant is read secret",
            vec![
                ("home-read", read("/home/owner", "private", "")),
                (
                    "vault-list",
                    "tool = \"list_dir\"\nmode = \"ask\"\nmax_taint = \"secret\"\n\
                     result_class = \"secret\"\n[constraints]\npaths = [\"/home/owner/vault\"]\n"
                        .to_owned(),
                ),
                ("web", web_secret.clone()),
            ],
            none.clone(),
            // Reading /home/owner/vault through home-read binds what vault-list labels.
            vec![
                ("secret_out", None, "home-read", "web", "api.example.org"),
                ("private_out", None, "home-read", "web", "api.example.org"),
            ],
        ),
        (
            "consult is a sink",
            vec![
                ("notes-read", notes.clone()),
                (
                    "consult-remote",
                    "tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"private\"\n".to_owned(),
                ),
            ],
            Setting {
                consult: Some("api.example.com".into()),
                ..Setting::default()
            },
            vec![(
                "private_out",
                None,
                "notes-read",
                "consult-remote",
                "the consult model at api.example.com",
            )],
        ),
        (
            "a job's grants flow in its runs only, to its Mattermost delivery",
            vec![
                (
                    "brief-notes",
                    read("/srv/notes", "private", "job = \"morning-brief\""),
                ),
                ("web", web_private.clone()),
            ],
            Setting {
                jobs: vec![(job("morning-brief"), true)],
                ..Setting::default()
            },
            vec![(
                "private_out",
                Some("morning-brief"),
                "brief-notes",
                "deliver",
                "mattermost",
            )],
        ),
        (
            "a job delivering to a note keeps the result in the box",
            vec![(
                "brief-notes",
                read("/srv/notes", "private", "job = \"morning-brief\""),
            )],
            Setting {
                jobs: vec![(job("morning-brief"), false)],
                ..Setting::default()
            },
            vec![],
        ),
        (
            "a job's fetch grant is a sink of its runs; an ordinary deny still denies there",
            vec![
                (
                    "brief-notes",
                    read("/srv/notes", "private", "job = \"brief\""),
                ),
                (
                    "brief-web",
                    fetch(
                        "private",
                        "job = \"brief\"",
                        "\"api.example.org\", \"b.example.org\"",
                    ),
                ),
                (
                    "b-deny",
                    "tool = \"http_fetch\"\nmode = \"deny\"\nmax_taint = \"secret\"\n\
                     [constraints]\nhosts = [\"b.example.org\"]\n"
                        .to_owned(),
                ),
            ],
            Setting {
                jobs: vec![(job("brief"), false)],
                ..Setting::default()
            },
            vec![(
                "private_out",
                Some("brief"),
                "brief-notes",
                "brief-web",
                "api.example.org",
            )],
        ),
        (
            "untrusted public content alone carries nothing out",
            vec![("web", web_private.clone())],
            none.clone(),
            vec![],
        ),
        (
            "a private fetch sends to its own host no flow, to another host one",
            vec![
                (
                    "mail-api",
                    "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
                     result_class = \"private\"\n[constraints]\nhosts = [\"mail.example.net\"]\n"
                        .to_owned(),
                ),
                ("web", web_private.clone()),
            ],
            none.clone(),
            vec![("private_out", None, "mail-api", "web", "api.example.org")],
        ),
        (
            "max_taint = public on the source: every session starts private, it never reads",
            vec![
                (
                    "notes-read",
                    notes.replace("max_taint = \"secret\"", "max_taint = \"public\""),
                ),
                ("web", web_private.clone()),
            ],
            none.clone(),
            vec![],
        ),
        (
            "a public-only program that binds a secret place and reaches a host never runs",
            vec![
                ("vault-read", vault.clone()),
                (
                    "curl-run",
                    "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"public\"\n\
                     result_class = \"public\"\n[constraints]\nprograms = [\"curl\"]\n\
                     patterns = [\"*\"]\npaths = [\"/home/owner/vault\"]\n\
                     hosts = [\"203.0.113.5\"]\n"
                        .to_owned(),
                ),
            ],
            none.clone(),
            vec![],
        ),
        (
            "untrusted content drives a write at private, never one at public, nor one into \
             a public place (a write down from a session that starts private)",
            vec![
                ("web", fetch("private", "untrusted = true", ORG)),
                ("www-write", private_place("/home/owner/www", "")),
                (
                    "www-public",
                    private_place("/home/owner/pub", "")
                        .replace("max_taint = \"private\"", "max_taint = \"public\""),
                ),
                ("www-down", write("/home/owner/down", "")),
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
            "a public-only fetch drives no write: it never applies",
            vec![
                ("web", fetch("public", "untrusted = true", ORG)),
                ("www-write", write("/home/owner/www", "")),
            ],
            none.clone(),
            vec![],
        ),
        (
            "a job's run starts private too: its public-only source reads nothing",
            vec![
                (
                    "brief-notes",
                    read("/srv/notes", "private", "job = \"morning-brief\"")
                        .replace("max_taint = \"secret\"", "max_taint = \"public\""),
                ),
                (
                    "brief-web",
                    fetch("public", "job = \"morning-brief\"\nuntrusted = true", ORG),
                ),
                (
                    "brief-write",
                    private_place("/srv/www", "job = \"morning-brief\""),
                ),
            ],
            Setting {
                jobs: vec![(job("morning-brief"), true)],
                ..Setting::default()
            },
            // What the write reads back (private) can be the run's result; nothing of
            // brief-notes or brief-web, which never apply.
            vec![(
                "private_out",
                Some("morning-brief"),
                "brief-write",
                "deliver",
                "mattermost",
            )],
        ),
    ];
    for (name, grants, setting, expected) in cases {
        let grants: Vec<(&str, &str)> = grants.iter().map(|(i, t)| (*i, t.as_str())).collect();
        check(name, &grants, &setting, &expected);
    }
}
