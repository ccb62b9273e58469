//! What a tool's arguments are matched as: the one value of a call that a grant's
//! `patterns` (and its `paths` or `hosts`) are held against, and that a mismatch names.

/// What a tool's arguments are matched as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// `read_file`, `list_dir`, `write_file`, `edit_file`: an absolute path.
    Path,
    /// `http_fetch`: a URL.
    Url,
    /// `consult`: the prompt.
    Prompt,
    /// `note_write`, `note_read`: the note's name (`note_list`, `note_search` and
    /// `session_search` have none: patterns do not apply to them).
    Note,
    /// An MCP tool (`mcp:<server>/<tool>`): its arguments are matched by `args` pointers;
    /// `paths` and `hosts` say what its unit may reach.
    Mcp,
    /// `run`: each argument, on its own.
    Program,
}
