//! `bxctl grants check` says what is wrong with each file, and what a loader cannot say
//! (issue 28 point 3): each message exactly as printed.

use std::path::Path;
use std::process::Command;

fn check(dir: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bxctl"))
        .args(["grants", "check"])
        .arg(dir)
        .env_remove("BOXMAKER_CONFIG")
        .output()
        .expect("bxctl");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn temp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("bx-gcheck-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("dir");
    d
}

#[test]
fn a_directory_that_is_not_there_is_an_io_error_with_help_exit_2() {
    let dir = temp("missing").join("grants");
    let (code, out, err) = check(&dir);
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(out, "");
    assert_eq!(
        err,
        format!(
            "bxctl: cannot read the grants directory {} (given): No such file or directory \
             (os error 2)\nhelp: name the directory that holds the grant files, `bxctl grants \
             check DIR`, or set `grants` in the configuration (docs/grants.md)\n",
            dir.display()
        )
    );
}

#[test]
fn every_bad_file_is_reported_with_the_word_it_was_probably_meant_to_be() {
    let dir = temp("typos");
    std::fs::write(
        dir.join("a.toml"),
        "tool = \"read_flie\"\nmode = \"auto\"\nmax_taint = \"secret\"\n",
    )
    .expect("a");
    std::fs::write(
        dir.join("b.toml"),
        "tool = \"note_read\"\nmdoe = \"auto\"\nmax_taint = \"secret\"\n",
    )
    .expect("b");
    std::fs::write(
        dir.join("c.toml"),
        "tool = \"note_read\"\nmode = \"aks\"\nmax_taint = \"secret\"\n",
    )
    .expect("c");
    let (code, out, _) = check(&dir);
    assert_eq!(code, Some(1), "{out}");
    let d = dir.display();
    assert_eq!(
        out,
        format!(
            "{d}/a.toml: no tool is named \"read_flie\" (the tools are read_file, list_dir, \
             http_fetch, consult, note_write, note_read, note_list, note_search, session_search, \
             write_file, edit_file, run)\n\
             help: did you mean `read_file`?\n\
             {d}/b.toml:2:1: unknown field `mdoe`, expected one of `tool`, `mode`, `max_taint`, \
             `result_class`, `untrusted`, `expires`, `secret`, `constraints`, `if_untrusted`, \
             `job`, `always_ask`\n\
             help: did you mean `mode`?\n\
             {d}/c.toml:2:8: unknown variant `aks`, expected one of `auto`, `ask`, `deny`\n\
             help: did you mean `ask`?\n\
             {d}: 3 files do not load; brokerd loads none of the directory until all do\n"
        )
    );
    let out = Command::new(env!("CARGO_BIN_EXE_bxctl"))
        .args(["grants", "check", "--json"])
        .arg(&dir)
        .output()
        .expect("bxctl");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["good"], false);
    assert_eq!(v["errors"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["error"]["file"], format!("{d}/a.toml"));
    assert_eq!(v["help"], "did you mean `read_file`?");
    assert_eq!(v["errors"][2]["help"], "did you mean `ask`?");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_empty_directory_and_a_granted_path_that_is_not_there_are_warned_of() {
    let dir = temp("empty");
    let (code, out, _) = check(&dir);
    assert_eq!(code, Some(0), "{out}");
    let d = dir.display();
    assert_eq!(
        out,
        format!(
            "{d}: 0 grants good (), snapshot \
             e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\
             warning: {d} holds no grant: every tool call is denied (no_grant); a grant is a \
             file <id>.toml (docs/grants.md)\n"
        )
    );
    let gone = dir.join("no-such-notes");
    std::fs::write(
        dir.join("notes.toml"),
        format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             [constraints]\npaths = [\"{}\", \"{d}\"]\n",
            gone.display()
        ),
    )
    .expect("grant");
    let (code, out, _) = check(&dir);
    assert_eq!(code, Some(0), "{out}");
    let warnings: Vec<&str> = out.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(
        warnings,
        [format!(
            "warning: grant notes: the path {} does not exist: calls under it fail until it does",
            gone.display()
        )]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `always_ask` means something only on a grant that asks; elsewhere the file is refused
/// with what to do, and the directory does not load (exit 1).
#[test]
fn always_ask_on_a_grant_that_never_asks_is_refused() {
    let dir = temp("always");
    let grant = |mode: &str| {
        format!(
            "tool = \"note_list\"\nmode = \"{mode}\"\nmax_taint = \"secret\"\nalways_ask = true\n"
        )
    };
    std::fs::write(dir.join("asks.toml"), grant("ask")).expect("asks");
    let (code, out, _) = check(&dir);
    assert_eq!(code, Some(0), "{out}");
    std::fs::write(dir.join("never.toml"), grant("auto")).expect("never");
    let (code, out, _) = check(&dir);
    assert_eq!(code, Some(1), "{out}");
    let d = dir.display();
    assert_eq!(
        out,
        format!(
            "{d}/never.toml: always_ask = true means nothing on a grant that never asks (it is \
             for mode = \"ask\", or if_untrusted = \"ask\"): remove it, or make the grant ask\n"
        )
    );
}

#[test]
fn grants_check_refuses_a_shell_without_its_key_and_warns_of_any_argument() {
    let dir = temp("grants-run");
    let grant = "tool = \"run\"\nmode = \"ask\"\nmax_taint = \"private\"\n\
                 [constraints]\nprograms = [\"sh\"]\npatterns = [\"*\"]\n";
    std::fs::write(dir.join("shell.toml"), grant).expect("write");
    let (code, text, _) = check(&dir);
    assert_eq!(code, Some(1));
    assert!(
        text.contains("shell.toml") && text.contains("constraints.shell = true"),
        "{text}"
    );
    std::fs::write(dir.join("shell.toml"), format!("{grant}shell = true\n")).expect("write");
    let (code, text, err) = check(&dir);
    assert_eq!(code, Some(0), "{text}{err}");
    assert!(
        text.contains("warning: grant shell passes any argument to sh"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
