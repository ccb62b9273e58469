//! Session state brokerd cannot trust refuses start: each check on a session file, and the
//! files brokerd writes itself pass them.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::PathBuf;

use brokerd::sessions::{MAX_UNTRUSTED_BY, SessionState, Sessions, StateError};
use proto::approval::CallRef;
use proto::tools::{ReadFileArgs, ToolArgs};
use proto::{CallId, DataClass, SessionId};

struct Dir(PathBuf);

/// Where the sessions of `dir` export their labels for the indexer.
fn labels(dir: &std::path::Path) -> PathBuf {
    dir.with_extension("labels")
}

impl Dir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("bx-sessions-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .expect("dir");
        Self(dir)
    }

    /// Writes `s1.json` with `text` and `mode`.
    fn write(&self, text: &str, mode: u32) -> PathBuf {
        let path = self.0.join("s1.json");
        std::fs::write(&path, text).expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    /// The reason `Sessions::open` refuses this directory.
    fn refusal(&self) -> String {
        match Sessions::open(&self.0, &labels(&self.0)) {
            Err(StateError::Corrupt { reason, .. }) => reason,
            other => panic!("not refused as corrupt: {other:?}"),
        }
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn session() -> SessionId {
    SessionId::new("s1").expect("id")
}

fn good() -> String {
    let mut state = SessionState::new(session());
    state.taint = DataClass::Secret;
    state.untrusted = true;
    state.untrusted_by.push(CallRef {
        tool: "http_fetch".into(),
        call: CallId(3),
        read: None,
        session: None,
    });
    serde_json::to_string(&state).expect("json")
}

#[test]
fn what_brokerd_wrote_is_loaded_again() {
    let dir = Dir::new("good");
    let mut sessions = Sessions::open(&dir.0, &labels(&dir.0)).expect("open");
    let call = CallRef {
        tool: "http_fetch".into(),
        call: CallId(3),
        read: None,
        session: None,
    };
    sessions
        .record(&session(), DataClass::Secret, true, call)
        .expect("record");
    let mode = std::fs::metadata(dir.0.join("s1.json"))
        .expect("meta")
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // The label, and nothing else, exported for the indexer, readable by other users.
    let export = labels(&dir.0).join("s1.json");
    let exported = || std::fs::read_to_string(&export).expect("export");
    assert_eq!(exported(), r#"{"class":"secret","untrusted":true}"#);
    let meta = std::fs::metadata(&export).expect("meta");
    assert_eq!(meta.mode() & 0o777, 0o644);
    let dir_mode = std::fs::metadata(labels(&dir.0)).expect("meta").mode();
    assert_eq!(dir_mode & 0o777, 0o755);
    // An export lost or stale (a crash between the state and its export) is written again
    // at start.
    std::fs::write(&export, r#"{"class":"private","untrusted":false}"#).expect("stale");
    let again = Sessions::open(&dir.0, &labels(&dir.0)).expect("open again");
    assert_eq!(exported(), r#"{"class":"secret","untrusted":true}"#);
    assert_eq!(
        again.get(&session()),
        serde_json::from_str::<SessionState>(&good()).expect("state")
    );
}

#[test]
fn a_symlinked_session_file_is_refused() {
    let dir = Dir::new("link");
    // A link to a good file, outside the directory, is refused too.
    let outside = Dir::new("link-target");
    let real = outside.write(&good(), 0o600);
    std::os::unix::fs::symlink(&real, dir.0.join("s1.json")).expect("link");
    let reason = dir.refusal();
    assert_eq!(reason, "it is a symbolic link");
}

#[test]
fn a_session_file_open_to_others_is_refused() {
    for mode in [0o640, 0o604, 0o660] {
        let dir = Dir::new("mode");
        dir.write(&good(), mode);
        assert_eq!(
            dir.refusal(),
            format!(
                "mode {mode:o} sets {:o}, which this daemon never does",
                mode & 0o077
            )
        );
    }
}

#[test]
fn a_directory_in_place_of_a_session_file_is_refused() {
    let dir = Dir::new("notfile");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(dir.0.join("s1.json"))
        .expect("dir");
    assert_eq!(dir.refusal(), "not a regular file");
}

#[test]
fn a_corrupt_session_file_is_refused_saying_why() {
    let mut public = SessionState::new(session());
    public.taint = DataClass::Public;
    let mut flag_only = SessionState::new(session());
    flag_only.untrusted = true;
    let cases = [
        ("{\"session\":\"s1\",\"tai".to_owned(), "EOF while parsing"),
        (good().replace("\"s1\"", "\"s2\""), "holds session s2"),
        (
            serde_json::to_string(&flag_only).expect("json"),
            "the untrusted flag and the calls that set it disagree",
        ),
        (
            serde_json::to_string(&public).expect("json"),
            "taint below private: sessions start at private",
        ),
        (
            format!("{}{}", good(), " ".repeat(64 * 1024)),
            "larger than 65536 bytes",
        ),
    ];
    for (text, expected) in cases {
        let dir = Dir::new("corrupt");
        dir.write(&text, 0o600);
        let reason = dir.refusal();
        assert!(reason.contains(expected), "{expected}: {reason}");
    }
}

/// What each untrusted call read is kept, and the most a session can keep (every
/// source at the longest read, each character escaped in JSON) still loads at start.
#[test]
fn the_largest_untrusted_sources_are_kept_and_load_again() {
    let dir = std::env::temp_dir().join(format!("bx-sessions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let session = SessionId::new("s-1").expect("id");
    let path = "\u{1}".repeat(10_000);
    let read = ToolArgs::ReadFile(ReadFileArgs { path }).reads();
    assert_eq!(
        read.as_deref().map(|r| r.chars().count()),
        Some(proto::approval::MAX_READ)
    );
    let mut sessions = Sessions::open(&dir, &labels(&dir)).expect("open");
    for call in 0..=u64::try_from(MAX_UNTRUSTED_BY).expect("n") {
        let source = CallRef {
            tool: "read_file".into(),
            call: CallId(call),
            read: read.clone(),
            session: None,
        };
        sessions
            .record(&session, DataClass::Private, true, source)
            .expect("record");
    }
    let kept = Sessions::open(&dir, &labels(&dir))
        .expect("open again")
        .get(&session);
    assert_eq!(kept.untrusted_by.len(), MAX_UNTRUSTED_BY);
    assert_eq!(kept.untrusted_by[0].read, read);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_seen_first_at_its_starting_label_is_exported_too() {
    let dir = Dir::new("first-sight");
    let mut sessions = Sessions::open(&dir.0, &labels(&dir.0)).expect("open");
    let call = CallRef {
        tool: "read_file".into(),
        call: CallId(1),
        read: None,
        session: None,
    };
    sessions
        .record(&session(), DataClass::Public, false, call)
        .expect("record");
    let export = labels(&dir.0).join("s1.json");
    assert_eq!(
        std::fs::read_to_string(&export).expect("export"),
        r#"{"class":"private","untrusted":false}"#
    );
}
