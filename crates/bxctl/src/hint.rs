//! How the commands bxctl prints call bxctl again, so each works as printed: `bxctl` when
//! that name on `PATH` is this very program, else its absolute path; and `--config PATH`
//! (absolute) when the configuration is not the default one.

use std::path::Path;

use daemon::config::DEFAULT_PATH;

/// The variable that names the configuration file for every subcommand.
pub const CONFIG_ENV: &str = "BOXMAKER_CONFIG";

/// `PROGRAM [--config PATH] `, ready for a subcommand to be appended.
pub fn bxctl(config: &Path) -> String {
    let mut s = quote(&program());
    if config != Path::new(DEFAULT_PATH) {
        let config = std::path::absolute(config).unwrap_or_else(|_| config.to_owned());
        s.push_str(" --config ");
        s.push_str(&quote(&config.display().to_string()));
    }
    s.push(' ');
    s
}

/// `bxctl`, or this program's absolute path when `bxctl` on `PATH` is another one (or none).
pub fn program() -> String {
    let me = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("bxctl"))
            .find(|p| p.is_file())
            .and_then(|p| std::fs::canonicalize(p).ok())
    });
    match me {
        Some(me) if on_path.as_ref() == Some(&me) => "bxctl".to_owned(),
        Some(me) => me.display().to_string(),
        None => "bxctl".to_owned(),
    }
}

/// The shell's words for `s`: as it is when it needs no quoting, else in single quotes.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Where the configuration was said to be, for a missing one.
pub fn config_source(config: &Path) -> &'static str {
    match std::env::var_os(CONFIG_ENV) {
        Some(v) if Path::new(&v) == config => "from BOXMAKER_CONFIG",
        _ if config == Path::new(DEFAULT_PATH) => "the default",
        _ => "from --config",
    }
}
