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
mod record;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use proto::approval::CallRef;
use proto::attest::{CompletionId, WitnessReport};
use proto::composed;
use proto::{Hash32, ToolResponse};

use crate::policy::Labels;

pub use log::LogError;
pub use record::{Kind, MAX_SOURCES, OWNER, Record};
use record::{add_sources, chain, chain_start, record, tool_records};

/// How many records the accounting keeps by default: older ones are forgotten, and a prompt
/// that holds a forgotten message is labelled as if it were unaccounted (fail closed).
pub const DEFAULT_MAX_RECORDS: usize = 65536;

/// `labels` as a person reads them.
pub fn show(labels: Labels) -> String {
    let trust = if labels.untrusted {
        "untrusted"
    } else {
        "trusted"
    };
    format!("{} {trust}", labels.class)
}

/// The labels of the tool message loopd makes of `r`, answered to a call decided at
/// `decided`: a result's own (which the run joined with `decided` already), a failure's
/// those of the run it came from (`ran`; none: it never ran, and then `decided`), a
/// denial's `decided` (its detail can echo the call's arguments, which the prompt at that
/// label produced; docs/decisions.md X9).
pub fn of_response(r: &ToolResponse, ran: Option<Labels>, decided: Labels) -> Labels {
    match r {
        ToolResponse::Result {
            class, untrusted, ..
        } => Labels {
            class: *class,
            untrusted: *untrusted,
        },
        ToolResponse::Failed { .. } => ran.unwrap_or(decided).join(decided),
        ToolResponse::Denied { .. } | ToolResponse::PendingApproval { .. } => decided.join(OWNER),
    }
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

/// The label of one prompt, how many of its messages brokerd could not account for, and
/// the calls that made it untrusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accounted {
    pub label: Labels,
    pub unaccounted: usize,
    pub sources: Vec<CallRef>,
}

#[derive(Debug)]
pub struct Accounting {
    log: log::Log,
    max: usize,
    /// Each digest's label (the join, when a digest was recorded more than once) and how
    /// many of the kept records name it.
    map: HashMap<Hash32, (Labels, usize)>,
    /// Each untrusted digest's sources ([`Record::sources`], joined).
    sources: HashMap<Hash32, Vec<CallRef>>,
    /// The records in the order they were made, for forgetting the oldest.
    order: VecDeque<Record>,
    /// Each kept completion's calls' ids.
    calls: HashMap<Hash32, Vec<String>>,
    /// The highest label brokerd has ever sent loopd: what an unaccounted message counts as.
    sent: Labels,
    /// The calls that made [`Accounting::sent`] untrusted (the first [`MAX_SOURCES`]).
    sent_sources: Vec<CallRef>,
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
        let (log, (sent, sent_sources), records) = log::Log::open(path, max)?;
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
            sources: HashMap::new(),
            order: VecDeque::new(),
            calls: HashMap::new(),
            sent: sent.join(OWNER),
            sent_sources,
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

    /// [`Accounting::sent`] as a prompt of one unaccounted message is accounted.
    pub fn sent_accounted(&self) -> Accounted {
        Accounted {
            label: self.sent,
            unaccounted: 1,
            sources: self.sent_sources.clone(),
        }
    }

    /// The label `digest` is accounted at, if any.
    pub fn label(&self, digest: &Hash32) -> Option<Labels> {
        self.fixed
            .get(digest)
            .copied()
            .or_else(|| self.map.get(digest).map(|(l, _)| *l))
    }

    /// A witnessed completion's prompt (its label and what made it untrusted) and its calls'
    /// ids, while its record is kept.
    pub fn completion(&self, completion: &CompletionId) -> Option<(Accounted, &[String])> {
        let key = completion_key(completion);
        let (label, _) = self.map.get(&key)?;
        let accounted = Accounted {
            label: *label,
            unaccounted: 0,
            sources: self.sources.get(&key).cloned().unwrap_or_default(),
        };
        Some((
            accounted,
            self.calls.get(&key).map_or(&[][..], Vec::as_slice),
        ))
    }

    /// The label a message of digest `digest` takes at the place whose chain is `at`: the
    /// session's own answer there ([`Kind::Reply`]), else what the digest is accounted at
    /// (joined over everyone who received it), with what made it untrusted.
    fn lookup(&self, at: &Hash32, digest: &Hash32) -> Option<(Labels, &[CallRef])> {
        let sources = |key: &Hash32| self.sources.get(key).map_or(&[][..], Vec::as_slice);
        if let Some((l, _)) = self.map.get(at) {
            return Some((*l, sources(at)));
        }
        self.label(digest).map(|l| (l, sources(digest)))
    }

    /// The label of a prompt: the join of its messages' labels, an unaccounted one counting
    /// as [`Accounting::sent`]. A witnessed answer where it follows exactly the prompt that
    /// produced it counts as that prompt's label (the session's own answer), anywhere else
    /// as the join over every prompt that produced the same text. Never below private (an
    /// empty prompt is the owner's).
    pub fn label_of(&self, prompt: &[Hash32]) -> Accounted {
        let mut label = OWNER;
        let mut unaccounted = 0;
        let mut sources = Vec::new();
        let mut at = chain_start();
        for d in prompt {
            at = chain(at, d);
            let (l, from) = self.lookup(&at, d).unwrap_or_else(|| {
                unaccounted += 1;
                (self.sent, self.sent_sources.as_slice())
            });
            if l.untrusted {
                add_sources(&mut sources, from);
            }
            label = label.join(l);
        }
        Accounted {
            label,
            unaccounted,
            sources,
        }
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
        let (label, sources) = (accounted.label, accounted.sources.as_slice());
        let prompt = report.prompt.iter().fold(chain_start(), chain);
        let answers: Vec<Hash32> = std::iter::once(report.answer)
            .chain(report.forms.iter().copied())
            .collect();
        let mut records: Vec<Record> = answers
            .iter()
            .map(|d| record(Kind::Answer, *d, label, sources))
            .collect();
        // Each form as this prompt's own reply too (a summary form never follows its
        // prompt, so its reply record is never found: it is kept for one shape of record).
        records.extend(
            answers
                .iter()
                .map(|d| record(Kind::Reply, chain(prompt, d), label, sources)),
        );
        records.push(Record {
            calls: report.calls.iter().map(|c| c.id.clone()).collect(),
            ..record(
                Kind::Completion,
                completion_key(&report.completion),
                label,
                sources,
            )
        });
        let notices = [
            composed::INTERRUPTED.to_owned(),
            composed::CANCELLED.to_owned(),
            composed::over_cap(self.cap),
        ];
        for call in &report.calls {
            for n in &notices {
                let m = composed::tool_message(&call.id, &ToolResponse::failed(n.as_str()));
                records.push(record(Kind::Tool, m.digest(), OWNER, &[]));
            }
        }
        self.add(&records, Durable::Here)?;
        Ok(accounted)
    }

    /// brokerd answered the witnessed call whose model id is `tool_call_id` with `r`, at
    /// `label` ([`of_response`]), made untrusted by `sources`. The tool message loopd makes
    /// of it, and its form cut short for a summary, are accounted at `label`, which also
    /// raises [`Accounting::sent`]. Taken in before it returns, and on disk as `durable`
    /// says: call it before the answer leaves.
    pub fn returned(
        &mut self,
        tool_call_id: &str,
        r: &ToolResponse,
        label: Labels,
        sources: &[CallRef],
        durable: Durable,
    ) -> Result<(), LogError> {
        self.add(&tool_records(tool_call_id, r, label, sources), durable)
    }

    /// At start: the denials the audit log's decision lines hold for witnessed calls whose
    /// reports the witness store keeps (`(model call id, denial, the label the line says it
    /// was decided at)`, oldest first), accounted again at that label where the file does
    /// not hold them (they were kept in memory only: [`Durable::InAudit`]). What is missing
    /// is written, synced, in one batch; the number of records it wrote. While brokerd
    /// serves, before a checkpoint covers their lines (A8), the same writes those kept in
    /// memory only.
    pub fn rebuild(
        &mut self,
        denials: &[(String, ToolResponse, Labels)],
    ) -> Result<usize, LogError> {
        let mut missing: Vec<Record> = Vec::new();
        for (id, r, decided) in denials {
            let label = of_response(r, None, *decided);
            // The line keeps the label, not its sources: the card of a later call names
            // the call its session's own state holds.
            for record in tool_records(id, r, label, &[]) {
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
        self.add(&[record(Kind::Owner, digest, OWNER, &[])], Durable::Here)
    }

    /// The owner's core memory `core`: its system message is accounted at private (once:
    /// a core memory already accounted writes nothing).
    pub fn core(&mut self, core: &str) -> Result<(), LogError> {
        let digest = composed::system(core).digest();
        if self.map.contains_key(&digest) || self.fixed.contains_key(&digest) {
            return Ok(());
        }
        self.add(&[record(Kind::Core, digest, OWNER, &[])], Durable::Here)
    }

    /// Writes `records` (one sync) when this file is where they are durable, then takes
    /// them in.
    fn add(&mut self, records: &[Record], durable: Durable) -> Result<(), LogError> {
        if durable == Durable::Here {
            let sent = records
                .iter()
                .filter(|r| r.kind == Kind::Tool)
                .fold(self.sent, |s, r| s.join(r.label));
            let mut sources = self.sent_sources.clone();
            for r in records.iter().filter(|r| r.kind == Kind::Tool) {
                add_sources(&mut sources, &r.sources);
            }
            self.log.append(records, (sent, &sources), &self.order)?;
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
            add_sources(&mut self.sent_sources, &r.sources);
        }
        let e = self.map.entry(r.digest).or_insert((r.label, 0));
        *e = (e.0.join(r.label), e.1 + 1);
        if !r.sources.is_empty() {
            add_sources(self.sources.entry(r.digest).or_default(), &r.sources);
        }
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
                    self.sources.remove(&old.digest);
                }
            }
        }
    }
}
