//! boxmaker-indexer: the one indexer of the notes and the session logs (docs/memory.md,
//! decisions M10–M12). It reads, never writes, the notes, brokerd's label records of them
//! (`note-state/labels/`), loopd's logs (`sessions/`) and brokerd's export of each
//! session's label (`session-labels/`), and writes only `index/`: its working copies and
//! progress under `index/work/`, and the partitions it publishes, one per label, as
//! `index/<label>.sqlite` (copied, fsynced, renamed: never written after). It is trusted
//! for labels: it decides which partition a document goes to, by brokerd's word read
//! after the document.
//!
//! Run once (`boxmaker-indexer`, a oneshot unit) it indexes what changed since its last run,
//! again while a pass changed something, and exits; with `--watch` it runs a pass every
//! second (`bxctl dev`). [`Indexer::pass`] is one pass, for a bench.

mod error;
mod notes;
mod sessions;
mod state;
mod work;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use config::Config;
use daemon::log;
use noteindex::Label;

pub use error::Error;

#[derive(Debug, clap::Parser)]
#[command(
    name = "boxmaker-indexer",
    version,
    about = "indexes boxmaker's notes and session logs for search"
)]
pub struct Args {
    #[command(flatten)]
    pub common: daemon::CommonArgs,
    /// Keep running: a pass every second (and READY=1 after the first).
    #[arg(long)]
    pub watch: bool,
}

/// The most passes one run makes while every pass changes something (a log written
/// faster than it is indexed); the next run (the path unit's next trigger) goes on.
const MAX_PASSES: usize = 16;

/// How often `--watch` looks.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// Where the indexer reads and writes, derived from the configuration as brokerd and
/// loopd derive them.
#[derive(Debug, Clone)]
pub struct Paths {
    pub notes: PathBuf,
    /// brokerd's label records of the notes (`note-state/labels`).
    pub note_labels: PathBuf,
    pub sessions: PathBuf,
    pub session_labels: PathBuf,
    /// The only directory written.
    pub index: PathBuf,
}

impl Paths {
    pub fn of(config: &Config) -> Self {
        Self {
            notes: config.notes_dir(),
            note_labels: config.note_state_dir().join("labels"),
            sessions: config.home.join("sessions"),
            session_labels: config.session_labels_dir(),
            index: config.index_dir(),
        }
    }
}

/// What one pass did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    /// Notes indexed or removed.
    pub notes: usize,
    /// Session log records indexed, and sessions or logs moved or removed.
    pub records: usize,
    /// The partitions published.
    pub published: Vec<Label>,
}

impl Report {
    /// Whether the pass changed anything a search sees.
    pub fn changed(&self) -> bool {
        self.notes > 0 || self.records > 0 || !self.published.is_empty()
    }
}

/// The indexer over one set of paths.
#[derive(Debug)]
pub struct Indexer {
    paths: Paths,
    work: work::Work,
    /// `index/.lock`, held exclusively while the indexer lives: a second run (the owner's
    /// by hand beside the unit's) waits for the first.
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl Indexer {
    /// Waits for the index's lock, then opens the working copies (rebuilding them when
    /// their state is missing or corrupt).
    pub fn open(paths: Paths) -> Result<Self, Error> {
        let lock = work::lock(&paths.index)?;
        let work = work::Work::open(&paths.index, false)?;
        Ok(Self {
            paths,
            work,
            _lock: lock,
        })
    }

    /// One pass: indexes what changed since the last (each partition's changes one
    /// transaction), then publishes the partitions that changed. A pass that meets a
    /// damaged working partition opens them anew, checked whole (rebuilding what is not
    /// sound), and is made again.
    pub fn pass(&mut self) -> Result<Report, Error> {
        if self.work.stale() {
            log::warn(format_args!(
                "boxmaker-indexer: {} changed under the indexer: rebuilding",
                self.paths.index.display()
            ));
            self.work = work::Work::open(&self.paths.index, true)?;
        }
        match self.pass_once() {
            Err(Error::Index(noteindex::IndexError::Corrupt { path, detail })) => {
                log::warn(format_args!(
                    "boxmaker-indexer: {} is damaged ({detail}): checking the index whole",
                    path.display()
                ));
                self.work = work::Work::open(&self.paths.index, true)?;
                self.pass_once()
            }
            r => r,
        }
    }

    fn pass_once(&mut self) -> Result<Report, Error> {
        // Worked on a copy: after a failure the state stays what was last saved, and the
        // next pass redoes the rest (every change is idempotent).
        let mut state = self.work.state.clone();
        let changed = {
            let mut batches = self.work.batches()?;
            let notes = notes::pass(&self.paths, &mut state.notes, &mut batches)?;
            let records = sessions::pass(&self.paths, &mut state.sessions, &mut batches)?;
            let mut changed = Vec::new();
            for b in batches {
                changed.push(b.commit()?);
            }
            (notes, records, changed)
        };
        let (notes, records, changed) = changed;
        let saved = std::mem::replace(&mut self.work.state, state);
        match self.work.publish(&changed) {
            Ok(published) => Ok(Report {
                notes,
                records,
                published,
            }),
            Err(e) => {
                self.work.state = saved;
                Err(e)
            }
        }
    }

    /// Passes until one changes nothing (at most [`MAX_PASSES`]).
    pub fn settle(&mut self) -> Result<Report, Error> {
        let mut total = Report::default();
        for _ in 0..MAX_PASSES {
            let r = self.pass()?;
            if !r.changed() {
                break;
            }
            total.notes += r.notes;
            total.records += r.records;
            for l in r.published {
                if !total.published.contains(&l) {
                    total.published.push(l);
                }
            }
        }
        Ok(total)
    }
}

/// Removes from every partition, and from `done`, each source `done` has that the pass did
/// not see (deleted since); returns how many.
pub(crate) fn forget<'a, T>(
    done: &mut std::collections::BTreeMap<String, T>,
    seen: &std::collections::BTreeSet<String>,
    batches: &mut [noteindex::Batch<'a>],
    remove: impl Fn(&mut noteindex::Batch<'a>, &str) -> Result<(), noteindex::IndexError>,
) -> Result<usize, Error> {
    let gone: Vec<String> = done
        .keys()
        .filter(|n| !seen.contains(*n))
        .cloned()
        .collect();
    for name in &gone {
        for b in batches.iter_mut() {
            remove(b, name)?;
        }
        done.remove(name);
    }
    Ok(gone.len())
}

/// The names in `dir`; none when it does not exist (nothing to index yet).
pub(crate) fn entries(dir: &Path) -> Result<Vec<OsString>, Error> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(dir)(e)),
    };
    let mut names = Vec::new();
    for entry in read {
        names.push(entry.map_err(Error::io(dir))?.file_name());
    }
    names.sort();
    Ok(names)
}

fn report(r: &Report) {
    if r.changed() {
        let published: Vec<String> = r.published.iter().map(|l| l.file_name()).collect();
        log::info(format_args!(
            "boxmaker-indexer: {} notes, {} session records; published {}",
            r.notes,
            r.records,
            if published.is_empty() {
                "nothing".to_owned()
            } else {
                published.join(", ")
            }
        ));
    }
}

pub fn run(args: &Args) -> Result<(), Error> {
    let config = Config::load(&args.common.config).map_err(Error::Config)?;
    let paths = Paths::of(&config);
    if args.common.check_config {
        log::info(format_args!(
            "{}: good; indexing into {}",
            args.common.config.display(),
            paths.index.display()
        ));
        return Ok(());
    }
    let mut indexer = Indexer::open(paths)?;
    report(&indexer.settle()?);
    if !args.watch {
        return Ok(());
    }
    daemon::notify::ready("indexed");
    loop {
        std::thread::sleep(WATCH_EVERY);
        match indexer.pass() {
            Ok(r) => report(&r),
            // A full disk, say: nothing is lost, the next pass tries again.
            Err(e) => log::warn(format_args!("boxmaker-indexer: {e}")),
        }
    }
}
