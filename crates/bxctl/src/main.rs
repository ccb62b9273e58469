use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = bxctl::Cli::parse();
    match bxctl::run(cli, &mut std::io::stdout().lock()) {
        Ok(code) => code,
        Err(e) => {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("bxctl: {e}\n").as_bytes(),
            );
            std::process::ExitCode::from(e.exit_code())
        }
    }
}
