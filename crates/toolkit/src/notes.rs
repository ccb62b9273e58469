//! `note_write`, `note_read`, `note_list`, `note_search` and `session_search`. brokerd owns
//! `memory/notes/`: a read unit has only the named note bound, a list unit the directory,
//! both read-only, a search unit the index partitions its grant reaches; a write unit has
//! only an empty per-call directory, writable, into which it writes the note's new text.
//! brokerd checks what it left there, writes the note itself and labels it. Names were
//! checked by brokerd (`proto::notes::check_name`) and are checked again here.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use noteindex::Kind;
use proto::notes::{MAX_NOTE, check_name, file_name, name_of_file};
use proto::toolrun::ToolInvocation;
use proto::tools::NoteWriteArgs;

use crate::files::join_capped;
use crate::text::{read_capped, to_content};
use crate::{Content, Failure, FileError, max_bytes};

fn given(inv: &ToolInvocation) -> Result<&Path, Failure> {
    inv.notes
        .as_deref()
        .map(Path::new)
        .ok_or(Failure::NoNotesDir)
}

fn note_path(name: &str, inv: &ToolInvocation) -> Result<PathBuf, Failure> {
    check_name(name).map_err(|_| FileError::Outside { path: name.into() })?;
    Ok(given(inv)?.join(file_name(name)))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Failure + '_ {
    move |source| {
        FileError::Io {
            path: path.to_owned(),
            error: source,
        }
        .into()
    }
}

pub fn read(name: &str, inv: &ToolInvocation) -> Result<Content, Failure> {
    check_name(name).map_err(|_| FileError::Outside { path: name.into() })?;
    // brokerd names the note's file itself (bound at a place of its choosing).
    let path = given(inv)?.to_path_buf();
    let meta = fs::symlink_metadata(&path).map_err(io(&path))?;
    if meta.file_type().is_symlink() {
        return Err(FileError::Symlink { path }.into());
    }
    if !meta.is_file() {
        return Err(FileError::NotRegular { path }.into());
    }
    if meta.len() > MAX_NOTE {
        return Err(Failure::NoteTooLarge { size: meta.len() });
    }
    // The opened file must be the one checked: a link swapped in between is not followed.
    let file = fs::File::open(&path).map_err(io(&path))?;
    let opened = file.metadata().map_err(io(&path))?;
    if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return Err(FileError::Changed { path }.into());
    }
    let max = max_bytes(inv);
    let (bytes, more) = read_capped(file, max).map_err(io(&path))?;
    to_content(bytes, more, max)
}

/// The notes by name, one a line, sorted; files that are not notes are not listed.
pub fn list(inv: &ToolInvocation) -> Result<Content, Failure> {
    let dir = given(inv)?;
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let is_file = entry.file_type().map_err(io(dir))?.is_file();
        if let (true, Some(name)) = (is_file, entry.file_name().to_str().and_then(name_of_file)) {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(join_capped(&names, max_bytes(inv)))
}

/// The documents of `kind` that match `query` (FTS5 syntax), best first, one a line: for
/// a note `name: snippet`, for a session log record `session epoch N: snippet`. Searched
/// in exactly the index partitions brokerd bound (`inv.index`), each opened read-only and
/// immutable.
pub fn search(query: &str, kind: Kind, inv: &ToolInvocation) -> Result<Content, Failure> {
    let parts: Vec<&Path> = inv.index.iter().map(Path::new).collect();
    let hits = noteindex::search(&parts, query, Some(kind)).map_err(Failure::Search)?;
    let lines: Vec<String> = hits
        .iter()
        .map(|h| {
            let snippet = h.snippet.replace(['\n', '\r'], " ");
            match h.epoch {
                Some(epoch) => format!("{} epoch {epoch}: {}", h.name, snippet.trim()),
                None => format!("{}: {}", h.name, snippet.trim()),
            }
        })
        .collect();
    Ok(join_capped(&lines, max_bytes(inv)))
}

/// Writes the call's text as `<name>.md` in the per-call directory, readable by brokerd
/// (another user under systemd), synced before the answer.
pub fn write(args: &NoteWriteArgs, inv: &ToolInvocation) -> Result<Content, Failure> {
    let path = note_path(&args.name, inv)?;
    // O_EXCL: nothing already there, not even a link, is opened.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&path)
        .map_err(io(&path))?;
    file.write_all(args.text.as_bytes()).map_err(io(&path))?;
    // The unit's UMask=0077 cut the mode: brokerd runs as another user and must read it.
    file.set_permissions(fs::Permissions::from_mode(0o644))
        .map_err(io(&path))?;
    file.sync_all().map_err(io(&path))?;
    Ok(Content {
        content: format!("{} bytes for note {}", args.text.len(), args.name),
        truncated: false,
    })
}
