//! The search corpus of issue 14's measures (`benches/search.rs`, docs/performance.md):
//! 10,000 notes and 1,000 session logs, about 100 MB, laid out as a boxmaker home holds them
//! and written as their writers write them: each note with brokerd's label record
//! (`note-state/labels/<name>.json`, the hash of its bytes; a note of an untrusted session
//! under brokerd's header), each log as loopd appends it (`sessions/<id>/<epoch>.jsonl`, one
//! `LogRecord` a line: user, assistant with tool calls, tool results, epoch ends), each
//! session's label as brokerd exports it (`session-labels/<id>.json`). The labels cycle
//! through the six partitions. Generated from a fixed seed, so every run (and every machine)
//! builds the same bytes; kept in `~/.cache/boxmaker/search-corpus-v2/` and rebuilt when its
//! size or generator version is not the one recorded there.

use std::path::{Path, PathBuf};

use proto::notes::{HEADER_MARK, NoteRecord, SessionLabel, file_name};
use proto::{CallId, DataClass, Epoch, Hash32, LogRecord, SessionId, Timestamp, ToolCall};

/// How many notes, sessions and logs (two epochs a session).
pub const NOTES: usize = 10_000;
pub const SESSIONS: usize = 500;
pub const EPOCHS: u32 = 2;
/// A word in 10 notes only (every thousandth), and one in 10 logs' tool results (one
/// record in every hundredth log): what a search for something rare finds.
pub const RARE_NOTE_WORD: &str = "zanzibar";
pub const RARE_LOG_WORD: &str = "quokka";

/// Bumped with any change to what is generated: a cache of another version is rebuilt.
const VERSION: u32 = 1;
const WORDS_PER_NOTE: usize = 600;
const TURNS_PER_LOG: usize = 24;
/// 2026-06-01T00:00:00Z: every timestamp counts from here, so the bytes never change.
const T0: u64 = 1_780_272_000_000;

/// The six labels, lowest first (the order of the index partitions).
const LABELS: [(DataClass, bool); 6] = [
    (DataClass::Public, false),
    (DataClass::Public, true),
    (DataClass::Private, false),
    (DataClass::Private, true),
    (DataClass::Secret, false),
    (DataClass::Secret, true),
];

/// The generated corpus, as a boxmaker home's directories.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The directory holding `memory/notes`, `note-state/labels`, `sessions` and
    /// `session-labels`.
    pub root: PathBuf,
    /// Every file, relative to `root`.
    pub files: Vec<PathBuf>,
    /// The bytes of the notes, and of the session logs.
    pub note_bytes: u64,
    pub log_bytes: u64,
}

/// A small deterministic generator (Knuth's MMIX LCG): the same corpus every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// A pseudo-word, Zipf-like: a few very common, most rare.
    fn word(&mut self) -> String {
        const SYL: [&str; 16] = [
            "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fu", "go", "hi", "ju",
            "pe", "zo",
        ];
        let r = self.next() % 4096;
        let mut n = r * r / 4096;
        let mut w = String::new();
        for _ in 0..3 {
            w.push_str(SYL[usize::try_from(n % 16).unwrap_or(0)]);
            n /= 16;
        }
        w
    }

    fn words(&mut self, n: usize) -> String {
        let mut text = String::new();
        for i in 0..n {
            if i > 0 {
                text.push(if i % 14 == 0 { '\n' } else { ' ' });
            }
            text.push_str(&self.word());
        }
        text
    }
}

fn time(n: usize) -> Timestamp {
    Timestamp::from_millis(T0 + u64::try_from(n).unwrap_or(0) * 1000).expect("a timestamp")
}

fn write(root: &Path, files: &mut Vec<PathBuf>, rel: PathBuf, bytes: &[u8]) -> u64 {
    let path = root.join(&rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("corpus directory");
    }
    std::fs::write(&path, bytes).expect("corpus file");
    files.push(rel);
    u64::try_from(bytes.len()).unwrap_or(0)
}

/// The name of note `i`.
pub fn note_name(i: usize) -> String {
    format!("note-{i:05}")
}

/// The label of note `i` (and of session `i`).
pub fn label_of(i: usize) -> (DataClass, bool) {
    LABELS[i % LABELS.len()]
}

fn session_id(i: usize) -> SessionId {
    SessionId::new(format!("bench-{i:04}")).expect("a session id")
}

fn notes(root: &Path, rng: &mut Lcg, files: &mut Vec<PathBuf>) -> u64 {
    let mut bytes = 0;
    for i in 0..NOTES {
        let name = note_name(i);
        let (class, untrusted) = label_of(i);
        let session = session_id(i % SESSIONS);
        let mut body = rng.words(WORDS_PER_NOTE);
        if i % 1000 == 0 {
            body.push(' ');
            body.push_str(RARE_NOTE_WORD);
        }
        body.push('\n');
        // As brokerd writes a note: its header above an untrusted session's text (the body,
        // words of letters, has no line brokerd's escape would change).
        let mut text = String::new();
        if untrusted {
            text.push_str(&format!(
                "{HEADER_MARK} written by untrusted session {session} at {}, after reading: \
                 http_fetch call 3 (https://example.org/{i})\n",
                time(i)
            ));
        }
        text.push_str(&body);
        let record = NoteRecord {
            name: name.clone(),
            hash: Hash32::digest(text.as_bytes()),
            class,
            untrusted,
            untrusted_by: Vec::new(),
            time: time(i),
            session: Some(session),
        };
        bytes += write(
            root,
            files,
            Path::new("memory/notes").join(file_name(&name)),
            text.as_bytes(),
        );
        let record = serde_json::to_vec(&record).expect("a record");
        write(
            root,
            files,
            Path::new("note-state/labels").join(format!("{name}.json")),
            &record,
        );
    }
    bytes
}

/// One epoch's log of session `s`, as loopd appends it.
fn log(rng: &mut Lcg, s: usize, epoch: u32, rare: bool) -> Vec<u8> {
    let session = session_id(s);
    let mut records = vec![LogRecord::SessionStart {
        time: time(s),
        session,
        epoch: Epoch(epoch),
        slot: 0,
        baseline: Hash32::digest(format!("core memory {s}").as_bytes()),
    }];
    let mut call = u64::from(epoch) * 1000;
    for turn in 0..TURNS_PER_LOG {
        let t = time(s * 100 + turn);
        records.push(LogRecord::User {
            time: t,
            content: rng.words(18),
        });
        call += 1;
        let id = format!("call-{call}");
        let path = format!("/home/owner/notes/{}.md", rng.word());
        records.push(LogRecord::Assistant {
            time: t,
            content: Some(rng.words(12)),
            reasoning_content: None,
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read_file".to_owned(),
                arguments: serde_json::json!({ "path": path }).to_string(),
            }],
            // Not what the index reads; a record loopd writes today names its completion.
            witness: None,
        });
        let (class, untrusted) = label_of(s);
        let mut content = rng.words(230);
        if rare && turn == TURNS_PER_LOG / 2 {
            content.push(' ');
            content.push_str(RARE_LOG_WORD);
        }
        records.push(LogRecord::ToolResult {
            time: t,
            call: CallId(call),
            tool_call_id: id,
            content,
            class,
            untrusted,
            truncated: false,
            outcome: None,
        });
        records.push(LogRecord::Assistant {
            time: t,
            content: Some(rng.words(50)),
            reasoning_content: None,
            tool_calls: Vec::new(),
            witness: None,
        });
    }
    if epoch + 1 < EPOCHS {
        records.push(LogRecord::EpochEnd {
            time: time(s * 100 + TURNS_PER_LOG),
            next: Epoch(epoch + 1),
            summary: rng.words(80),
        });
    }
    let mut out = Vec::new();
    for r in &records {
        out.extend_from_slice(&serde_json::to_vec(r).expect("a log record"));
        out.push(b'\n');
    }
    out
}

fn sessions(root: &Path, rng: &mut Lcg, files: &mut Vec<PathBuf>) -> u64 {
    let mut bytes = 0;
    for s in 0..SESSIONS {
        let id = session_id(s);
        for epoch in 0..EPOCHS {
            let n = s * usize::try_from(EPOCHS).unwrap_or(1) + usize::try_from(epoch).unwrap_or(0);
            let text = log(rng, s, epoch, n % 100 == 0);
            bytes += write(
                root,
                files,
                Path::new("sessions")
                    .join(id.as_str())
                    .join(format!("{epoch}.jsonl")),
                &text,
            );
        }
        let (class, untrusted) = label_of(s);
        let label = serde_json::to_vec(&SessionLabel { class, untrusted }).expect("a label");
        write(
            root,
            files,
            Path::new("session-labels").join(format!("{id}.json")),
            &label,
        );
    }
    bytes
}

/// What the cache records of a complete corpus: the generator's version, the sizes.
fn stamp(c: &Corpus) -> String {
    format!(
        "version {VERSION}\nfiles {}\nnotes {}\nlogs {}\n",
        c.files.len(),
        c.note_bytes,
        c.log_bytes
    )
}

fn generate(root: &Path) -> Corpus {
    let _ = std::fs::remove_dir_all(root);
    let mut rng = Lcg(7);
    let mut files = Vec::new();
    let note_bytes = notes(root, &mut rng, &mut files);
    let log_bytes = sessions(root, &mut rng, &mut files);
    Corpus {
        root: root.to_owned(),
        files,
        note_bytes,
        log_bytes,
    }
}

/// The files under `dir`, relative to `root`, and the bytes of those under `memory/notes`
/// and `sessions`.
fn walk(root: &Path, dir: &Path, files: &mut Vec<PathBuf>, sizes: &mut (u64, u64)) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in read.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            walk(root, &path, files, sizes);
            continue;
        }
        let rel = path.strip_prefix(root).unwrap_or(&path).to_owned();
        if rel.starts_with("memory/notes") {
            sizes.0 += meta.len();
        } else if rel.starts_with("sessions") {
            sizes.1 += meta.len();
        }
        files.push(rel);
    }
}

impl Corpus {
    /// The corpus under `~/.cache/boxmaker/search-corpus-v2/`, generated when it is not
    /// there whole (its recorded stamp and what is on disk differ).
    pub fn cached() -> Self {
        let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
        let cache = home.join(".cache/boxmaker/search-corpus-v2");
        let root = cache.join("home");
        let mut files = Vec::new();
        let mut sizes = (0, 0);
        walk(&root, &root, &mut files, &mut sizes);
        files.sort();
        let found = Self {
            root: root.clone(),
            files,
            note_bytes: sizes.0,
            log_bytes: sizes.1,
        };
        let recorded = std::fs::read_to_string(cache.join("complete")).unwrap_or_default();
        if recorded == stamp(&found) {
            return found;
        }
        let made = generate(&root);
        std::fs::write(cache.join("complete"), stamp(&made)).expect("corpus stamp");
        made
    }

    /// Its directories in `home` (a boxmaker home), every file hard-linked (the same
    /// filesystem) or else copied: the index is built in `home`, never in the cache, and a
    /// note write replaces the note by rename, which leaves the cached file as it was.
    pub fn link_into(&self, home: &Path) {
        for rel in &self.files {
            let to = home.join(rel);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir).expect("home directory");
            }
            let from = self.root.join(rel);
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).expect("copy a corpus file");
            }
        }
    }

    /// The size, for a person.
    pub fn describe(&self) -> String {
        format!(
            "{NOTES} notes ({:.1} MB) and {} session logs ({:.1} MB) in {} files, {:.1} MB \
             together",
            self.note_bytes as f64 / 1e6,
            SESSIONS * usize::try_from(EPOCHS).unwrap_or(1),
            self.log_bytes as f64 / 1e6,
            self.files.len(),
            (self.note_bytes + self.log_bytes) as f64 / 1e6
        )
    }
}
