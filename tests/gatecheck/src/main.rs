//! `gatecheck lines|roles|modules|deps|all [ROOT]`: the boxmaker house rules. See the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use gatecheck::{Check, Error};

const USAGE: &str = "\
gatecheck CHECK [ROOT]
  CHECK: lines    no source file has more than 500 lines
         roles    workspace members declare their kind; roles never depend on roles
         modules  no two top-level modules of a crate, nor a module and its child,
                  import each other in a circle
         deps     every dependency in any Cargo.toml is documented in docs/dependencies.md
         docs     every repository path and socket name README.md and docs/ mention exists
         all      all five
  ROOT:  the repository root (default: the current directory)
Exit status: 0 all passed, 1 a rule is broken or a check could not run, 2 usage.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    let (checks, root) = match parse_args(&args) {
        Ok(parsed) => parsed,
        Err(Error::Usage(text)) if text.is_empty() => {
            let _ = writeln!(out, "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            let _ = writeln!(err, "gatecheck: {error}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut failed = 0;
    // `all` lists the repository's files once, for both checks that read them.
    let mut files = gatecheck::RepoFiles::default();
    for &check in &checks {
        match gatecheck::run(check, &root, &mut files) {
            Ok(outcome) => {
                let _ = writeln!(out, "{outcome}");
                if !outcome.passed() {
                    failed += 1;
                }
            }
            Err(error) => {
                let _ = writeln!(out, "gatecheck {}: ERROR: {error}", check.name());
                failed += 1;
            }
        }
    }
    if checks.len() > 1 {
        let _ = if failed == 0 {
            writeln!(out, "gatecheck: all {} checks passed", checks.len())
        } else {
            writeln!(out, "gatecheck: {failed} of {} checks FAILED", checks.len())
        };
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The checks to run and the root. `Error::Usage("")` asks for the help text.
fn parse_args(args: &[String]) -> Result<(Vec<Check>, PathBuf), Error> {
    let (command, rest) = match args {
        [] => return Err(Error::Usage("no check given".to_owned())),
        [first, rest @ ..] => (first.as_str(), rest),
    };
    if matches!(command, "-h" | "--help" | "help") {
        return Err(Error::Usage(String::new()));
    }
    let checks = match command {
        "all" => Check::ALL.to_vec(),
        name => match Check::from_name(name) {
            Some(check) => vec![check],
            None => return Err(Error::Usage(format!("unknown check `{name}`"))),
        },
    };
    let root = match rest {
        [] => PathBuf::from("."),
        [root] => PathBuf::from(root),
        _ => return Err(Error::Usage("at most one ROOT".to_owned())),
    };
    Ok((checks, root))
}
