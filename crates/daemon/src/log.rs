//! Log lines on stderr with the `<N>` priority prefix that journald reads
//! (SyslogLevelPrefix=, on by default), so `journalctl -p warning` finds what matters.
//! Outside systemd the prefix is harmless and tells a person the level too.

use std::fmt::Arguments;
use std::io::Write;

fn emit(priority: u8, args: Arguments<'_>) {
    let line = format!("<{priority}>{args}\n");
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
