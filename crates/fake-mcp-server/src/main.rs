//! `fake-mcp-server SCRIPT.json`: serves the script over stdin and stdout (MCP's stdio
//! transport) until stdin ends, or as the script says. Exit status 0 at the end of stdin,
//! 2 when the script cannot be read, or the status a script step exits with.
//!
//! `fake-mcp-server --http ADDR SCRIPT.json`: the same behind Streamable HTTP on ADDR
//! (`127.0.0.1:0` for any port), printing `listening on ADDR`, until killed; with
//! `--while-stdin` after the script, also until its stdin ends (so that it ends with the
//! program that started it, however that ends: the hostile self-test's remote stand-in).

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (args, while_stdin) = match args.split_last() {
        Some((last, rest)) if last == "--while-stdin" && rest.len() == 3 => (rest.to_vec(), true),
        _ => (args, false),
    };
    if let [flag, addr, path] = args.as_slice()
        && flag == "--http"
    {
        if while_stdin {
            std::thread::spawn(|| {
                let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
                std::process::exit(0);
            });
        }
        let script = match fake_mcp_server::Script::load(std::path::Path::new(path)) {
            Ok(script) => script,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "fake-mcp-server: {e}");
                return ExitCode::from(2);
            }
        };
        let log = script.log_file.as_deref();
        return match fake_mcp_server::http::serve(addr, std::path::Path::new(path), log) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "fake-mcp-server --http: {e}");
                ExitCode::from(2)
            }
        };
    }
    let [path] = args.as_slice() else {
        let _ = writeln!(
            std::io::stderr(),
            "usage: fake-mcp-server [--http ADDR SCRIPT.json [--while-stdin] | SCRIPT.json]"
        );
        return ExitCode::from(2);
    };
    let script = match fake_mcp_server::Script::load(std::path::Path::new(path)) {
        Ok(script) => script,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "fake-mcp-server: {e}");
            return ExitCode::from(2);
        }
    };
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    ExitCode::from(fake_mcp_server::run(&script, stdin, stdout))
}
