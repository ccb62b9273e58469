//! The directories a role or a tool writes, and the rule that keeps the owner's core memory
//! out of all of them: loopd puts `core_memory` in every prompt as the owner's system
//! message and brokerd accounts it as the owner's (docs/decisions.md X5), so a file there
//! that the model's text could reach (a note a `note_write` unit left, a session log, a
//! search index of both, …) would make model text the owner's system prompt.

use std::path::{Component, Path, PathBuf};

use super::{Config, Invalid};

impl Config {
    /// Every directory a role or a tool it runs writes, named for a person: brokerd's state
    /// (the notes, where `note_write` units leave text, the audit log, …), loopd's session
    /// logs, the indexer's index, gatewayd's state, and each socket directory (a role binds
    /// its socket there).
    pub fn written_dirs(&self) -> Vec<(&'static str, PathBuf)> {
        let s = &self.sockets;
        let mut dirs = vec![
            ("the notes (broker.notes)", self.notes_dir()),
            (
                "brokerd's note state (where note_write units leave text)",
                self.note_state_dir(),
            ),
            ("loopd's session logs", self.sessions_dir()),
            ("the indexer's index", self.index_dir()),
            ("brokerd's session labels", self.session_labels_dir()),
            ("brokerd's audit log", self.audit_dir()),
            ("brokerd's session state", self.broker_state_dir()),
            ("brokerd's witness store", self.witness_dir()),
            ("brokerd's accounting", self.accounting_dir()),
        ];
        if let Some(g) = &self.gateway {
            dirs.push(("gatewayd's state", g.state_dir(&self.home)));
        }
        for (name, dir) in [
            ("sockets.loop_broker", &s.loop_broker),
            ("sockets.admin_broker", &s.admin_broker),
            ("sockets.loop_infer", &s.loop_infer),
            ("sockets.chat_loop", &s.chat_loop),
            ("sockets.chat_broker", &s.chat_broker),
            ("sockets.broker_gateway", &s.broker_gateway),
            ("sockets.jobs_broker", &s.jobs_broker),
            ("sockets.jobs_loop", &s.jobs_loop),
            ("sockets.jobs_gateway", &s.jobs_gateway),
            ("sockets.infer_broker", &s.infer_broker),
        ] {
            dirs.push((name, dir.clone()));
        }
        dirs
    }

    /// Refuses a `core_memory` inside (or equal to) any of [`Config::written_dirs`]: as
    /// written, with `.` and `..` taken lexically, and, where both exist on this machine, as
    /// they resolve (a symbolic link on either side).
    pub(super) fn check_core_memory(&self) -> Result<(), Invalid> {
        let core = self.core_memory_path();
        let core_lexical = lexical(&core);
        let core_real = resolved(&core);
        for (what, dir) in self.written_dirs() {
            let inside = core_lexical.starts_with(lexical(&dir))
                || matches!((&core_real, dir.canonicalize()), (Some(c), Ok(d)) if c.starts_with(&d));
            if inside {
                return Err(Invalid::CoreMemoryWritten { core, dir, what });
            }
        }
        Ok(())
    }
}

/// `path` with `.` dropped and `..` taking away the component before it, without looking at
/// the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Where `path` is, every link resolved: the file's own, or (not there yet) its directory's
/// and its name; `None` when neither is there.
fn resolved(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok().or_else(|| {
        let dir = path.parent()?.canonicalize().ok()?;
        Some(dir.join(path.file_name()?))
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{Config, ConfigError, Invalid};

    const BASE: &str = r#"
[sockets]
loop_broker = "/run/boxmaker/loop-broker"
admin_broker = "/run/boxmaker/admin-broker"
[peers]
loopd = { user = "boxmaker-loopd" }
admin = { group = "boxmaker-admin" }
"#;

    fn with_core(core: &str, extra: &str) -> Result<Config, ConfigError> {
        let text = format!("core_memory = \"{core}\"\n{BASE}{extra}");
        Config::parse(Path::new("c.toml"), &text)
    }

    /// Refused, naming both paths and what writes the directory.
    fn refused(core: &str, extra: &str, dir: &str, what: &str) {
        let err = with_core(core, extra).expect_err(core);
        let ConfigError::Invalid {
            reason:
                Invalid::CoreMemoryWritten {
                    core: c,
                    dir: d,
                    what: w,
                },
            ..
        } = &err
        else {
            panic!("{core}: not CoreMemoryWritten: {err:?}");
        };
        assert_eq!(
            (c.as_path(), d.as_path()),
            (Path::new(core), Path::new(dir))
        );
        assert!(w.starts_with(what), "{core}: {w}");
        let text = err.to_string();
        assert!(
            text.starts_with(&format!(
                "c.toml: core_memory {core} is inside {dir} ({what}"
            )) && text.contains("could become the owner's system prompt"),
            "{text}"
        );
    }

    #[test]
    fn core_memory_inside_the_notes_is_refused() {
        refused(
            "/var/lib/boxmaker/memory/notes/core.md",
            "",
            "/var/lib/boxmaker/memory/notes",
            "the notes",
        );
        refused(
            "/srv/notes/core.md",
            "[broker]\nnotes = \"/srv/notes\"\n",
            "/srv/notes",
            "the notes",
        );
        // `..` and `.` do not hide it, and the directory itself is refused too.
        refused(
            "/var/lib/boxmaker/memory/x/../notes/./core.md",
            "",
            "/var/lib/boxmaker/memory/notes",
            "the notes",
        );
        refused(
            "/var/lib/boxmaker/memory/notes",
            "",
            "/var/lib/boxmaker/memory/notes",
            "the notes",
        );
    }

    #[test]
    fn core_memory_inside_the_sessions_or_any_role_written_directory_is_refused() {
        let home = "/var/lib/boxmaker";
        for (core, dir, what) in [
            ("sessions/s-1/core.md", "sessions", "loopd's session logs"),
            ("sessions", "sessions", "loopd's session logs"),
            (
                "note-state/incoming/u/core.md",
                "note-state",
                "brokerd's note state",
            ),
            ("index/core.md", "index", "the indexer's index"),
            (
                "session-labels/core.md",
                "session-labels",
                "brokerd's session labels",
            ),
            ("audit/core.md", "audit", "brokerd's audit log"),
            ("broker/core.md", "broker", "brokerd's session state"),
            ("witness/core.md", "witness", "brokerd's witness store"),
            ("accounting/core.md", "accounting", "brokerd's accounting"),
        ] {
            refused(
                &format!("{home}/{core}"),
                "",
                &format!("{home}/{dir}"),
                what,
            );
        }
        refused(
            "/run/boxmaker/loop-infer/core.md",
            "",
            "/run/boxmaker/loop-infer",
            "sockets.loop_infer",
        );
        let gateway = "[gateway]\nserver = \"http://m\"\nowners = [\"ownerkp1dx4oy7wqbsm3e9t6ua\"]\n\
                       channel = \"c\"\nstate = \"/srv/gw\"\n";
        refused("/srv/gw/core.md", gateway, "/srv/gw", "gatewayd's state");
    }

    #[test]
    fn core_memory_where_no_role_writes_is_taken() {
        for core in [
            "/etc/boxmaker/core.md",
            "/var/lib/boxmaker/memory/core.md",
            "/var/lib/boxmaker/memory/notes/../core.md",
            "/var/lib/boxmaker/memory/notes2/core.md",
            "/var/lib/boxmaker/sessions.md",
        ] {
            let c = with_core(core, "").unwrap_or_else(|e| panic!("{core}: {e}"));
            assert_eq!(c.core_memory_path(), Path::new(core));
        }
        // The default is one of them.
        let c = Config::parse(Path::new("c.toml"), BASE).expect("default");
        assert_eq!(
            c.core_memory_path(),
            Path::new("/var/lib/boxmaker/memory/core.md")
        );
        let err = with_core("core.md", "").expect_err("relative");
        assert!(
            err.to_string()
                .contains("core_memory must be an absolute path, not core.md"),
            "{err}"
        );
    }

    #[test]
    fn a_link_into_a_written_directory_is_refused_as_it_resolves() {
        let root = std::env::temp_dir().join(format!("bx-daemon-core-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let notes = root.join("notes");
        std::fs::create_dir_all(&notes).expect("notes");
        std::os::unix::fs::symlink(&notes, root.join("owner")).expect("link");
        let extra = format!("[broker]\nnotes = \"{}\"\n", notes.display());
        let core = root.join("owner/core.md");
        // Not there yet: its directory resolves into the notes.
        refused(
            &core.display().to_string(),
            &extra,
            &notes.display().to_string(),
            "the notes",
        );
        // There, and itself a link into the notes from a directory of its own.
        std::fs::create_dir_all(root.join("etc")).expect("etc");
        std::fs::write(notes.join("x.md"), "model text").expect("note");
        let linked = root.join("etc/core.md");
        std::os::unix::fs::symlink(notes.join("x.md"), &linked).expect("link");
        refused(
            &linked.display().to_string(),
            &extra,
            &notes.display().to_string(),
            "the notes",
        );
        // A real file beside them is taken.
        let own = root.join("etc/own.md");
        std::fs::write(&own, "the owner's").expect("own");
        with_core(&own.display().to_string(), &extra).expect("own file");
        let _ = std::fs::remove_dir_all(&root);
    }
}
