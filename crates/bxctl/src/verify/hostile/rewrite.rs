//! The owner's grant set moved into the shadow: each grant file as it is on disk, every
//! granted path `P` becoming `TREE/P` under the scratch directory (so paths that nest or
//! overlap still do), and likewise every absolute pattern of a tool whose patterns match
//! paths (`TREE` escaped, so it matches itself alone); every other field unchanged (mode,
//! `max_taint`, `result_class`, `untrusted`, `if_untrusted`, `expires`, `job`, hosts, the
//! other patterns); a `run` grant's `workdir` moves as its paths do. Nothing is read from the
//! owner's files: a granted path is only looked at (`symlink_metadata`) to make a file where
//! the owner has a file. A `run` grant stays, its programs played by stand-ins (`run`), save
//! one the shadow cannot play (`run::untried`), left out and said; an MCP grant stays, its
//! server played by a stand-in (`mcp`). A job's grants are
//! kept apart (`Rewritten::jobs`): the shadow starts that job's runs (`jobs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proto::Grant;

/// One grant left out of the shadow, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    pub grant: String,
    pub why: String,
    /// Which of the grant's flows are not tried.
    pub scope: Scope,
}

impl Left {
    /// Grant `grant` not tried as a source only, and why.
    pub fn source(grant: &str, why: &str) -> Self {
        Self {
            grant: grant.to_owned(),
            why: why.to_owned(),
            scope: Scope::Source,
        }
    }
}

/// Which flows of a grant said in [`Left`] are not tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every flow through it: the grant is left out, or its patterns name nothing.
    Grant,
    /// Its flows from it only: a write grant whose result, or a program whose output, the
    /// shadow cannot play as a source (`write_source`, `run_source`).
    Source,
    /// Its one call reading and sending only (`run_bound::unbound`).
    OneCall,
    /// Its flows as an untrusted write's sink only (`run::unwritable`).
    Written,
}

/// The shadow's grants: by id, as written; the granted paths, owner's to shadow's.
#[derive(Debug, Default)]
pub struct Rewritten {
    /// An ordinary session's grants (a job's are in `jobs`).
    pub grants: BTreeMap<String, Grant>,
    /// Each granted path of the owner's, with its place in the shadow and whether the
    /// owner's is a regular file.
    pub paths: BTreeMap<String, (PathBuf, bool)>,
    /// The grants left out of the shadow, not tried: a `run` grant the shadow cannot play,
    /// an MCP server's without a stand-in, a job's the configuration does not have.
    pub left: Vec<Left>,
    /// The MCP servers configured by `url` (remote), stood in for (`mcp::prepare`): brokerd
    /// binds none of their grants' paths, so no call of one reads them (no bound chain,
    /// `mcp_bound`), as the analysis says (decisions V58).
    pub remote: BTreeSet<String>,
    /// The job-scoped grants (`job = NAME`), moved likewise: they decide only that job's runs,
    /// which the shadow starts itself (`jobs`).
    pub jobs: BTreeMap<String, Grant>,
    /// The paths the job-scoped grants name, as `paths` (kept apart, so that no ordinary
    /// chain reads where only a job may).
    pub job_paths: BTreeMap<String, (PathBuf, bool)>,
}

/// Whether `g` may decide a call of a session in `job` (`None`: an ordinary session), as
/// brokerd's `policy::in_scope` says: a job's grants its runs only, an ordinary grant
/// ordinary sessions only, but an ordinary denial denies in a job's run too.
pub fn in_scope(g: &Grant, job: Option<&proto::JobName>) -> bool {
    match (&g.job, job) {
        (Some(g), Some(j)) => g == j,
        (Some(_), None) => false,
        (None, None) => true,
        (None, Some(_)) => g.mode == proto::Mode::Deny,
    }
}

impl Rewritten {
    /// Grant `id`, an ordinary session's or a job's (ids are file names: one of either).
    pub fn grant(&self, id: &str) -> Option<&Grant> {
        self.grants.get(id).or_else(|| self.jobs.get(id))
    }

    /// The owner's path the shadow's `shadow` stands for (itself when none does).
    pub fn owner_of(&self, shadow: &str) -> String {
        self.paths
            .iter()
            .chain(&self.job_paths)
            .find(|(_, (s, _))| s.display().to_string() == shadow)
            .map_or_else(|| shadow.to_owned(), |(o, _)| o.clone())
    }
}

/// Why the grants directory cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {error} (`bxctl grants check` says more)", path.display())]
    Parse {
        path: PathBuf,
        error: proto::TomlError,
    },
    #[error("{}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// Why a grant is not tried in the shadow; `None`: it is (a `run` grant's programs by
/// stand-ins, `run`).
pub fn untried(grant: &Grant) -> Option<String> {
    super::run::untried(grant)
}

/// Reads every `*.toml` of `dir` as a grant and moves its paths under `tree`.
pub fn read(dir: &Path, tree: &Path) -> Result<Rewritten, RewriteError> {
    let entries = std::fs::read_dir(dir).map_err(|error| RewriteError::Read {
        path: dir.to_owned(),
        error,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut out = Rewritten::default();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|error| RewriteError::Read {
            path: path.clone(),
            error,
        })?;
        let grant: Grant = proto::from_toml(&text).map_err(|error| RewriteError::Parse {
            path: path.clone(),
            error,
        })?;
        let id = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(why) = untried(&grant) {
            out.left.push(Left {
                grant: id,
                why,
                scope: Scope::Grant,
            });
            continue;
        }
        if grant.job.is_some() {
            let moved = moved(grant, tree, &mut out.job_paths);
            out.jobs.insert(id, moved);
            continue;
        }
        out.grants.insert(id, moved(grant, tree, &mut out.paths));
    }
    Ok(out)
}

/// `grant` with each path under `tree`, and each absolute pattern of a tool whose patterns
/// match paths with it (a pattern naming `/home/owner/notes/*.md` names `TREE/home/owner/notes/*.md`).
fn moved(mut grant: Grant, tree: &Path, paths: &mut BTreeMap<String, (PathBuf, bool)>) -> Grant {
    // A `run` grant's working directory is a granted directory too (H11).
    for p in grant
        .constraints
        .paths
        .iter_mut()
        .chain(grant.constraints.workdir.as_mut())
    {
        let shadow = under(tree, p);
        let file = std::fs::symlink_metadata(&*p).is_ok_and(|m| m.is_file());
        paths.entry(p.clone()).or_insert((shadow.clone(), file));
        *p = shadow.display().to_string();
    }
    if grants::constraints::subject(&grant.tool) == Some(grants::constraints::Subject::Path) {
        for p in &mut grant.constraints.patterns {
            if p.starts_with('/') {
                *p = format!("{}{p}", literal(&tree.display().to_string()));
            }
        }
    }
    grant
}

/// `text` as a pattern matching it alone: `*`, `?` and `\` escaped, as brokerd reads them.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `TREE/P` for an absolute `P` (`/` itself is `TREE`).
pub fn under(tree: &Path, p: &str) -> PathBuf {
    tree.join(p.trim_start_matches('/'))
}

/// Writes the shadow's grant files into `dir`.
pub fn write(r: &Rewritten, dir: &Path) -> Result<(), RewriteError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |error| RewriteError::Write { path, error }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    for (id, grant) in r.grants.iter().chain(&r.jobs) {
        let path = dir.join(format!("{id}.toml"));
        let text = toml::to_string(grant)
            .map_err(|e| std::io::Error::other(e.to_string()))
            .map_err(io(&path))?;
        std::fs::write(&path, text).map_err(io(&path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("wt-hostile-rewrite-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    /// Paths move under the tree (nesting kept, a file known as a file); every other field
    /// is as the owner wrote it; a `run` grant with a workdir is left out with its reason, one
    /// the shadow plays stays, a job's is kept apart, an MCP grant stays (its stand-in is `mcp`'s); what is written reads back as the same
    /// grants.
    #[test]
    fn paths_move_and_nothing_else_changes() {
        let owner = dir("owner");
        let file = owner.join("todo.md");
        std::fs::write(&file, "real data\n").expect("file");
        let grants = owner.join("grants");
        std::fs::create_dir_all(&grants).expect("grants");
        let notes = format!(
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             result_class = \"secret\"\nuntrusted = false\nif_untrusted = \"ask\"\n\
             expires = \"2030-01-01T00:00:00.000Z\"\n\
             [constraints]\npaths = [\"/home/owner/notes\", \"/home/owner/notes/deep\", {:?}]\n\
             patterns = [\"*.md\"]\n",
            file.display().to_string()
        );
        std::fs::write(grants.join("notes.toml"), &notes).expect("grant");
        let web = "tool = \"http_fetch\"\nmode = \"ask\"\nmax_taint = \"public\"\n\
                   [constraints]\nhosts = [\"*.wikipedia.org\"]\n";
        std::fs::write(
            grants.join("brief-web.toml"),
            format!("job = \"brief\"\n{web}"),
        )
        .expect("grant");
        std::fs::write(grants.join("web.toml"), web).expect("grant");
        std::fs::write(
            grants.join("mcp.toml"),
            "tool = \"mcp:files/read\"\nmode = \"auto\"\nmax_taint = \"public\"\n",
        )
        .expect("grant");
        std::fs::write(
            grants.join("prog.toml"),
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"public\"\n\
             [constraints]\nprograms = [\"make\"]\npatterns = [\"*\"]\n\
             workdir = \"/home/owner/src\"\n",
        )
        .expect("grant");
        std::fs::write(
            grants.join("brief-make.toml"),
            "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"public\"\njob = \"brief\"\n\
             [constraints]\nprograms = [\"make\"]\npatterns = [\"*\"]\n",
        )
        .expect("grant");
        let curl = "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
                    [constraints]\nprograms = [\"curl\"]\npatterns = [\"https://a.example/*\"]\n\
                    hosts = [\"a.example\"]\n";
        std::fs::write(grants.join("curl.toml"), curl).expect("grant");
        std::fs::write(grants.join("notes.bak"), "not a grant").expect("other");
        let tree = owner.join("shadow/tree");
        let r = read(&grants, &tree).expect("read");
        // A job's program is played in its runs (`jobs`): kept apart with the job's grants.
        assert!(r.left.is_empty(), "{:?}", r.left);
        assert_eq!(
            r.grants.keys().collect::<Vec<_>>(),
            ["curl", "mcp", "notes", "prog", "web"]
        );
        // A program's working directory moves as a granted path does.
        let src = tree.join("home/owner/src").display().to_string();
        assert_eq!(
            r.grants["prog"].constraints.workdir.as_deref(),
            Some(src.as_str())
        );
        assert_eq!(r.paths["/home/owner/src"], (PathBuf::from(&src), false));
        assert_eq!(
            r.grants["curl"],
            proto::from_toml::<Grant>(curl).expect("curl")
        );
        // A job's grant is kept apart, as written.
        assert_eq!(
            r.jobs.keys().collect::<Vec<_>>(),
            ["brief-make", "brief-web"]
        );
        assert_eq!(
            r.jobs["brief-web"],
            proto::from_toml::<Grant>(&format!("job = \"brief\"\n{web}")).expect("job's")
        );
        let mut expected: Grant = proto::from_toml(&notes).expect("owner's");
        expected.constraints.paths = vec![
            tree.join("home/owner/notes").display().to_string(),
            tree.join("home/owner/notes/deep").display().to_string(),
            under(&tree, &file.display().to_string())
                .display()
                .to_string(),
        ];
        assert_eq!(r.grants["notes"], expected);
        assert_eq!(
            r.grants["web"],
            proto::from_toml::<Grant>(web).expect("web")
        );
        assert_eq!(
            r.paths[&file.display().to_string()],
            (under(&tree, &file.display().to_string()), true)
        );
        assert!(!r.paths["/home/owner/notes"].1);
        let out = owner.join("shadow/grants");
        write(&r, &out).expect("write");
        let back = read(&out, &owner.join("again")).expect("again");
        assert_eq!(back.grants["web"], r.grants["web"]);
        assert_eq!(back.jobs["brief-web"], r.jobs["brief-web"]);
        let mut notes_back = back.grants["notes"].clone();
        notes_back.constraints.paths = r.grants["notes"].constraints.paths.clone();
        assert_eq!(notes_back, r.grants["notes"]);
        assert!(untried(&r.grants["notes"]).is_none() && untried(&r.grants["mcp"]).is_none());
        let _ = std::fs::remove_dir_all(&owner);
    }

    /// An absolute pattern of a path tool moves with the paths (the tree escaped, so that it
    /// matches itself alone, as brokerd reads it); a relative one, and a `run` grant's
    /// (which match arguments), stay as written.
    #[test]
    fn absolute_path_patterns_move_with_the_paths() {
        let owner = dir("patterns");
        let grants = owner.join("grants");
        std::fs::create_dir_all(&grants).expect("grants");
        std::fs::write(
            grants.join("notes.toml"),
            "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
             [constraints]\npaths = [\"/home/owner/notes\"]\n\
             patterns = [\"/home/owner/notes/*.md\", \"*.txt\"]\n",
        )
        .expect("grant");
        let prog = "tool = \"run\"\nmode = \"auto\"\nmax_taint = \"private\"\n\
                    [constraints]\nprograms = [\"cat\"]\npatterns = [\"/home/owner/*\"]\n";
        std::fs::write(grants.join("prog.toml"), prog).expect("grant");
        // Each of brokerd's special characters in the tree's own name.
        let tree = owner.join("sh*d\\ow?/tree");
        let r = read(&grants, &tree).expect("read");
        let moved = format!("{}", tree.display())
            .replace('\\', "\\\\")
            .replace('*', "\\*")
            .replace('?', "\\?");
        assert_eq!(
            r.grants["notes"].constraints.patterns,
            [format!("{moved}/home/owner/notes/*.md"), "*.txt".to_owned()]
        );
        assert_eq!(
            r.grants["prog"],
            proto::from_toml::<Grant>(prog).expect("prog")
        );
        // As brokerd holds a read against it: the shadow's file matches (a bare backslash
        // would be no pattern brokerd reads), the owner's does not.
        let reads = |path: String| {
            let args = proto::tools::ToolArgs::ReadFile(proto::tools::ReadFileArgs { path });
            grants::constraints::check(&r.grants["notes"], &args).is_ok()
        };
        let shadow = r.paths["/home/owner/notes"].0.display().to_string();
        assert!(reads(format!("{shadow}/a.md")));
        assert!(!reads("/home/owner/notes/a.md".into()));
        let _ = std::fs::remove_dir_all(&owner);
    }
}
