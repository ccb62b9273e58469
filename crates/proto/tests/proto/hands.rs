//! The hands' arguments (strict, checked, canonical) and the stage messages brokerd and the
//! tool exchange for them (strict both ways, one shape each).

use proto::tools::hands::{MAX_RUN_ARGS, RunArgs, WriteMode};
use proto::tools::stage::{
    Captured, Found, RunEnd, RunReport, StageFailure, StageInvocation, StageOutput,
};
use proto::tools::{ToolArgs, WriteFileArgs};
use proto::{Hash32, ToolFailure};

fn refused(tool: &str, args: &str) -> String {
    ToolArgs::parse(tool, args).expect_err(args).to_string()
}

#[test]
fn write_file_parses_strictly_into_its_canonical_form() {
    let a = ToolArgs::parse(
        "write_file",
        r#"{ "path": "/n/a.md", "mode": "append", "content": "x\ny" }"#,
    )
    .expect("valid");
    assert_eq!(
        a,
        ToolArgs::WriteFile(WriteFileArgs {
            content: "x\ny".into(),
            mode: WriteMode::Append,
            path: "/n/a.md".into(),
        })
    );
    assert_eq!(
        a.canonical(),
        r#"{"content":"x\ny","mode":"append","path":"/n/a.md"}"#
    );
    assert_eq!(a.reads().as_deref(), Some("/n/a.md"));
    for (bad, word) in [
        (
            r#"{"path":"/a","mode":"create"}"#,
            "missing field `content`",
        ),
        (
            r#"{"path":"/a","mode":"overwrite","content":""}"#,
            "unknown variant `overwrite`",
        ),
        (
            r#"{"path":"/a","path":"/b","mode":"create","content":""}"#,
            "duplicate field",
        ),
        (
            r#"{"path":"/a","mode":"create","content":"","owner":"x"}"#,
            "unknown field",
        ),
        (
            r#"{"path":"/a","mode":"create","content":"a\u0000b"}"#,
            "content contains a NUL",
        ),
        (r#"["c","create","/a"]"#, "must be a JSON object"),
    ] {
        let err = refused("write_file", bad);
        assert!(err.contains(word), "{bad}: {err}");
    }
}

#[test]
fn edit_file_must_name_a_change() {
    let a = ToolArgs::parse("edit_file", r#"{"path":"/a","old":"x","new":""}"#).expect("valid");
    assert_eq!(a.canonical(), r#"{"new":"","old":"x","path":"/a"}"#);
    for (bad, word) in [
        (r#"{"path":"/a","old":"","new":"y"}"#, "old is empty"),
        (r#"{"path":"/a","old":"y","new":"y"}"#, "changes nothing"),
        (
            r#"{"path":"/a","old":"\u0000","new":"y"}"#,
            "old contains a NUL",
        ),
        (r#"{"path":"/a","old":"x"}"#, "missing field `new`"),
    ] {
        let err = refused("edit_file", bad);
        assert!(err.contains(word), "{bad}: {err}");
    }
}

#[test]
fn run_takes_a_name_and_an_argument_vector() {
    let a =
        ToolArgs::parse("run", r#"{"program":"python3","args":["-c","print(1)"]}"#).expect("valid");
    assert_eq!(
        a,
        ToolArgs::Run(RunArgs {
            args: vec!["-c".into(), "print(1)".into()],
            program: "python3".into(),
            stdin: None,
        })
    );
    assert_eq!(
        a.canonical(),
        r#"{"args":["-c","print(1)"],"program":"python3"}"#
    );
    assert_eq!(a.reads().as_deref(), Some("python3"));
    let with_stdin =
        ToolArgs::parse("run", r#"{"stdin":"x","program":"cat","args":[]}"#).expect("valid");
    assert_eq!(
        with_stdin.canonical(),
        r#"{"args":[],"program":"cat","stdin":"x"}"#
    );
    let many = serde_json::to_string(&vec!["a"; MAX_RUN_ARGS + 1]).expect("json");
    for (bad, word) in [
        (
            r#"{"program":"/bin/sh","args":[]}"#,
            "is not a program's name",
        ),
        (
            r#"{"program":"sh -c","args":[]}"#,
            "is not a program's name",
        ),
        (r#"{"program":"cat"}"#, "missing field `args`"),
        (r#"{"program":"cat","args":"-n"}"#, "invalid type"),
        (r#"{"program":"cat","args":[1]}"#, "invalid type"),
        (
            r#"{"program":"cat","args":["a\u0000"]}"#,
            "an argument contains a NUL",
        ),
        (
            r#"{"program":"cat","args":[],"stdin":null}"#,
            "invalid type",
        ),
        (
            &format!(r#"{{"program":"cat","args":{many}}}"#),
            "1025 arguments",
        ),
    ] {
        let err = refused("run", bad);
        assert!(err.contains(word), "{bad}: {err}");
    }
}

#[test]
fn stage_invocations_are_strict_and_round_trip() {
    let hash = Hash32::digest(b"old");
    let commit = format!(
        r#"{{"stage":"commit","target":{{"root":"/target","path":"a/b.md"}},"call":{{"tool":"edit_file","arguments":{{"new":"y","old":"x","path":"/n/a/b.md"}}}},"old":{{"sha256":"{hash}"}},"new":"{hash}"}}"#
    );
    let parsed: StageInvocation = serde_json::from_str(&commit).expect("commit");
    assert_eq!(serde_json::to_string(&parsed).expect("encode"), commit);
    let create = r#"{"stage":"commit","target":{"root":"/t","path":"a"},"call":{"tool":"write_file","arguments":{"content":"c","mode":"create","path":"/n/a"}},"old":"absent","new":"HASH"}"#
        .replace("HASH", &hash.to_string());
    let parsed: StageInvocation = serde_json::from_str(&create).expect("create");
    assert!(matches!(parsed, StageInvocation::Commit(c) if c.old == Found::Absent));
    for bad in [
        r#"{"stage":"look","target":{"root":"/t","path":"a"},"extra":1}"#,
        r#"{"stage":"look","stage":"run","target":{"root":"/t","path":"a"}}"#,
        r#"{"stage":"look","target":{"root":"/t","path":"a","path":"b"}}"#,
        r#"{"stage":"erase","target":{"root":"/t","path":"a"}}"#,
        r#"{"target":{"root":"/t","path":"a"}}"#,
        r#"{"stage":"run","program":"/bin/true","args":[],"workdir":"/work","timeout_ms":1}"#,
    ] {
        assert!(
            serde_json::from_str::<StageInvocation>(bad).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn stage_outputs_round_trip() {
    for text in [
        r#"{"status":"looked"}"#,
        r#"{"status":"failed","failure":"changed","message":"m"}"#,
        r#"{"status":"ran","report":{"end":{"kind":"signal","signal":"SIGSEGV"},"stdout":{"text":"","bytes":0,"truncated":false},"stderr":{"text":"e","bytes":9,"truncated":true}}}"#,
    ] {
        let out: StageOutput = serde_json::from_str(text).expect(text);
        assert_eq!(serde_json::to_string(&out).expect("encode"), text);
    }
    let failed = StageOutput::Failed {
        failure: StageFailure::NoExchange,
        message: String::new(),
    };
    assert!(
        serde_json::to_string(&failed)
            .expect("encode")
            .contains("no_exchange")
    );
}

fn captured(text: &str, bytes: u64, truncated: bool) -> Captured {
    Captured {
        text: text.into(),
        bytes,
        truncated,
    }
}

#[test]
fn a_run_report_renders_its_end_and_both_streams() {
    let ok = RunReport {
        end: RunEnd::Exited { status: 0 },
        stdout: captured("hi\n", 3, false),
        stderr: captured("", 0, false),
    };
    assert_eq!(
        ok.render(),
        (
            "exited with status 0\nstdout (3 bytes):\nhi\n\nstderr (0 bytes):\n".to_owned(),
            None
        )
    );
    let cut = RunReport {
        end: RunEnd::Exited { status: 2 },
        stdout: captured("abc", 1000, true),
        stderr: captured("no", 2, false),
    };
    let (text, failure) = cut.render();
    assert!(
        text.contains("stdout (the first 3 of 1000 bytes):\nabc"),
        "{text}"
    );
    assert_eq!(failure, Some(ToolFailure::Exited { status: 2 }));
    let killed = RunReport {
        end: RunEnd::Signal {
            signal: "SIGSEGV".into(),
        },
        ..ok.clone()
    };
    assert_eq!(
        killed.render().1,
        Some(ToolFailure::Signal {
            signal: Some("SIGSEGV".into())
        })
    );
    let late = RunReport {
        end: RunEnd::TimeLimit,
        ..ok
    };
    assert!(late.render().0.starts_with("stopped at its time limit"));
    assert_eq!(late.render().1, Some(ToolFailure::TimeLimit));
}
