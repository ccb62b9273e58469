//! `brokerd::run::bind`: what a path call binds into its tool unit, resolved the way the tool
//! resolves it, so that binding one path never undoes the refusal of links.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use brokerd::run::bind::{Bind, resolve};

/// A fresh directory tree for one test, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("bx-bind-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home/notes")).expect("dir");
        std::fs::create_dir_all(dir.join("home/secrets")).expect("dir");
        std::fs::write(dir.join("home/notes/todo.md"), "milk").expect("file");
        std::fs::write(dir.join("home/secrets/key"), "hunter2").expect("file");
        // Resolved once, so the expectations hold on a machine whose temp dir is a link.
        Self(std::fs::canonicalize(&dir).expect("real temp dir"))
    }

    fn at(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn at_itself(path: &str) -> Bind {
    Bind {
        source: path.into(),
        target: path.into(),
    }
}

#[test]
fn the_covered_path_alone_is_bound() {
    let t = Tree::new("plain");
    let roots = [t.at("home")];
    let file = t.at("home/notes/todo.md");
    assert_eq!(resolve(&file, &roots).expect("bound"), at_itself(&file));
    let dir = t.at("home/notes");
    assert_eq!(resolve(&dir, &roots).expect("bound"), at_itself(&dir));
    // The root itself, when the call names it.
    assert_eq!(
        resolve(&roots[0], &roots).expect("bound"),
        at_itself(&roots[0])
    );
}

#[test]
fn a_link_below_the_granted_directory_is_refused() {
    let t = Tree::new("below");
    let roots = [t.at("home/notes")];
    symlink(t.0.join("home/secrets/key"), t.0.join("home/notes/key")).expect("link");
    symlink(t.0.join("home/secrets"), t.0.join("home/notes/dir")).expect("link");
    for path in [t.at("home/notes/key"), t.at("home/notes/dir/key")] {
        let err = resolve(&path, &roots)
            .expect_err("a link below the root")
            .to_string();
        assert!(err.contains("links are not followed"), "{err}");
        assert!(!err.contains("secrets"), "the target is not named: {err}");
    }
}

#[test]
fn a_link_in_the_roots_own_prefix_is_the_owners_layout() {
    let t = Tree::new("prefix");
    // The owner's notes live elsewhere; the grant names the link.
    symlink(t.0.join("home/notes"), t.0.join("notes-link")).expect("link");
    let roots = [t.at("notes-link")];
    let path = t.at("notes-link/todo.md");
    assert_eq!(
        resolve(&path, &roots).expect("bound"),
        Bind {
            source: t.at("home/notes/todo.md"),
            target: path,
        }
    );
}

#[test]
fn a_missing_path_or_one_outside_the_roots_binds_nothing() {
    let t = Tree::new("missing");
    let roots = [t.at("home/notes")];
    let err = resolve(&t.at("home/notes/gone.md"), &roots)
        .expect_err("missing")
        .to_string();
    assert!(err.ends_with("gone.md does not exist"), "{err}");
    let err = resolve(&t.at("home/secrets/key"), &roots)
        .expect_err("outside")
        .to_string();
    assert!(err.contains("outside the granted paths"), "{err}");
    let err = resolve(&t.at("home/notes/todo.md"), &[t.at("gone")])
        .expect_err("no root")
        .to_string();
    assert!(err.contains("outside the granted paths"), "{err}");
    let unseen = [t.at("gone")];
    let path = format!("{}/x", unseen[0]);
    let err = resolve(&path, &unseen).expect_err("no root").to_string();
    assert!(err.contains("does not exist"), "{err}");
    assert!(Path::new(&t.at("home")).is_dir());
}

/// The run brokerd builds for one call under these grants (`(id, text)`), from its decision
/// and a config with `extra` settings: policy, then `tool_spec::build`, as brokerd does.
fn run_of(
    grants: &[(&str, String)],
    extra: &str,
    tool: &str,
    arguments: &str,
) -> Result<brokerd::run::runner::RunSpec, brokerd::run::tool_spec::SpecError> {
    use brokerd::policy::{self, SessionView};
    use proto::tools::ToolArgs;

    let config = config::Config::parse(
        Path::new("c.toml"),
        &format!(
            "[sockets]\nloop_broker = \"/run/b/l\"\nadmin_broker = \"/run/b/a\"\n\
             [peers]\nloopd = {{ user = \"boxmaker-loopd\" }}\n\
             admin = {{ group = \"boxmaker-admin\" }}\n{extra}"
        ),
    )
    .expect("config");
    let snapshot = grants::Snapshot::from_texts(
        grants
            .iter()
            .map(|(id, text)| {
                let file = PathBuf::from(format!("{id}.toml"));
                ((*id).to_owned(), (file, text.clone()))
            })
            .collect(),
    )
    .expect("grants");
    let args = ToolArgs::parse(tool, arguments).expect("args");
    let session = SessionView {
        taint: proto::DataClass::Private,
        untrusted: false,
    };
    let decision = policy::decide(&snapshot, &args, session, proto::Timestamp::now());
    let req = proto::ToolRequest {
        session: proto::SessionId::new("s-1").expect("id"),
        call: proto::CallId(1),
        tool: tool.into(),
        arguments: arguments.into(),
        // The unit a decided call gets; the witness was checked before the decision.
        witness: Some(proto::attest::WitnessRef {
            completion: proto::attest::CompletionId::from_random([1; 16]),
            index: 0,
        }),
    };
    brokerd::run::tool_spec::build(&config, &req, &decision)
}

/// From the decision to the unit: a read of one file under a granted home binds that file
/// alone into the systemd unit, neither the grant's root nor the secrets beside it.
#[test]
fn the_systemd_unit_of_a_call_binds_only_the_covered_path() {
    use brokerd::run::runner::SystemdRunner;

    let t = Tree::new("unit");
    let home = t.at("home");
    let grant = format!(
        "tool = \"{{tool}}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
         [constraints]\npaths = [\"{home}\"]\n"
    );
    let grants = [
        ("home-read", grant.replace("{tool}", "read_file")),
        ("home-list", grant.replace("{tool}", "list_dir")),
    ];
    let runner = SystemdRunner::new(
        "/usr/bin/boxmaker-tool",
        "/run/boxmaker/tool-root",
        vec!["/usr".into()],
    );
    for (tool, path) in [
        ("read_file", t.at("home/notes/todo.md")),
        ("list_dir", t.at("home/notes")),
    ] {
        let arguments = format!(r#"{{"path":"{path}"}}"#);
        let spec = run_of(&grants, "", tool, &arguments).expect("spec");
        let binds: Vec<String> = runner
            .properties(&spec)
            .into_iter()
            .filter(|(k, _)| k == "BindReadOnlyPaths")
            .map(|(_, v)| v)
            .collect();
        assert_eq!(binds, ["/usr".to_owned(), format!("-{path}")], "{tool}");
    }
}

/// brokerd sees a granted path whose prefix is a link as systemd mounted it: a plain
/// directory at the link's name. By inode, the bound file is still found under every granted
/// path it really lies under, so their grants label it.
#[test]
fn a_bound_path_is_named_under_every_granted_path_that_is_the_same_directory() {
    use brokerd::run::bind::names;

    let t = Tree::new("names");
    // Another name for home/secrets, as a bind mount or a link would give it.
    symlink(t.0.join("home/secrets"), t.0.join("vault")).expect("link");
    let bind = at_itself(&t.at("home/secrets/key"));
    let vault = t.at("vault");
    let notes = t.at("home/notes");
    assert_eq!(
        names(&bind, [vault.as_str(), notes.as_str()]),
        [bind.source.clone(), bind.target.clone(), t.at("vault/key")]
    );
    // An ancestor that is the same directory counts too, not only the bound path itself.
    let deeper = at_itself(&t.at("home/secrets"));
    let home_alias = t.at("home-alias");
    symlink(t.0.join("home"), &home_alias).expect("link");
    let found = names(&deeper, [home_alias.as_str()]);
    assert!(found.contains(&t.at("home-alias/secrets")), "{found:?}");
    // A granted path that is some other directory names nothing.
    assert_eq!(names(&deeper, [notes.as_str()]).len(), 2);
}

/// From the decision to the run, for consult: a `broker.consult.url` that no grant could
/// cover is refused with the URL's own refusal, kept as the cause.
#[test]
fn a_consult_url_brokerd_does_not_accept_gives_no_run() {
    use brokerd::run::tool_spec::SpecError;
    use grants::constraints::UrlError;

    let grant = "tool = \"consult\"\nmode = \"auto\"\nmax_taint = \"secret\"\nsecret = \"key\"\n";
    let err = run_of(
        &[("consult", grant.to_owned())],
        "[broker.consult]\nurl = \"ftp://api.example/v1\"\nmodel = \"m\"\n",
        "consult",
        r#"{"prompt":"hi"}"#,
    )
    .expect_err("ftp");
    assert_eq!(
        err.to_string(),
        "broker.consult.url: \"ftp://api.example/v1\": only http and https URLs can be \
         fetched, not ftp:"
    );
    // The URL's own error is kept, typed; its text is printed, not chained (F16).
    let source = match &err {
        SpecError::ConsultUrl(e) => Some(e),
        _ => None,
    };
    assert_eq!(
        source,
        Some(&UrlError::Scheme {
            url: "ftp://api.example/v1".into(),
            scheme: "ftp".into(),
        })
    );
    assert!(matches!(err, SpecError::ConsultUrl(_)), "{err:?}");
}
