//! Log lines on stderr. Where stderr is the journal (systemd names the stream it connected in
//! `JOURNAL_STREAM`, `DEVICE:INODE`, and stderr is that very stream), each line carries the
//! `<N>` priority prefix journald reads (SyslogLevelPrefix=, on by default), so `journalctl
//! -p warning` finds what matters. Anywhere else (a terminal, a file `bxctl dev` appends to,
//! a pipe) the prefix would be noise a person reads: errors and warnings say their level as
//! a word (`error: `, `warning: `), the rest is the bare line.

use std::fmt::Arguments;
use std::io::Write;
use std::sync::OnceLock;

/// Whether stderr is the stream `JOURNAL_STREAM` names, decided once per process (the
/// variable and the descriptor do not change under a running daemon).
fn to_journal() -> bool {
    static JOURNAL: OnceLock<bool> = OnceLock::new();
    *JOURNAL.get_or_init(|| {
        let named = std::env::var("JOURNAL_STREAM").ok();
        let stderr = nix::sys::stat::fstat(std::io::stderr())
            .ok()
            .map(|s| (s.st_dev, s.st_ino));
        is_journal(named.as_deref(), stderr)
    })
}

/// `JOURNAL_STREAM` (`DEVICE:INODE`, both decimal) names the stream `stderr` is.
fn is_journal(named: Option<&str>, stderr: Option<(u64, u64)>) -> bool {
    let (Some(named), Some((dev, ino))) = (named, stderr) else {
        return false;
    };
    named.split_once(':').is_some_and(|(d, i)| {
        d.parse::<u64>().ok() == Some(dev) && i.parse::<u64>().ok() == Some(ino)
    })
}

/// The line as it is written: with the journal's prefix, or with the level as a word.
fn format(journal: bool, priority: u8, args: Arguments<'_>) -> String {
    if journal {
        return format!("<{priority}>{args}\n");
    }
    let level = match priority {
        0..=3 => "error: ",
        4 => "warning: ",
        _ => "",
    };
    format!("{level}{args}\n")
}

fn emit(priority: u8, args: Arguments<'_>) {
    let line = format(to_journal(), priority, args);
    // A log line that cannot be written has nowhere else to go.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

pub fn error(args: Arguments<'_>) {
    emit(3, args);
}

pub fn warn(args: Arguments<'_>) {
    emit(4, args);
}

pub fn info(args: Arguments<'_>) {
    emit(6, args);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_only_where_stderr_is_the_stream_journal_stream_names() {
        assert!(is_journal(Some("8:1234"), Some((8, 1234))));
        // Another stream (a child that inherited the variable, a redirect), or none named.
        assert!(!is_journal(Some("8:1234"), Some((8, 1235))));
        assert!(!is_journal(Some("9:1234"), Some((8, 1234))));
        assert!(!is_journal(None, Some((8, 1234))));
        assert!(!is_journal(Some("garbage"), Some((8, 1234))));
        assert!(!is_journal(Some("8:1234"), None));
        assert_eq!(format(true, 3, format_args!("x: y")), "<3>x: y\n");
        assert_eq!(format(false, 3, format_args!("x: y")), "error: x: y\n");
        assert_eq!(format(false, 4, format_args!("x: y")), "warning: x: y\n");
        assert_eq!(format(false, 6, format_args!("x: y")), "x: y\n");
    }
}
