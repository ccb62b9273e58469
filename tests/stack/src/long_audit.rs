//! A long audit log, as a year of brokerd's decisions leaves it (issue 23's start measure,
//! `benches/start.rs`, docs/performance.md): one day file a day for 365 days before
//! 2026-12-01, each opening with a `grants_loaded` line, then witnessed decisions (three in
//! four allowed, one in four denied with a detail, as the policy writes them), a valid chain
//! from the first line to the last. Generated from a fixed seed, so every run builds the
//! same bytes; kept in `~/.cache/boxmaker/long-audit-v1-<MiB>/` (never in the checkout) and
//! rebuilt when its stamp is missing or of another size.

use std::io::Write;
use std::path::{Path, PathBuf};

use proto::attest::{CompletionId, WitnessRef};
use proto::chain::{ChainHead, line_hash};
use proto::{
    AuditEvent, AuditLine, AuditRecord, CallId, DataClass, DecisionRecord, DenyReason, Hash32,
    SessionId, Timestamp,
};

/// Bumped with any change to what is generated.
const VERSION: u32 = 1;
const DAYS: u64 = 365;
/// 2025-12-01T00:00:00Z: the first day; the last is 2026-11-30, before any day brokerd
/// writes in the benches.
const T0: u64 = 1_764_547_200_000;
const DAY_MS: u64 = 86_400_000;

/// The log, as files of one audit directory.
#[derive(Debug, Clone)]
pub struct LongAudit {
    /// The directory holding the day files.
    pub dir: PathBuf,
    /// The day files, in name order.
    pub files: Vec<PathBuf>,
    pub bytes: u64,
    pub lines: u64,
    pub head: ChainHead,
}

/// A small deterministic generator (Knuth's MMIX LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn completion(&mut self) -> CompletionId {
        let mut bytes = [0u8; 16];
        for chunk in bytes.chunks_mut(4) {
            chunk.copy_from_slice(
                &u32::try_from(self.next() & 0xffff_ffff)
                    .unwrap_or(0)
                    .to_le_bytes(),
            );
        }
        CompletionId::from_random(bytes)
    }
}

fn day_name(day: u64) -> String {
    let t = Timestamp::from_millis(T0 + day * DAY_MS).expect("a date");
    let text = t.to_string();
    format!("{}.jsonl", text.split('T').next().unwrap_or(&text))
}

/// Writes the log of about `size` bytes into `dir` (which must not exist yet).
fn generate(dir: &Path, size: u64) -> LongAudit {
    std::fs::create_dir_all(dir).expect("long audit dir");
    let per_day = size.div_ceil(DAYS);
    let mut rng = Lcg(23);
    let mut head = ChainHead::GENESIS;
    let (mut files, mut bytes) = (Vec::new(), 0u64);
    let append = |out: &mut dyn Write, line: &AuditLine, head: &mut ChainHead| -> u64 {
        let text = serde_json::to_vec(line).expect("a line");
        out.write_all(&text).expect("write");
        out.write_all(b"\n").expect("write");
        *head = ChainHead {
            next_seq: head.next_seq + 1,
            prev: line_hash(&text),
        };
        u64::try_from(text.len()).unwrap_or(0) + 1
    };
    for day in 0..DAYS {
        let path = dir.join(day_name(day));
        let file = std::fs::File::create(&path).expect("day file");
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let at = |i: u64| Timestamp::from_millis(T0 + day * DAY_MS + i).expect("time");
        let mut written = append(
            &mut out,
            &AuditLine::Event(AuditEvent::GrantsLoaded {
                seq: head.next_seq,
                time: at(0),
                prev: head.prev,
                snapshot: Hash32::digest(b"the owner's grants"),
                grants: vec!["notes-read".into(), "web-ask".into()],
                texts: Default::default(),
                since: None,
            }),
            &mut head,
        );
        let session = SessionId::new(format!("s-{}-{:016x}", 20_250_000 + day, rng.next()))
            .expect("session id");
        let mut i = 1u64;
        while written < per_day {
            let path = format!(r#"{{"path":"/home/owner/notes/{:08x}.md"}}"#, rng.next());
            let denied = i.is_multiple_of(4);
            let decision = if denied {
                DecisionRecord::Denied {
                    reason: DenyReason::NoGrant,
                    grant: Some("notes-read".into()),
                    detail: Some(format!(
                        "grant notes-read: {path:?} is not under any of /home/owner/notes/public"
                    )),
                }
            } else {
                DecisionRecord::Allowed {
                    grant: "notes-read".into(),
                }
            };
            written += append(
                &mut out,
                &AuditLine::Decision(AuditRecord {
                    seq: head.next_seq,
                    time: at(i * 100),
                    prev: head.prev,
                    session: session.clone(),
                    call: CallId(i),
                    tool: "read_file".into(),
                    arguments: path.clone(),
                    session_taint: DataClass::Private,
                    decision,
                    canonical: Some(path),
                    witness: Some(WitnessRef {
                        completion: rng.completion(),
                        index: 0,
                    }),
                    untrusted: false,
                    write: None,
                }),
                &mut head,
            );
            i += 1;
        }
        out.flush().expect("flush");
        bytes += written;
        files.push(path);
    }
    LongAudit {
        dir: dir.to_owned(),
        files,
        bytes,
        lines: head.next_seq,
        head,
    }
}

fn stamp(log: &LongAudit) -> String {
    format!(
        "version {VERSION}\nfiles {}\nbytes {}\nlines {}\nnext_seq {}\nhead {}\n",
        log.files.len(),
        log.bytes,
        log.lines,
        log.head.next_seq,
        log.head.prev
    )
}

impl LongAudit {
    /// The log of about `mib` MiB under `~/.cache/boxmaker/long-audit-v1-<mib>/`, generated
    /// when it is not there whole.
    pub fn cached(mib: u64) -> Self {
        let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
        let cache = home.join(format!(".cache/boxmaker/long-audit-v{VERSION}-{mib}"));
        let dir = cache.join("audit");
        let recorded = std::fs::read_to_string(cache.join("complete")).unwrap_or_default();
        if let Some(log) = Self::read(&dir, &recorded) {
            return log;
        }
        let _ = std::fs::remove_dir_all(&cache);
        let log = generate(&dir, mib << 20);
        std::fs::write(cache.join("complete"), stamp(&log)).expect("stamp");
        log
    }

    /// The log the stamp `recorded` describes, if `dir` holds it.
    fn read(dir: &Path, recorded: &str) -> Option<Self> {
        let field = |name: &str| {
            recorded
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        };
        if field("version")? != VERSION.to_string() {
            return None;
        }
        let files: Vec<PathBuf> = (0..DAYS).map(|d| dir.join(day_name(d))).collect();
        let bytes: u64 = files
            .iter()
            .map(|f| std::fs::metadata(f).map(|m| m.len()))
            .sum::<std::io::Result<u64>>()
            .ok()?;
        if field("bytes")? != bytes.to_string() {
            return None;
        }
        let log = Self {
            dir: dir.to_owned(),
            files,
            bytes,
            lines: field("lines")?.parse().ok()?,
            head: ChainHead {
                next_seq: field("next_seq")?.parse().ok()?,
                prev: Hash32::from_hex(field("head")?).ok()?,
            },
        };
        (stamp(&log) == recorded).then_some(log)
    }

    /// Puts the log into the audit directory `audit` (made 0700): every day file but the
    /// newest hard-linked (brokerd never writes a day file before its newest), the newest
    /// copied, each 0600 as brokerd's own are.
    pub fn install(&self, audit: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(audit).expect("audit dir");
        std::fs::set_permissions(audit, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        for (n, file) in self.files.iter().enumerate() {
            let to = audit.join(file.file_name().expect("a name"));
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
            if n + 1 == self.files.len() {
                std::fs::copy(file, &to).expect("copy the newest day file");
            } else {
                std::fs::hard_link(file, &to).expect("link a day file");
            }
        }
    }
}
