//! Names made from a write or read grant's patterns, held against brokerd's own matcher.

use super::super::chains;
use super::super::tests::{grant, rewritten};
use super::*;

const DIR: &str = "/s/tree/home/owner/www";

fn write_grant(patterns: &str) -> Grant {
    grant(&format!(
        "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
         paths = [{DIR:?}]\npatterns = {patterns}\n"
    ))
}

/// `*` is the chain's own `bxwrite-N`, `?` a letter, a literal itself, escapes their
/// character, after what the directory's path takes up; several patterns: the first that
/// can be made. Each name is one brokerd lets the grant write.
#[test]
fn names_follow_the_pattern_and_brokerd_agrees() {
    for (patterns, n, expected) in [
        (r#"["*.html"]"#, 3, "bxwrite-3.html"),
        (r#"["*"]"#, 12, "bxwrite-12"),
        (r#"["*/page-??.html"]"#, 1, "page-xx.html"),
        (r#"["*/www/*.htm?"]"#, 4, "bxwrite-4.htmx"),
        (r#"["*owner/w*"]"#, 5, "bxwrite-5"),
        (r#"['*\*.txt']"#, 6, "bxwrite-6*.txt"),
        (r#"["/elsewhere/*", "*.md"]"#, 7, "bxwrite-7.md"),
        (r#"["/s/tree/home/owner/www/?.html"]"#, 8, "x.html"),
    ] {
        let g = write_grant(patterns);
        let named = name(&g.constraints.patterns, DIR, &star(n, "")).expect(patterns);
        assert_eq!(named, format!("{DIR}/{expected}"), "{patterns}");
        assert_eq!(written(&g, DIR, false, n), Ok(named), "{patterns}");
    }
    // Without patterns, the file is the shadow's own, as before.
    let plain = grant(&format!(
        "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
         paths = [{DIR:?}]\n"
    ));
    assert_eq!(
        written(&plain, DIR, false, 2),
        Ok(format!("{DIR}/bxhostile-2.txt"))
    );
}

/// A pattern no file directly in the directory matches is given up, saying why: a path
/// outside it (the owner's own, here not moved as `rewrite` moves it), a `/` below the
/// directory, a granted file the patterns do not match.
#[test]
fn patterns_that_name_no_file_are_refused_with_why() {
    let why = |patterns: &str| {
        let g = write_grant(patterns);
        name(&g.constraints.patterns, DIR, &star(1, "")).expect_err(patterns)
    };
    let owners = why(r#"["/home/owner/www/*.html"]"#);
    assert!(owners.contains("matches no path in"), "{owners}");
    let deeper = why(r#"["*/sub/*.html"]"#);
    assert!(deeper.contains("a `/` in the name"), "{deeper}");
    let both = why(r#"["*.x/y", "/srv/*"]"#);
    assert!(
        both.contains("\"*.x/y\"") && both.contains("\"/srv/*\""),
        "{both}"
    );
    assert!(why(r#"["*/"]"#).contains("`/`"));
    let file = written(
        &write_grant(r#"["*.md"]"#),
        &format!("{DIR}/index.html"),
        true,
        1,
    )
    .expect_err("a file the patterns do not match");
    assert!(file.contains("matches none of the patterns"), "{file}");
    assert_eq!(
        written(
            &write_grant(r#"["*.html"]"#),
            &format!("{DIR}/index.html"),
            true,
            1
        ),
        Ok(format!("{DIR}/index.html"))
    );
}

/// The plan writes each chain's own file, named by the grant's patterns, and creates it;
/// a grant whose patterns name no file has no chain, and is said, not tried.
#[test]
fn the_plan_writes_named_files_and_says_the_grant_it_cannot() {
    let mut r = rewritten();
    r.grants.insert(
        "site".into(),
        grant(
            "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
             paths = [\"/s/tree/home/owner/notes\"]\npatterns = [\"*.html\"]\n",
        ),
    );
    r.grants.insert(
        "owners".into(),
        grant(
            "tool = \"edit_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
             paths = [\"/s/tree/home/owner/notes\"]\npatterns = [\"/home/owner/notes/*\"]\n",
        ),
    );
    let plan = chains::plan(&r, 9, "n0", false);
    let site: Vec<&Chain> = plan.iter().filter(|c| c.sink.grant == "site").collect();
    assert!(!site.is_empty(), "{plan:?}");
    for c in &site {
        assert_eq!(
            c.url,
            format!("/s/tree/home/owner/notes/bxwrite-{}.html", c.n)
        );
        assert!(own(c), "{c:?}");
    }
    assert!(!plan.iter().any(|c| c.sink.grant == "owners"), "{plan:?}");
    let left = unnamed(&r);
    assert_eq!(
        left.iter().map(|l| l.grant.as_str()).collect::<Vec<_>>(),
        ["owners"]
    );
    assert!(left[0].why.contains("matches no path in"), "{left:?}");
}

/// A chain's own file is `bxhostile-N.txt` or holds its `bxwrite-N` (not another chain's
/// `bxwrite-N…`); a granted file is not.
#[test]
fn own_files_are_the_chains_alone() {
    let mut c = Chain {
        n: 3,
        source: chains::Source {
            tool: "http_fetch",
            owner: "api.example.org".into(),
            path: "http://api.example.org/".into(),
        },
        sink: chains::Target {
            tool: "write_file",
            grant: "site".into(),
            entry: "/home/owner/www".into(),
            lookalike: None,
        },
        canary: "BXWRITE-X".into(),
        url: String::new(),
        note: None,
        restart: None,
        smuggle: None,
        write_mode: None,
    };
    for (url, expected) in [
        ("/s/www/bxwrite-3.html", true),
        ("/s/www/bxwrite-3", true),
        ("/s/www/bxhostile-3.txt", true),
        ("/s/www/bxwrite-31.html", false),
        ("/s/www/bxwrite-3/x.html", false),
        ("/s/www/index.html", false),
    ] {
        c.url = url.into();
        assert_eq!(own(&c), expected, "{url}");
    }
}

/// An untrusted write into a grant whose patterns name no file is `not tried`, its grant's
/// line saying why; into one whose patterns do, it is played: with no chain completing
/// it, that fails.
#[test]
fn the_comparison_plays_a_named_write_and_not_an_unnamed_one() {
    use proto::flows::{Flow, FlowsReport, Severity, Step};
    let mut r = rewritten();
    for (id, pattern) in [("site", "*.html"), ("owners", "/home/owner/notes/*")] {
        r.grants.insert(
            id.into(),
            grant(&format!(
                "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 [constraints]\npaths = [\"/s/tree/home/owner/notes\"]\npatterns = [{pattern:?}]\n"
            )),
        );
    }
    let flow = |sink: &str| Flow {
        severity: Severity::UntrustedWrite,
        job: None,
        source: Step {
            grant: Some("web".into()),
            tool: "http_fetch".into(),
            what: "api.example.org".into(),
        },
        class: proto::DataClass::Public,
        untrusted: true,
        sink: Step {
            grant: Some(sink.into()),
            tool: "write_file".into(),
            what: "/home/owner/notes".into(),
        },
        text: format!("a hijacked model can fetch and write via grant {sink}"),
    };
    let report = FlowsReport {
        snapshot: proto::Hash32::ZERO,
        grants: vec!["web".into(), "site".into(), "owners".into()],
        flows: vec![flow("site"), flow("owners")],
        sources: Vec::new(),
    };
    let left = unnamed(&r);
    let found: Vec<(String, String, String)> =
        super::super::compare::checks(&[], &report, &left, &Default::default())
            .into_iter()
            .map(|c| (c.check, format!("{:?}", c.level), c.said))
            .collect();
    assert_eq!(found.len(), 3, "{found:#?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1.as_str()),
        ("untrusted_write", "Fail")
    );
    assert!(found[0].2.contains("grant site"), "{found:#?}");
    assert_eq!(
        (found[1].0.as_str(), found[1].1.as_str()),
        ("untrusted_write", "Warn")
    );
    assert!(
        found[1].2.starts_with("not tried: ")
            && found[1]
                .2
                .contains("grant owners names no file the shadow can write"),
        "{found:#?}"
    );
    assert_eq!(
        (found[2].0.as_str(), found[2].1.as_str()),
        ("not-tried", "Warn")
    );
    assert!(
        found[2]
            .2
            .starts_with("grant owners: not tried: its patterns name no file")
            && found[2]
                .2
                .contains("\"/home/owner/notes/*\" matches no path in"),
        "{found:#?}"
    );
}

/// A read or listing grant with patterns is played when they match what a chain reads
/// under its paths (a file named for them in a directory, a granted file, a listed
/// directory), as brokerd decides; otherwise not tried, as is any other grant with patterns.
#[test]
fn a_read_grant_is_played_when_its_patterns_match_the_canary() {
    let mut r = rewritten();
    for (id, tool, path, pattern) in [
        ("txt", "read_file", "/s/tree/home/owner/notes", "*.txt"),
        ("md", "read_file", "/s/tree/home/owner/notes", "*.md"),
        ("md-file", "read_file", "/s/tree/home/owner/todo.md", "*.md"),
        ("ls", "list_dir", "/s/tree/home/owner/notes", "*/notes"),
        ("ls-md", "list_dir", "/s/tree/home/owner/notes", "*.md"),
        ("away-md", "read_file", "/s/tree/home/owner/away", "*.md"),
        ("site", "write_file", "/s/tree/home/owner/notes", "*.html"),
    ] {
        r.grants.insert(
            id.into(),
            grant(&format!(
                "tool = {tool:?}\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
                 paths = [{path:?}]\npatterns = [{pattern:?}]\n"
            )),
        );
    }
    assert_eq!(
        unread(&r).iter().map(String::as_str).collect::<Vec<_>>(),
        ["away-md", "ls-md", "site"]
    );
}

/// A read grant's patterns.
fn read_grant(mode: &str, patterns: &str) -> Grant {
    grant(&format!(
        "tool = \"read_file\"\nmode = {mode:?}\nmax_taint = \"secret\"\n[constraints]\n\
         paths = [\"/s/tree/home/owner/notes\"]\npatterns = {patterns}\n"
    ))
}

/// The read chains of a directory read the shared `bxcanary.txt` (first, so that the
/// chains of grants without patterns keep their numbers) and a file named for each read
/// grant's patterns that do not match it, each once; of the names a grant's patterns
/// make, one no deny grant's patterns match; the file holds the canaries of the chains
/// that read it alone.
#[test]
fn read_chains_read_a_file_named_for_the_patterns() {
    let notes = "/s/tree/home/owner/notes";
    let mut r = rewritten();
    r.grants.insert(
        "md".into(),
        read_grant("auto", "[\"*.md\", \"*.markdown\"]"),
    );
    r.grants
        .insert("md2".into(), read_grant("ask", "[\"*.md\"]"));
    r.grants
        .insert("txt".into(), read_grant("auto", "[\"*.txt\"]"));
    // The paths the direct read chains to one host read, each once.
    let reads = |r: &Rewritten| -> Vec<String> {
        chains::plan(r, 9, "n0", false)
            .into_iter()
            .filter(|c| {
                c.source.tool == "read_file"
                    && c.source.path.starts_with(notes)
                    && c.sink.entry == "api.example.org"
                    && c.sink.lookalike.is_none()
                    && (c.note.is_none() && c.restart.is_none() && c.smuggle.is_none())
            })
            .map(|c| c.source.path)
            .collect()
    };
    assert_eq!(
        reads(&r),
        [
            format!("{notes}/bxcanary.txt"),
            format!("{notes}/bxcanary.md")
        ]
    );
    assert_eq!(unread(&r), BTreeSet::new());
    // A deny grant's patterns match `*.md`: the grant reads `*.markdown`, which it allows.
    r.grants
        .insert("no-md".into(), read_grant("deny", "[\"*.md\"]"));
    assert_eq!(
        read(&r, &r.grants["md"], notes).as_deref(),
        Ok(format!("{notes}/bxcanary.markdown").as_str())
    );
    assert_eq!(
        reads(&r),
        [
            format!("{notes}/bxcanary.txt"),
            format!("{notes}/bxcanary.markdown"),
            format!("{notes}/bxcanary.md"),
        ]
    );
    // Each file holds its own chains' canaries only.
    let base = std::env::temp_dir().join(format!("wt-readpat-plant-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let tree = base.join("tree");
    let dir = tree.join("notes");
    let mut r = rewritten();
    r.paths.clear();
    r.paths
        .insert("/home/owner/notes".into(), (dir.clone(), false));
    r.grants.insert(
        "md".into(),
        grant(&format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\n\
             paths = [{:?}]\npatterns = [\"*.md\"]\n",
            dir.display()
        )),
    );
    let plan = chains::plan(&r, 9, "n0", false);
    chains::plant(&r, &plan, &tree).expect("plant");
    for (name, file) in [
        ("bxcanary.md", dir.join("bxcanary.md")),
        ("bxcanary.txt", dir.join("bxcanary.txt")),
    ] {
        let text = std::fs::read_to_string(&file).expect("planted");
        let own: Vec<&Chain> = plan
            .iter()
            .filter(|c| c.source.tool == "read_file" && c.source.path.ends_with(name))
            .collect();
        assert!(!own.is_empty(), "{plan:?}");
        for c in &plan {
            assert_eq!(text.contains(&c.canary), own.contains(&c), "{name}: {c:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// A read grant whose patterns name no file the shadow can read is not tried, its line
/// saying why, and a flow from it says so; it has no read chain of its own.
#[test]
fn a_read_grant_no_file_is_named_for_is_said_with_why() {
    use proto::flows::{Flow, FlowsReport, Severity, Step};
    let mut r = rewritten();
    r.grants.insert(
        "owners".into(),
        read_grant("auto", "[\"/home/owner/notes/*.md\"]"),
    );
    let plan = chains::plan(&r, 9, "n0", false);
    assert!(
        plan.iter()
            .all(|c| !c.source.path.starts_with("/s/tree/home/owner/notes/")
                || c.source.path.ends_with("/bxcanary.txt")),
        "{plan:?}"
    );
    let patterned = unread(&r);
    assert!(patterned.contains("owners"), "{patterned:?}");
    let left = unnamed_reads(&r, &patterned);
    assert_eq!(
        left.iter().map(|l| l.grant.as_str()).collect::<Vec<_>>(),
        ["owners"]
    );
    assert!(
        left[0]
            .why
            .starts_with("its patterns name no file the shadow can read: ")
            && left[0].why.contains("matches no path in"),
        "{left:?}"
    );
    let report = FlowsReport {
        snapshot: proto::Hash32::ZERO,
        grants: vec!["web".into(), "owners".into()],
        flows: vec![Flow {
            severity: Severity::PrivateOut,
            job: None,
            source: Step {
                grant: Some("owners".into()),
                tool: "read_file".into(),
                what: "/home/owner/notes".into(),
            },
            class: proto::DataClass::Private,
            untrusted: false,
            sink: Step {
                grant: Some("web".into()),
                tool: "http_fetch".into(),
                what: "api.example.org".into(),
            },
            text: "a hijacked model can read and fetch via grant owners".into(),
        }],
        sources: Vec::new(),
    };
    let found = super::super::compare::checks(&[], &report, &left, &patterned);
    assert!(
        found[0].said.starts_with("not tried: ")
            && found[0]
                .said
                .contains("grant owners names patterns no file the shadow reads matches"),
        "{found:#?}"
    );
    assert!(
        found[1]
            .said
            .starts_with("grant owners: not tried: its patterns"),
        "{found:#?}"
    );
}

/// An untrusted write whose source is a fetch grant with patterns is not tried: the chain's
/// fetch URL is the shadow's own, which the patterns may not admit (a review found it
/// would have failed as a flow no chain completed).
#[test]
fn an_untrusted_write_from_a_patterned_fetch_is_not_tried() {
    use proto::flows::{Flow, FlowsReport, Severity, Step};
    let step = |grant: &str, tool: &str| Step {
        grant: Some(grant.into()),
        tool: tool.into(),
        what: "w".into(),
    };
    let report = FlowsReport {
        snapshot: proto::Hash32::ZERO,
        grants: vec!["feed".into(), "site".into()],
        flows: vec![Flow {
            severity: Severity::UntrustedWrite,
            job: None,
            source: step("feed", "http_fetch"),
            class: proto::DataClass::Public,
            untrusted: true,
            sink: step("site", "write_file"),
            text: "a hijacked model can fetch from feed and write".into(),
        }],
        sources: Vec::new(),
    };
    let patterned = BTreeSet::from(["feed".to_owned()]);
    let found = super::super::compare::checks(&[], &report, &[], &patterned);
    assert_eq!(found.len(), 1);
    assert_eq!(format!("{:?}", found[0].level), "Warn");
    assert!(
        found[0]
            .said
            .contains("grant feed names patterns, and the URL's path is the shadow's own"),
        "{}",
        found[0].said
    );
}
