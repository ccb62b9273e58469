//! The hands' grants: which keys each of `write_file`, `edit_file` and `run` takes and what
//! is refused at load (a shell without `shell = true` among them), and which calls they
//! cover.

use std::path::PathBuf;

use grants::constraints::{HandsError, InvalidGrant, Mismatch, check, is_launcher};
use grants::{GrantsError, Snapshot};
use proto::Grant;
use proto::tools::{EditFileArgs, RunArgs, ToolArgs, WriteFileArgs, WriteMode};

pub(crate) fn load(files: &[(&str, &str)]) -> Result<Snapshot, GrantsError> {
    Snapshot::from_texts(
        files
            .iter()
            .map(|(id, text)| {
                (
                    (*id).to_owned(),
                    (PathBuf::from(format!("g/{id}.toml")), (*text).to_owned()),
                )
            })
            .collect(),
    )
}

fn one(text: &str) -> Grant {
    load(&[("g", text)])
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .get("g")
        .expect("grant")
        .clone()
}

fn refusal(text: &str) -> String {
    load(&[("g", text)]).expect_err(text).reason
}

const RUN: &str = "tool = \"run\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\n";

fn run(rest: &str) -> String {
    format!("{RUN}{rest}")
}

fn write(path: &str, mode: WriteMode) -> ToolArgs {
    ToolArgs::WriteFile(WriteFileArgs {
        content: "c".into(),
        mode,
        path: path.into(),
    })
}

fn call(program: &str, args: &[&str], stdin: Option<&str>) -> ToolArgs {
    ToolArgs::Run(RunArgs {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        program: program.into(),
        stdin: stdin.map(str::to_owned),
    })
}

#[test]
fn a_run_grant_naming_a_shell_needs_the_shell_key() {
    for shell in ["sh", "bash", "busybox", "env", "xargs", "bash-5.2"] {
        let text = run(&format!("programs = [\"{shell}\"]\npatterns = [\"*\"]\n"));
        let reason = refusal(&text);
        assert_eq!(
            reason,
            InvalidGrant::Hands(HandsError::Shell {
                program: shell.into()
            })
            .to_string()
        );
        assert!(reason.contains("constraints.shell = true"), "{reason}");
        // Said explicitly, it loads.
        one(&format!("{text}shell = true\n"));
    }
    assert_eq!(
        refusal(&run(
            "programs = [\"python3\"]\npatterns = [\"*\"]\nshell = true\n"
        )),
        "constraints.shell = true, but none of constraints.programs is a shell or a launcher: \
         remove it"
    );
    // A deny grant may name a shell without the key: denying it needs no consent.
    one(
        "tool = \"run\"\nmode = \"deny\"\nmax_taint = \"secret\"\n[constraints]\nprograms = [\"sh\"]\n",
    );
    assert!(is_launcher("dash") && !is_launcher("python3"));
}

#[test]
fn an_allowing_run_grant_names_programs_and_patterns() {
    assert!(refusal(&run("patterns = [\"*\"]\n")).contains("must list constraints.programs"));
    assert!(refusal(&run("programs = [\"python3\"]\n")).contains("must list constraints.patterns"));
    assert!(
        refusal(&run(
            "programs = [\"/usr/bin/python3\"]\npatterns = [\"*\"]\n"
        ))
        .starts_with(
            "constraints.programs[0]: program \"/usr/bin/python3\" is not a program's name"
        )
    );
    let g = one(&run(
        "programs = [\"python3\"]\npatterns = [\"*.py\", \"-V\"]\npaths = [\"/srv/in\"]\n\
         workdir = \"/home/owner/project\"\nstdin = true\nhosts = [\"example.org\"]\n\
         timeout_secs = 60\nmemory_mib = 512\ntasks = 32\noutput_kib = 64\n",
    ));
    assert_eq!(
        g.constraints.workdir.as_deref(),
        Some("/home/owner/project")
    );
    assert_eq!(g.constraints.output_kib, Some(64));
}

#[test]
fn hands_keys_are_refused_where_they_mean_nothing() {
    let read = "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\n\
                paths = [\"/n\"]\n";
    for (text, want) in [
        (
            format!("{read}programs = [\"cat\"]\n"),
            "constraints.programs does not apply to read_file (it is run's): remove it",
        ),
        (
            format!("{read}modes = [\"create\"]\n"),
            "constraints.modes does not apply to read_file (it is write_file's): remove it",
        ),
        (
            "tool = \"edit_file\"\nmode = \"ask\"\nmax_taint = \"private\"\n[constraints]\n\
             paths = [\"/n\"]\nmodes = [\"append\"]\n"
                .to_owned(),
            "constraints.modes does not apply to edit_file (it is write_file's): remove it",
        ),
        (
            run("programs = [\"cat\"]\npatterns = [\"*\"]\nmodes = [\"create\"]\n"),
            "constraints.modes does not apply to run (it is write_file's): remove it",
        ),
        (
            "tool = \"run\"\nmode = \"deny\"\nmax_taint = \"secret\"\n[constraints]\n\
             programs = [\"cat\"]\nstdin = true\n"
                .to_owned(),
            "constraints.stdin means nothing on a deny grant (it only shapes what an allowed \
             run gets): remove it",
        ),
        (
            run("programs = [\"cat\"]\npatterns = [\"*\"]\nhosts = [\"*.example.org\"]\n"),
            "constraints.hosts[0]: \"*.example.org\" is a wildcard; a run reaches exactly the \
             addresses its hosts resolve to when it starts, so list each host",
        ),
        (
            run("programs = [\"cat\"]\npatterns = [\"*\"]\ntimeout_secs = 0\n"),
            "constraints.timeout_secs = 0: it must be between 1 and 3600",
        ),
        (
            run("programs = [\"cat\"]\npatterns = [\"*\"]\noutput_kib = 257\n"),
            "constraints.output_kib = 257: it must be between 1 and 256",
        ),
        (
            run("programs = [\"cat\"]\npatterns = [\"*\"]\nworkdir = \"/home/owner/p/\"\n"),
            "path \"/home/owner/p/\" is not normalised",
        ),
        (
            run("programs = [\"cat\"]\npatterns = [\"*\"]\nworkdir = \"/run/user/1000\"\n"),
            "granted path \"/run/user/1000\" lies in /run, which is never bound into a tool's \
             root",
        ),
        (
            run("programs = [\"cat\"]\npatterns = [\"*\"]\nprivate_networks = true\n"),
            "constraints.private_networks is for host names, and every entry of \
             constraints.hosts is an IP address (reached as listed): remove it",
        ),
    ] {
        assert_eq!(refusal(&text), want, "{text}");
    }
    // A negative limit is not a number of anything: TOML's parse refuses it.
    assert_eq!(
        refusal(&run(
            "programs = [\"cat\"]\npatterns = [\"*\"]\ntasks = -1\n"
        )),
        "invalid value: integer `-1`, expected u32"
    );
}

#[test]
fn write_grants_need_paths_and_cover_by_path_pattern_and_mode() {
    let write_text = "tool = \"write_file\"\nmode = \"ask\"\nmax_taint = \"secret\"\n\
                      [constraints]\npaths = [\"/home/owner/notes\"]\npatterns = [\"*.md\"]\n\
                      modes = [\"create\", \"append\"]\n";
    assert!(
        refusal(&write_text.replace("paths = [\"/home/owner/notes\"]\n", ""))
            .contains("must list constraints.paths")
    );
    let g = one(write_text);
    let covered = check(&g, &write("/home/owner/notes//a.md", WriteMode::Append)).expect("covered");
    assert_eq!(covered.path.as_deref(), Some("/home/owner/notes/a.md"));
    assert_eq!(
        check(&g, &write("/home/owner/notes/a.md", WriteMode::Replace))
            .expect_err("mode")
            .to_string(),
        "the grant allows the modes create, append, not replace"
    );
    assert!(matches!(
        check(&g, &write("/home/owner/notes/a.txt", WriteMode::Create)),
        Err(Mismatch::NoPattern { .. })
    ));
    assert!(matches!(
        check(
            &g,
            &write("/home/owner/notes/../.ssh/a.md", WriteMode::Create)
        ),
        Err(Mismatch::Path(_))
    ));
    let edit = one(
        "tool = \"edit_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n[constraints]\n\
         paths = [\"/srv\"]\n",
    );
    let args = ToolArgs::EditFile(EditFileArgs {
        new: "b".into(),
        old: "a".into(),
        path: "/srv/x/y".into(),
    });
    assert_eq!(
        check(&edit, &args).expect("covered").path.as_deref(),
        Some("/srv/x/y")
    );
    let outside = ToolArgs::EditFile(EditFileArgs {
        path: "/srv2/y".into(),
        ..match args {
            ToolArgs::EditFile(a) => a,
            _ => unreachable!(),
        }
    });
    assert!(matches!(
        check(&edit, &outside),
        Err(Mismatch::NotUnder { .. })
    ));
}

#[test]
fn a_run_call_is_covered_argument_by_argument() {
    let g = one(&run(
        "programs = [\"python3\"]\npatterns = [\"/srv/scripts/*.py\", \"-u\"]\n",
    ));
    check(&g, &call("python3", &["-u", "/srv/scripts/a.py"], None)).expect("covered");
    check(&g, &call("python3", &[], None)).expect("no argument: covered");
    assert_eq!(
        check(&g, &call("python3", &["-u", "-c", "import os"], None))
            .expect_err("-c")
            .to_string(),
        "argument 1 \"-c\" matches none of the patterns \"/srv/scripts/*.py\", \"-u\""
    );
    assert_eq!(
        check(&g, &call("perl", &[], None))
            .expect_err("perl")
            .to_string(),
        "\"perl\" is none of the granted programs python3"
    );
    // Standard input is a program too (python3 reads one from it): only where granted.
    assert_eq!(
        check(&g, &call("python3", &[], Some("print(1)"))).expect_err("stdin"),
        Mismatch::Stdin
    );
    let with_stdin = one(&run(
        "programs = [\"python3\"]\npatterns = [\"*\"]\nstdin = true\n",
    ));
    check(&with_stdin, &call("python3", &[], Some("print(1)"))).expect("stdin granted");
}

#[test]
fn a_deny_run_grant_is_a_blocklist_of_programs_and_arguments() {
    let no_sh = one(
        "tool = \"run\"\nmode = \"deny\"\nmax_taint = \"secret\"\n[constraints]\n\
         programs = [\"git\"]\npatterns = [\"--upload-pack*\", \"-c\"]\n",
    );
    check(&no_sh, &call("git", &["fetch", "--upload-pack=sh"], None)).expect("denied");
    check(&no_sh, &call("git", &["-c", "core.pager=sh", "log"], None)).expect("denied");
    assert!(matches!(
        check(&no_sh, &call("git", &["log"], None)),
        Err(Mismatch::NoArgument { .. })
    ));
    assert!(matches!(
        check(&no_sh, &call("python3", &["-c"], None)),
        Err(Mismatch::Program { .. })
    ));
    let every = one("tool = \"run\"\nmode = \"deny\"\nmax_taint = \"secret\"\n");
    check(&every, &call("anything", &["at", "all"], Some("x"))).expect("a bare deny denies all");
}
