//! The label of a prompt from its messages' digests (issue 17 point 3, docs/decisions.md
//! X1–X3). brokerd keeps, durably, the label of every message an honest loopd can send the
//! model that brokerd knows of: each tool message it can expect from what it returned
//! (a result at the result's labels, a denial at private, durable in its decision's audit
//! line and accounted again from it at start: X8), each witnessed answer and the
//! other forms loopd may replay it as (the label of the prompt that produced it), each owner
//! message a channel registered (private), and the system message of each registered core
//! memory (private). The label of a prompt is the highest label of its messages; a message
//! brokerd cannot account for counts as the highest label brokerd ever sent loopd (fail
//! closed), and the fall-back is logged. Nothing here takes loopd's word for anything: every
//! digest is computed by brokerd (from what it returned) or reported by inferproxy or a
//! channel.

mod log;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use proto::attest::{ChatMessage, CompletionId, WitnessReport};
use proto::composed;
use proto::{DataClass, Hash32, ToolResponse};
use serde::{Deserialize, Serialize};

use crate::policy::Labels;

pub use log::LogError;

/// How many records the accounting keeps by default: older ones are forgotten, and a prompt
/// that holds a forgotten message is labelled as if it were unaccounted (fail closed).
pub const DEFAULT_MAX_RECORDS: usize = 65536;

/// What the owner's words, brokerd's notices and the core memory are: private, trusted.
pub const OWNER: Labels = Labels {
    class: DataClass::Private,
    untrusted: false,
};

/// `labels` as a person reads them.
pub fn show(labels: Labels) -> String {
    let trust = if labels.untrusted {
        "untrusted"
    } else {
        "trusted"
    };
    format!("{} {trust}", labels.class)
}

/// The labels of the tool message loopd makes of `r`: a result's own, a failure's those of
/// the run it came from (`ran`; none: it never ran), a denial's [`OWNER`].
pub fn of_response(r: &ToolResponse, ran: Option<Labels>) -> Labels {
    match r {
        ToolResponse::Result {
            class, untrusted, ..
        } => Labels {
            class: *class,
            untrusted: *untrusted,
        },
        ToolResponse::Failed { .. } => ran.unwrap_or(OWNER),
        ToolResponse::Denied { .. } | ToolResponse::PendingApproval { .. } => OWNER,
    }
}

/// Why a digest is accounted for (kept in the record, for the reader of the file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A tool message brokerd can expect from what it returned, or a notice loopd writes for
    /// a witnessed call in place of a result.
    Tool,
    /// A witnessed answer, or another form loopd may replay it as.
    Answer,
    /// An owner's message a channel registered.
    Owner,
    /// The system message of a registered core memory.
    Core,
    /// A witnessed completion ([`completion_key`]): its prompt's labels and its calls' ids.
    Completion,
}

/// One durable record: `digest` is accounted at `label`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub kind: Kind,
    pub digest: Hash32,
    pub label: Labels,
    /// A completion's calls' ids, as the model gave them (the tool messages name them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
}

/// The key a completion's record is kept under (never a message's digest: those are of
/// JSON objects).
pub fn completion_key(completion: &CompletionId) -> Hash32 {
    Hash32::digest(format!("completion {completion}").as_bytes())
}

/// Where the record of a tool message brokerd returned is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durable {
    /// In this file: synced before the call that made it returns. A result's or a
    /// failure's (its label comes from the run, and its text is in no audit line), and every
    /// record that is not a tool message.
    Here,
    /// In the audit line of its decision, which names the witnessed call and holds the
    /// denial loopd was answered (docs/decisions.md X8): kept in memory only (no bytes
    /// written unsynced, so a crash cannot leave a damaged line behind a good one), and
    /// accounted again at the next start from the audit log ([`Accounting::rebuild`]), which
    /// writes it here then, or earlier, before a checkpoint of the audit log covers its line
    /// (A8); a rewrite of the file keeps it too.
    InAudit,
}

/// The records of the tool message loopd makes of `r` for the call `tool_call_id`, and of
/// its form cut short for a summary, at `label`.
fn tool_records(tool_call_id: &str, r: &ToolResponse, label: Labels) -> Vec<Record> {
    let text = composed::tool_text(r);
    let cut = composed::trimmed(&text);
    std::iter::once(text)
        .chain(cut)
        .map(|t| Record {
            kind: Kind::Tool,
            digest: ChatMessage::tool(tool_call_id, t.as_str()).digest(),
            label,
            calls: Vec::new(),
        })
        .collect()
}

/// The label of one prompt, and how many of its messages brokerd could not account for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accounted {
    pub label: Labels,
    pub unaccounted: usize,
}

#[derive(Debug)]
pub struct Accounting {
    log: log::Log,
    max: usize,
    /// Each digest's label (the join, when a digest was recorded more than once) and how
    /// many of the kept records name it.
    map: HashMap<Hash32, (Labels, usize)>,
    /// The records in the order they were made, for forgetting the oldest.
    order: VecDeque<Record>,
    /// Each kept completion's calls' ids.
    calls: HashMap<Hash32, Vec<String>>,
    /// The highest label brokerd has ever sent loopd: what an unaccounted message counts as.
    sent: Labels,
    /// Fixed messages loopd composes that carry nothing but proto's own text.
    fixed: HashMap<Hash32, Labels>,
    /// `loop.max_tool_calls`: the cap notice loopd writes names it.
    cap: u32,
    /// The digests of records kept in memory only ([`Durable::InAudit`]) and not written
    /// since: what [`Accounting::rebuild`] writes when a full verification's checkpoint is
    /// to cover their audit lines (A8).
    unwritten: HashSet<Hash32>,
}

impl Accounting {
    /// Opens (or creates) the accounting at `path`, keeping at most `max` records; `cap` is
    /// `loop.max_tool_calls`. A record file that does not parse refuses start.
    pub fn open(path: &Path, max: usize, cap: u32) -> Result<Self, LogError> {
        let (log, sent, records) = log::Log::open(path, max)?;
        let fixed = [
            composed::system(composed::DEFAULT_CORE),
            composed::instruction(composed::SUMMARY_PROMPT),
            composed::instruction(composed::SHORT_PROMPT),
            composed::summary(composed::NO_SUMMARY),
        ]
        .iter()
        .map(|m| (m.digest(), OWNER))
        .collect();
        let mut a = Self {
            log,
            max: max.max(1),
            map: HashMap::new(),
            order: VecDeque::new(),
            calls: HashMap::new(),
            sent: sent.join(OWNER),
            fixed,
            cap,
            unwritten: HashSet::new(),
        };
        for r in records {
            a.remember(r);
        }
        Ok(a)
    }

    pub fn path(&self) -> &PathBuf {
        self.log.path()
    }

    /// The highest label brokerd has ever sent loopd.
    pub fn sent(&self) -> Labels {
        self.sent
    }

    /// The label `digest` is accounted at, if any.
    pub fn label(&self, digest: &Hash32) -> Option<Labels> {
        self.fixed
            .get(digest)
            .copied()
            .or_else(|| self.map.get(digest).map(|(l, _)| *l))
    }

    /// A witnessed completion's prompt labels and its calls' ids, while its record is kept.
    pub fn completion(&self, completion: &CompletionId) -> Option<(Labels, &[String])> {
        let key = completion_key(completion);
        let (label, _) = self.map.get(&key)?;
        Some((*label, self.calls.get(&key).map_or(&[][..], Vec::as_slice)))
    }

    /// The label of a prompt: the join of its messages' labels, an unaccounted one counting
    /// as [`Accounting::sent`]. Never below private (an empty prompt is the owner's).
    pub fn label_of(&self, prompt: &[Hash32]) -> Accounted {
        let mut label = OWNER;
        let mut unaccounted = 0;
        for d in prompt {
            label = label.join(self.label(d).unwrap_or_else(|| {
                unaccounted += 1;
                self.sent
            }));
        }
        Accounted { label, unaccounted }
    }

    /// A completion inferproxy witnessed: its answer, and its `forms`, the other forms loopd may
    /// send it as (`composed::answer_forms`, which only inferproxy can compute: brokerd
    /// never sees the answer's text), are accounted at the label of its prompt, and the
    /// notices loopd may write in place of its calls' results at private. On disk before
    /// it returns.
    pub fn witnessed(&mut self, report: &WitnessReport) -> Result<Accounted, LogError> {
        let accounted = self.label_of(&report.prompt);
        if accounted.unaccounted > 0 {
            daemon::log::warn(format_args!(
                "accounting: completion {}: {} of its {} prompt messages are not accounted \
                 for; its calls are labelled at the highest label brokerd has sent ({})",
                report.completion,
                accounted.unaccounted,
                report.prompt.len(),
                show(self.sent)
            ));
        }
        let mut records: Vec<Record> = std::iter::once(report.answer)
            .chain(report.forms.iter().copied())
            .map(|digest| Record {
                kind: Kind::Answer,
                digest,
                label: accounted.label,
                calls: Vec::new(),
            })
            .collect();
        records.push(Record {
            kind: Kind::Completion,
            digest: completion_key(&report.completion),
            label: accounted.label,
            calls: report.calls.iter().map(|c| c.id.clone()).collect(),
        });
        let notices = [
            composed::INTERRUPTED.to_owned(),
            composed::CANCELLED.to_owned(),
            composed::over_cap(self.cap),
        ];
        for call in &report.calls {
            for n in &notices {
                let m = composed::tool_message(&call.id, &ToolResponse::failed(n.as_str()));
                records.push(Record {
                    kind: Kind::Tool,
                    digest: m.digest(),
                    label: OWNER,
                    calls: Vec::new(),
                });
            }
        }
        self.add(&records, Durable::Here)?;
        Ok(accounted)
    }

    /// brokerd answered the witnessed call whose model id is `tool_call_id` with `r`, at
    /// `label` (a result's own labels, or those of the run a failure came from; a denial's
    /// is [`OWNER`]). The tool message loopd makes of it, and its form cut short for
    /// a summary, are accounted at `label`, which also raises [`Accounting::sent`]. Taken
    /// in before it returns, and on disk as `durable` says: call it before the answer leaves.
    pub fn returned(
        &mut self,
        tool_call_id: &str,
        r: &ToolResponse,
        label: Labels,
        durable: Durable,
    ) -> Result<(), LogError> {
        self.add(&tool_records(tool_call_id, r, label), durable)
    }

    /// At start: the denials the audit log's decision lines hold for witnessed calls whose
    /// reports the witness store keeps (`(model call id, denial)`, oldest first), accounted
    /// again at [`OWNER`] where the file does not hold them (they were kept in memory only:
    /// [`Durable::InAudit`]). What is missing is written, synced, in one batch; the number
    /// of records it wrote. While brokerd serves, before a checkpoint covers their lines
    /// (A8), the same writes those kept in memory only.
    pub fn rebuild(&mut self, denials: &[(String, ToolResponse)]) -> Result<usize, LogError> {
        let mut missing: Vec<Record> = Vec::new();
        for (id, r) in denials {
            for record in tool_records(id, r, OWNER) {
                let known = (self.label(&record.digest).is_some()
                    && !self.unwritten.contains(&record.digest))
                    || missing.iter().any(|m| m.digest == record.digest);
                if !known {
                    missing.push(record);
                }
            }
        }
        if missing.is_empty() {
            return Ok(0);
        }
        self.add(&missing, Durable::Here)?;
        Ok(missing.len())
    }

    /// A channel handed loopd the owner's message whose [`ChatMessage::user`] digest is
    /// `digest`.
    pub fn owner(&mut self, digest: Hash32) -> Result<(), LogError> {
        self.add(
            &[Record {
                kind: Kind::Owner,
                digest,
                label: OWNER,
                calls: Vec::new(),
            }],
            Durable::Here,
        )
    }

    /// The owner's core memory `core`: its system message is accounted at private (once:
    /// a core memory already accounted writes nothing).
    pub fn core(&mut self, core: &str) -> Result<(), LogError> {
        let digest = composed::system(core).digest();
        if self.map.contains_key(&digest) || self.fixed.contains_key(&digest) {
            return Ok(());
        }
        self.add(
            &[Record {
                kind: Kind::Core,
                digest,
                label: OWNER,
                calls: Vec::new(),
            }],
            Durable::Here,
        )
    }

    /// Writes `records` (one sync) when this file is where they are durable, then takes
    /// them in.
    fn add(&mut self, records: &[Record], durable: Durable) -> Result<(), LogError> {
        if durable == Durable::Here {
            let sent = records
                .iter()
                .filter(|r| r.kind == Kind::Tool)
                .fold(self.sent, |s, r| s.join(r.label));
            self.log.append(records, sent, &self.order)?;
            for r in records {
                self.unwritten.remove(&r.digest);
            }
        } else {
            self.unwritten.extend(records.iter().map(|r| r.digest));
        }
        for r in records {
            self.remember(r.clone());
        }
        Ok(())
    }

    fn remember(&mut self, r: Record) {
        if r.kind == Kind::Tool {
            self.sent = self.sent.join(r.label);
        }
        let e = self.map.entry(r.digest).or_insert((r.label, 0));
        *e = (e.0.join(r.label), e.1 + 1);
        if r.kind == Kind::Completion {
            self.calls.insert(r.digest, r.calls.clone());
        }
        self.order.push_back(r);
        while self.order.len() > self.max {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            // Forgotten only when no kept record names the same digest.
            if let Some(e) = self.map.get_mut(&old.digest) {
                e.1 -= 1;
                if e.1 == 0 {
                    self.map.remove(&old.digest);
                    self.unwritten.remove(&old.digest);
                    self.calls.remove(&old.digest);
                }
            }
        }
    }
}
