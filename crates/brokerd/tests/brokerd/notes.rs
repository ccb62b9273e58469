//! The notes' labels as brokerd computes them: a read's content must be the bytes brokerd
//! vouched for, a record brokerd cannot read vouches for nothing, and a start clears what
//! write units left.

use brokerd::notes::run::Bound;
use brokerd::notes::{Notes, UNKNOWN};
use brokerd::policy::Labels;
use brokerd::run::runner::RunOutcome;
use brokerd::sessions::SessionState;
use proto::tools::NoteMode;
use proto::{DataClass, SessionId};

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bx-notes-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

const PRIVATE: Labels = Labels {
    class: DataClass::Private,
    untrusted: false,
};

fn read_labels(bytes: &[u8], content: &str, truncated: bool) -> Labels {
    let dir = temp("vouch");
    let notes =
        Notes::open(dir.join("notes"), &dir.join("state"), &dir.join("index")).expect("open");
    let bound = Bound::Read {
        bytes: Some(bytes.to_vec()),
        labels: PRIVATE,
    };
    let outcome = RunOutcome::Ok {
        content: content.to_owned(),
        truncated,
    };
    let writer = SessionState::new(SessionId::new("s-1").expect("id"));
    let (labels, _) = bound.finish(&notes, outcome, &writer);
    let _ = std::fs::remove_dir_all(&dir);
    labels
}

#[test]
fn a_read_is_labelled_by_the_record_only_when_the_unit_returned_the_vouched_bytes() {
    assert_eq!(read_labels(b"buy milk", "buy milk", false), PRIVATE);
    assert_eq!(read_labels(b"buy milk", "buy", true), PRIVATE);
    // Edited between brokerd's read and the unit's: not what the record vouches for.
    assert_eq!(read_labels(b"buy milk", "buy eggs", false), UNKNOWN);
    assert_eq!(read_labels(b"buy milk", "milk", true), UNKNOWN);
    assert_eq!(read_labels(b"buy milk", "buy", false), UNKNOWN);
}

#[test]
fn a_written_note_is_labelled_by_its_writer_and_an_unreadable_record_vouches_for_nothing() {
    let dir = temp("record");
    let notes =
        Notes::open(dir.join("notes"), &dir.join("state"), &dir.join("index")).expect("open");
    let mut writer = SessionState::new(SessionId::new("s-1").expect("id"));
    writer.taint = DataClass::Secret;
    let incoming = notes.incoming("boxmaker-tool-s-1-1").expect("incoming");
    std::fs::write(incoming.join("k.md"), "text").expect("text");
    notes
        .commit("k", NoteMode::Replace, &incoming, &writer)
        .answer
        .expect("commit");
    let found = notes.find("k");
    assert!(found.matches);
    assert_eq!(found.labels.class, DataClass::Secret);
    std::fs::write(dir.join("state/labels/k.json"), "{not json").expect("corrupt");
    let found = notes.find("k");
    assert_eq!((found.matches, found.labels), (false, UNKNOWN));
    // A restart clears per-call directories a stopped brokerd left, and leaves the records
    // as they are (their change time too: the indexer reads a record whose moved again).
    let left = notes.incoming("boxmaker-tool-s-1-2").expect("incoming");
    std::fs::write(left.join("x.md"), "x").expect("left");
    let record = dir.join("state/labels/k.json");
    let changed = |p: &std::path::Path| {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(p).expect("record");
        (m.ctime(), m.ctime_nsec(), m.mode() & 0o7777)
    };
    let before = changed(&record);
    drop(notes);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let _notes =
        Notes::open(dir.join("notes"), &dir.join("state"), &dir.join("index")).expect("reopen");
    assert!(!left.exists());
    assert_eq!(changed(&record), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fifo_where_a_note_or_a_units_text_should_be_is_refused_without_opening_it() {
    let dir = temp("fifo");
    let notes =
        Notes::open(dir.join("notes"), &dir.join("state"), &dir.join("index")).expect("open");
    let fifo = |path: &std::path::Path| {
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
    };
    fifo(&dir.join("notes/planted.md"));
    let found = notes.find("planted");
    assert_eq!((found.bytes, found.labels), (None, UNKNOWN));
    let incoming = notes.incoming("boxmaker-tool-s-1-1").expect("incoming");
    fifo(&incoming.join("k.md"));
    let writer = SessionState::new(SessionId::new("s-1").expect("id"));
    let refused = notes
        .commit("k", NoteMode::Replace, &incoming, &writer)
        .answer
        .expect_err("a FIFO is no text");
    assert_eq!(
        refused.to_string(),
        "the write unit for note \"k\" left something that is not a regular file; nothing \
         was written"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a write's answer tells of the note as it was carries the note's label: an append's
/// (its new size and hash, or its refusal as too large, hold the old bytes), never a
/// replace's or a new note's; an append to what brokerd cannot read is refused.
#[test]
fn an_appends_answer_is_labelled_by_the_note_it_appended_to() {
    let dir = temp("append-answer");
    let notes =
        Notes::open(dir.join("notes"), &dir.join("state"), &dir.join("index")).expect("open");
    let commit = |n: u64, name: &str, mode: NoteMode, text: &str, taint: DataClass| {
        let mut writer = SessionState::new(SessionId::new("s-1").expect("id"));
        writer.taint = taint;
        let incoming = notes
            .incoming(&format!("boxmaker-tool-s-1-{n}"))
            .expect("incoming");
        std::fs::write(incoming.join(format!("{name}.md")), text).expect("text");
        let done = notes.commit(name, mode, &incoming, &writer);
        notes.discard(&incoming);
        done
    };
    let new = commit(1, "vault", NoteMode::Append, "hunter2", DataClass::Secret);
    assert_eq!(new.read, Labels::NONE, "a new note tells nothing before it");
    new.answer.expect("written");
    let appended = commit(2, "vault", NoteMode::Append, "more", DataClass::Public);
    let said = appended.answer.expect("appended");
    let hash = notes.find("vault").record.expect("record").hash;
    assert!(said.contains(&format!("sha256 {hash}")), "{said}");
    assert_eq!(appended.read.class, DataClass::Secret);
    // Refused as too large: the refusal holds the note's size all the same.
    // (One write's text is at most 64 KiB: four make the note too large for a fifth.)
    let chunk = "x".repeat(60_000);
    for n in 3..7 {
        let grown = commit(n, "vault", NoteMode::Append, &chunk, DataClass::Secret);
        grown.answer.expect("grown");
    }
    let refused = commit(7, "vault", NoteMode::Append, &chunk, DataClass::Public);
    let why = refused.answer.expect_err("too large").to_string();
    assert!(why.contains("would be 300017 bytes"), "{why}");
    assert_eq!(refused.read.class, DataClass::Secret);
    let replaced = commit(8, "vault", NoteMode::Replace, "clean", DataClass::Public);
    assert_eq!(replaced.read, Labels::NONE);
    replaced.answer.expect("replaced");
    // A note brokerd cannot read (edited on disk past the size a note may hold): an append
    // is refused, the bytes left as they are, and the refusal reads as the note would.
    let big = vec![b'x'; usize::try_from(proto::notes::MAX_NOTE).expect("size") + 1];
    std::fs::write(dir.join("notes/big.md"), &big).expect("big");
    let refused = commit(9, "big", NoteMode::Append, "more", DataClass::Public);
    let why = refused.answer.expect_err("unreadable").to_string();
    assert!(why.contains("is not a note brokerd reads"), "{why}");
    assert_eq!(refused.read, UNKNOWN);
    assert_eq!(std::fs::read(dir.join("notes/big.md")).expect("kept"), big);
    let _ = std::fs::remove_dir_all(&dir);
}
