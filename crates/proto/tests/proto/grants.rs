use proto::{Constraints, DataClass, Grant, IfUntrusted, JobName, Mode, Timestamp};

use crate::fixture_dir;

fn load(name: &str) -> Grant {
    let text = std::fs::read_to_string(fixture_dir().join(name)).expect("fixture");
    Grant::from_toml(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn a_minimal_grant_takes_the_design_defaults() {
    assert_eq!(
        load("grant_minimal.toml"),
        Grant {
            tool: "read_file".into(),
            mode: Mode::Auto,
            max_taint: DataClass::Secret,
            result_class: DataClass::Private,
            untrusted: true,
            expires: None,
            secret: None,
            constraints: Constraints::default(),
            if_untrusted: None,
            job: None,
            always_ask: false,
        }
    );
}

#[test]
fn a_full_grant_keeps_every_field() {
    assert_eq!(
        load("grant_full.toml"),
        Grant {
            tool: "http_fetch".into(),
            mode: Mode::Ask,
            max_taint: DataClass::Private,
            result_class: DataClass::Public,
            untrusted: true,
            expires: Some(Timestamp::parse("2027-01-01T00:00:00.000Z").expect("ts")),
            secret: Some("web-token".into()),
            constraints: Constraints {
                paths: vec![],
                hosts: vec!["example.org".into(), "*.wikipedia.org".into()],
                patterns: vec!["https://*".into()],
                private_networks: true,
                max_class: None,
                ..Constraints::default()
            },
            if_untrusted: None,
            job: None,
            always_ask: false,
        }
    );
}

#[test]
fn constraint_lists_default_one_by_one() {
    let g = load("grant_partial_constraints.toml");
    assert_eq!(g.mode, Mode::Deny);
    assert!(!g.untrusted);
    assert_eq!(g.result_class, DataClass::Secret);
    assert_eq!(g.constraints.paths, ["/home/owner/notes"]);
    assert!(g.constraints.hosts.is_empty() && g.constraints.patterns.is_empty());
    assert!(!g.constraints.private_networks);
}

#[test]
fn a_bad_grant_names_the_line_and_the_reason() {
    let cases = [
        (
            "tool = \"x\"\nmode = \"auto\"\nmax_taint = \"secret\"\nmodee = 1\n",
            4,
            "unknown field",
        ),
        (
            "tool = \"x\"\nmode = \"always\"\nmax_taint = \"secret\"\n",
            2,
            "unknown variant",
        ),
        (
            "tool = \"x\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = \"no\"\n",
            4,
            "invalid type",
        ),
        (
            "tool = \"x\"\nmode = \"auto\"\nmax_taint = \"secret\"\nexpires = \"2027-01-01\"\n",
            4,
            "timestamp",
        ),
        (
            "tool = \"x\"\nmode = \"auto\"\nmax_taint = \"secret\"\n[constraints]\nurls = []\n",
            5,
            "unknown field",
        ),
        (
            "tool = \"x\"\nmode = \"auto\"\nmax_taint = 1.5\n",
            3,
            "wanted string",
        ),
        (
            "tool = \"x\"\ntool = \"y\"\nmode = \"auto\"\nmax_taint = \"secret\"\n",
            2,
            "duplicate",
        ),
    ];
    for (text, line, reason) in cases {
        let err = Grant::from_toml(text).expect_err(text);
        assert_eq!(err.line, line, "{text:?}: {err}");
        assert!(err.reason.contains(reason), "{text:?}: {err}");
    }
    let missing = Grant::from_toml("tool = \"x\"\nmode = \"auto\"\n").expect_err("missing");
    assert!(missing.reason.contains("max_taint"), "{missing}");
}

#[test]
fn if_untrusted_is_an_optional_stricter_mode() {
    let g = load("grant_if_untrusted.toml");
    assert_eq!(g.mode, Mode::Auto);
    assert_eq!(g.if_untrusted, Some(IfUntrusted::Ask));
    let bad = "tool = \"x\"\nmode = \"auto\"\nmax_taint = \"secret\"\nif_untrusted = \"auto\"\n";
    let err = Grant::from_toml(bad).expect_err("auto is not stricter");
    assert_eq!(err.line, 4, "{err}");
}

#[test]
fn a_job_grant_names_its_job_and_a_grant_without_one_writes_none() {
    let g = load("grant_job.toml");
    assert_eq!(g.job, Some(JobName::new("morning-brief").expect("name")));
    assert!(
        g.canonical().contains("job = \"morning-brief\""),
        "{}",
        g.canonical()
    );
    // Additive: a grant without a job writes back without the key.
    assert!(!load("grant_minimal.toml").canonical().contains("job"));
    let bad = "tool = \"x\"\nmode = \"auto\"\nmax_taint = \"secret\"\njob = \"Morning\"\n";
    let err = Grant::from_toml(bad).expect_err("not a job name");
    assert_eq!(err.line, 4, "{err}");
    assert!(err.reason.contains("lowercase letters"), "{err}");
}

#[test]
fn always_ask_is_written_only_when_set() {
    let g = load("grant_always_ask.toml");
    assert!(g.always_ask);
    assert!(
        g.canonical().contains("always_ask = true"),
        "{}",
        g.canonical()
    );
    // Additive: a grant without it reads as before and writes back without the key, so
    // the grant texts the audit recorded before it existed are unchanged.
    let minimal = load("grant_minimal.toml");
    assert!(!minimal.always_ask);
    assert!(!minimal.canonical().contains("always_ask"));
    let bad = "tool = \"x\"\nmode = \"ask\"\nmax_taint = \"secret\"\nalways_ask = \"yes\"\n";
    let err = Grant::from_toml(bad).expect_err("not a boolean");
    assert_eq!(err.line, 4, "{err}");
}
