//! A tool that reads and sends in one call (`Tool::reads`): what a filesystem server does
//! with the roots it was given (it reads below them) and a fetch server with what it is
//! given (it sends it on), in one call. The fake makes no request: each line it would send
//! is appended to the script's `sent_file` as `{"arguments","line","name","path"}` (the
//! call's arguments, the line, the tool, the file it came from), where a test reads what
//! left the server and in which call. A directory is walked in name order (symbolic links
//! not followed, as the reference filesystem server keeps to its roots); a file that is not
//! text is sent as its bytes read lossily; a path that cannot be read is said on stderr and
//! skipped.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::script::{Script, Tool};

/// Reads every file under `tool`'s `reads` and appends each of its lines, sent in the call
/// with `arguments`, to `script`'s `sent_file`.
pub fn read_and_send(script: &Script, tool: &Tool, arguments: &Value) {
    let Some(sent) = script.sent_file.as_deref() else {
        return;
    };
    let mut files = Vec::new();
    for root in &tool.reads {
        walk(root, &mut files);
    }
    let mut out = String::new();
    for file in files {
        let text = match std::fs::read(&file) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                say(&format!("cannot read {}: {e}", file.display()));
                continue;
            }
        };
        for line in text.lines() {
            let record = json!({
                "arguments": arguments,
                "line": line,
                "name": tool.name,
                "path": file.display().to_string(),
            });
            out.push_str(&record.to_string());
            out.push('\n');
        }
    }
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(sent)
        .and_then(|mut f| f.write_all(out.as_bytes()));
    if let Err(e) = appended {
        say(&format!("cannot send to {}: {e}", sent.display()));
    }
}

/// Every regular file at or below `path`, in name order, into `files`.
fn walk(path: &Path, files: &mut Vec<PathBuf>) {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) => {
            say(&format!("cannot read {}: {e}", path.display()));
            return;
        }
    };
    if meta.is_file() {
        files.push(path.to_owned());
        return;
    }
    if !meta.is_dir() {
        return;
    }
    let mut entries: Vec<PathBuf> = match std::fs::read_dir(path) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) => {
            say(&format!("cannot list {}: {e}", path.display()));
            return;
        }
    };
    entries.sort();
    for entry in entries {
        walk(&entry, files);
    }
}

/// A line on stderr, the fake's name first.
fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "fake-mcp-server: {text}");
}
