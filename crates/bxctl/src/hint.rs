//! How the commands bxctl prints call bxctl again, so each works as printed: `bxctl` when
//! that name on `PATH` is this very program, else its absolute path; and `--config PATH`
//! (absolute) when the configuration is not the default one.

use std::path::{Path, PathBuf};

use config::DEFAULT_PATH;

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

/// Where bxctl looks for a configuration no flag or variable names: `.state/config.toml`,
/// what `bxctl dev` writes under its default state directory.
pub const DEV_CONFIG: &str = ".state/config.toml";

/// The configuration to use and who named it (for a missing one's message): the one given
/// (`--config`, or `BOXMAKER_CONFIG`, which clap folds into it), else the first
/// [`DEV_CONFIG`] in the current directory or one above it, as cargo finds its manifest,
/// else the default.
pub fn find_config(given: Option<PathBuf>) -> (PathBuf, String) {
    if let Some(path) = given {
        let from = match std::env::var_os(CONFIG_ENV) {
            Some(v) if Path::new(&v) == path => "from BOXMAKER_CONFIG",
            _ => "from --config",
        };
        return (path, from.to_owned());
    }
    let here = std::env::current_dir().ok();
    if let Some(found) = here
        .iter()
        .flat_map(|d| d.ancestors())
        .map(|d| d.join(DEV_CONFIG))
        .find(|p| p.is_file())
    {
        let from = format!(
            "found from {} upwards",
            here.as_deref().unwrap_or(Path::new(".")).display()
        );
        return (found, from);
    }
    let from = format!(
        "the default: no {DEV_CONFIG} in {} or above",
        here.as_deref().unwrap_or(Path::new(".")).display()
    );
    (PathBuf::from(DEFAULT_PATH), from)
}
