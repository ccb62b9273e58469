//! `boxmaker-tool`: one invocation on stdin, one answer on stdout (see the `toolkit` crate).

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    match toolkit::run(std::io::stdin().lock()) {
        Ok(output) => {
            let mut out = std::io::stdout().lock();
            match writeln!(out, "{}", toolkit::render(&output)).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(3),
            }
        }
        Err(e) => {
            // No answer is possible; brokerd turns the exit status into a failed result.
            let _ = writeln!(std::io::stderr(), "boxmaker-tool: cannot read stdin: {e}");
            ExitCode::from(2)
        }
    }
}
