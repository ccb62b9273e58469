//! The sample grants `bxctl dev` writes the first time (or with `--reset`): the note tools,
//! a web fetch that asks, and the hands (docs/tools.md): reading and, after asking,
//! writing and editing the demo's own files (`STATE/files/notes`, not the agent's notes,
//! which are brokerd's), and running `python3` on a script given as its input, after
//! asking, when this machine has one.

use std::path::{Path, PathBuf};

/// Where the demo's files are, under the state directory.
pub const FILES: &str = "files/notes";

/// The demo's file, and its first text.
pub const DEMO_FILE: (&str, &str) = ("plan.md", "# Plan\n\n- try boxmaker's hands\n");

/// The note tools' grants and the web fetch's.
const FIXED: [(&str, &str); 5] = [
    (
        "notes-read",
        "# Read a note without asking; the answer takes the note's label.\n\
         tool = \"note_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n",
    ),
    (
        "notes-list",
        "# List the notes' names, each time with your approval.\n\
         tool = \"note_list\"\nmode = \"ask\"\nmax_taint = \"secret\"\nuntrusted = false\n",
    ),
    (
        "notes-search",
        "# Search the notes' words without asking; labelled like a read of what it could find.\n\
         tool = \"note_search\"\nmode = \"auto\"\nmax_taint = \"secret\"\nuntrusted = false\n",
    ),
    (
        "notes-write",
        "# Write notes without asking: a note takes the label of the session that wrote it.\n\
         tool = \"note_write\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
         result_class = \"public\"\nuntrusted = false\n",
    ),
    (
        "web-ask",
        "# Fetch from Wikipedia, asking each time.\ntool = \"http_fetch\"\nmode = \"ask\"\n\
         max_taint = \"private\"\nresult_class = \"public\"\n[constraints]\n\
         hosts = [\"en.wikipedia.org\"]\n",
    ),
];

/// Every sample grant, by id: the fixed ones, the demo files' read, write and edit grants
/// under `state`, and a run grant for python3 when `python3` is found.
pub fn grants(state: &Path, python3: Option<&Path>) -> Vec<(String, String)> {
    let files = serde_json::to_string(&state.join(FILES).display().to_string()).unwrap_or_default();
    let mut out: Vec<(String, String)> = FIXED
        .iter()
        .map(|(id, text)| ((*id).to_owned(), (*text).to_owned()))
        .collect();
    out.push((
        "files-read".into(),
        format!(
            "# Read the demo's files without asking: private, and only you write there.\n\
             tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"private\"\nuntrusted = false\n[constraints]\npaths = [{files}]\n"
        ),
    ));
    out.push((
        "files-write".into(),
        format!(
            "# Write the demo's files, each time with your approval (the card shows the diff).\n\
             # A session that read something secret cannot write here (it reads back private),\n\
             # and one that read untrusted content is refused (files-read says untrusted = false).\n\
             tool = \"write_file\"\nmode = \"ask\"\nmax_taint = \"private\"\n\
             result_class = \"private\"\nuntrusted = false\n[constraints]\npaths = [{files}]\n"
        ),
    ));
    out.push((
        "files-edit".into(),
        format!(
            "# Edit the demo's files (one exact, unique match), each time with your approval.\n\
             tool = \"edit_file\"\nmode = \"ask\"\nmax_taint = \"private\"\n\
             result_class = \"private\"\nuntrusted = false\n[constraints]\npaths = [{files}]\n"
        ),
    ));
    if python3.is_some() {
        out.push((
            "python3-ask".into(),
            "# Run python3 on a script given as its input (`python3 -`), each time with your\n\
             # approval: the card shows the script. Under `bxctl dev` it runs as you, without\n\
             # a sandbox (docs/tools.md).\n\
             tool = \"run\"\nmode = \"ask\"\nmax_taint = \"private\"\nresult_class = \"private\"\n\
             [constraints]\nprograms = [\"python3\"]\npatterns = [\"-\"]\nstdin = true\n\
             timeout_secs = 20\n"
                .into(),
        ));
    }
    out
}

/// The first `python3` on `PATH` that is a program rather than a script (a version
/// manager's shim finds the real one through a `PATH` the run does not have), as an
/// absolute path.
pub fn python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .map(|d| d.join("python3"))
        .find(|p| p.is_file() && !script(p))
}

/// Whether `path` starts with `#!`.
fn script(path: &Path) -> bool {
    let mut head = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| head == *b"#!")
}

/// `[broker.programs]` for the configuration: python3 when found.
pub fn programs(python3: Option<&Path>) -> String {
    match python3 {
        Some(p) => format!(
            "[broker.programs]\npython3 = {}\n",
            serde_json::to_string(&p.display().to_string()).unwrap_or_default()
        ),
        None => String::new(),
    }
}
