//! `boxmaker-tool`: one invocation on stdin, one answer on stdout (see the `toolkit` crate).
//! Without arguments it runs one of boxmaker's own tools; `mcp-call` runs one call of a
//! pinned MCP tool and `mcp-pin` lists an MCP server's tools (`toolkit::mcp_session`). The
//! exit status (docs/decisions.md T6, docs/architecture.md "Exit statuses"):
//!
//! | status | when |
//! |---|---|
//! | 0 | an answer was written: the tool's content, or `failed` with the message for the model, for every failure of the tool and every invocation that is too large or not understood |
//! | 2 | stdin could not be read: there is no invocation to answer |
//! | 3 | the answer could not be written to stdout |
//! | 4 | the command line is not understood (an argument other than `mcp-call` or `mcp-pin`) |
//!
//! A tool failure is an answer, never an exit status. brokerd turns a non-zero status (with
//! the tail of stderr, where `main` prints the error) into a failed result. The status of
//! an error is `daemon::exit::Status` of `toolkit::RunError`.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (stdin, stdout) = (std::io::stdin().lock(), std::io::stdout().lock());
    let served = match args.as_slice() {
        [] => toolkit::serve(stdin, stdout),
        [mode] if mode == "mcp-call" => toolkit::mcp_session::serve_call(stdin, stdout),
        [mode] if mode == "mcp-pin" => toolkit::mcp_session::serve_pin(stdin, stdout),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "boxmaker-tool: takes no argument, or one of mcp-call and mcp-pin"
            );
            return ExitCode::from(4);
        }
    };
    daemon::exit::finish_command("boxmaker-tool", served)
}
