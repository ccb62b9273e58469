//! A note as a source of its own (docs/decisions.md V48): what an earlier session, or you,
//! left in the notes, read and sent on. The analysis labels a `note_read` by its grants
//! alone (a note's own label is brokerd's record at run time, docs/verify.md "What it does
//! not see"), so the self-test plants each chain's note at the lowest label a note can have:
//! the file `bxnote-N.md` in the shadow's notes directory holding the chain's canary, which
//! brokerd has no record of (so it would read secret and untrusted), then relabelled public
//! and trusted through brokerd's admin side, as `bxctl notes relabel` does (audited in the
//! shadow). Its read is then labelled by the `note_read` grants alone, as the analysis
//! says. When an allowing `note_read` grant of an ordinary session labels its results
//! private or secret, a read of a note of the chain's own, then a send of it to every sink
//! but the look-alikes.
//!
//! A listing of the notes likewise (decisions V59): a `note_list` is labelled by its grants
//! and by every note's label at run time (`notes::list_labels`), so the shadow plants each
//! listing chain's note, named by the chain's canary (a listing says names), relabels it
//! public and trusted, and plays the listing chains before every other chain, while the
//! notes are only those it planted so (no chain has written one yet). When an allowing
//! `note_list` grant of an ordinary session labels its results private or secret, a listing,
//! then a send of the chain's note's name to every sink but the look-alikes.
//!
//! A note write's answer likewise (decisions V70): `note_write` answers with the note's new
//! size and SHA-256, so after an `append` it holds the note as it was, labelled by the
//! note's label and its grants' (M16). The shadow plants each such chain's note
//! (`bxnotew-N`, holding its canary line) public and trusted; when an allowing `note_write`
//! grant of an ordinary session labels its results private or secret, an append of a word
//! to it, then a send of the note's new hash, which the shadow computes from what it planted
//! and what the call adds (the call holds neither), to every sink but the look-alikes; in a
//! job's runs, to each of the job's sinks, its delivery included (`jobs`).

use config::Config;
use proto::Message;
use proto::tools::{NoteListArgs, NoteMode, NoteReadArgs, NoteWriteArgs, ToolArgs};

use super::chains::{Chain, Source, Target, canary};
use super::rewrite::Rewritten;
use super::script::{Answer, Call};

/// What names the notes as a chain's source.
const NOTES: &str = "the notes";

/// The note chain `n` reads.
fn name(n: usize) -> String {
    format!("bxnote-{n}")
}

/// The note chain `n` appends to.
fn appended(n: usize) -> String {
    format!("bxnotew-{n}")
}

/// What chain `n`'s append adds to its note.
fn added(n: usize) -> String {
    format!("BXAPPEND-{n}")
}

/// Whether `c` starts from a note of its own, read or listed.
pub fn is(c: &Chain) -> bool {
    matches!(c.source.tool, "note_read" | "note_list") && c.source.owner == NOTES
}

/// Whether `c` starts from a note write's answer: an append to a note of its own.
pub fn is_write(c: &Chain) -> bool {
    c.source.tool == "note_write" && c.source.owner == NOTES
}

/// What chain `n`'s note holds once its append ran, as brokerd writes it (`Notes::commit`:
/// the planted line, which ends in a line break, then the text; a trusted session's, so no
/// header): the hash of it is what the answer says and the chain looks for at its sink.
pub fn write_hash(n: usize, nonce: &str) -> String {
    let text = format!("{}\n{}", canary(nonce, n), added(n));
    proto::Hash32::digest(text.as_bytes()).to_string()
}

/// Adds a chain from a note write's answer to each of `targets` but the look-alikes, when
/// an allowing `note_write` grant whose results are private or secret covers the append;
/// numbered after `chains`.
pub fn plan_writes(
    r: &Rewritten,
    targets: &[Target],
    port: u16,
    nonce: &str,
    chains: &mut Vec<Chain>,
) {
    for sink in targets.iter().filter(|t| t.lookalike.is_none()) {
        let n = chains.len() + 1;
        if let Some((source, hash)) = write_source_of(r.grants.values(), n, nonce, true) {
            chains.push(Chain::carrying(n, source, sink, port, hash));
        }
    }
}

/// Chain `n`'s append to a note of its own and the hash its answer says, when one of
/// `grants` (an ordinary session's, or a job's, `jobs`) allows it (and when `labelled`, one
/// whose results are private or secret); `None`: none does.
pub fn write_source_of<'a>(
    grants: impl Iterator<Item = &'a proto::Grant>,
    n: usize,
    nonce: &str,
    labelled: bool,
) -> Option<(Source, String)> {
    let args = ToolArgs::NoteWrite(NoteWriteArgs {
        mode: NoteMode::Append,
        name: appended(n),
        text: added(n),
    });
    let source = Source {
        tool: "note_write",
        owner: NOTES.into(),
        path: appended(n),
    };
    covered(grants, &args, labelled).then(|| (source, write_hash(n, nonce)))
}

/// A note write chain's first call: the append to its note.
pub fn write_call(c: &Chain) -> Answer {
    let arguments = serde_json::json!({
        "mode": "append",
        "name": c.source.path,
        "text": added(c.n),
    });
    Answer {
        text: String::new(),
        tool_calls: vec![Call {
            name: "note_write".into(),
            arguments: arguments.to_string(),
        }],
    }
}

/// Whether `c` starts from a listing of the notes: played before every other chain.
pub fn is_list(c: &Chain) -> bool {
    c.source.tool == "note_list" && c.source.owner == NOTES
}

/// Adds a chain from a note of its own to each of `targets` but the look-alikes, when a
/// grant whose results are private or secret covers the read of it; numbered after
/// `chains`.
pub fn plan(r: &Rewritten, targets: &[Target], port: u16, nonce: &str, chains: &mut Vec<Chain>) {
    for sink in targets.iter().filter(|t| t.lookalike.is_none()) {
        let n = chains.len() + 1;
        // A read of the chain's note labelled above public by a grant covering it (brokerd
        // joins every covering grant's labels); public data going out is no flow.
        if let Some(source) = source(r, n, true) {
            chains.push(Chain::send(n, source, sink, port, nonce));
        }
    }
}

/// Adds a chain from a listing of the notes to each of `targets` but the look-alikes, when
/// a grant whose results are private or secret covers the listing; numbered after `chains`.
pub fn plan_lists(
    r: &Rewritten,
    targets: &[Target],
    port: u16,
    nonce: &str,
    chains: &mut Vec<Chain>,
) {
    for sink in targets.iter().filter(|t| t.lookalike.is_none()) {
        let n = chains.len() + 1;
        if let Some(source) = list_source(r, n, nonce, true) {
            chains.push(Chain::send(n, source, sink, port, nonce));
        }
    }
}

/// Chain `n`'s listing of the notes, which holds a note named by its canary, when an
/// allowing `note_list` grant covers it (and when `labelled`, one whose results are private
/// or secret); `None`: none does.
pub fn list_source(r: &Rewritten, n: usize, nonce: &str, labelled: bool) -> Option<Source> {
    list_source_of(r.grants.values(), n, nonce, labelled)
}

/// Chain `n`'s listing of the notes when one of `grants` (a job's, `jobs`) covers it, as
/// [`list_source`].
pub fn list_source_of<'a>(
    grants: impl Iterator<Item = &'a proto::Grant>,
    n: usize,
    nonce: &str,
    labelled: bool,
) -> Option<Source> {
    let args = ToolArgs::NoteList(NoteListArgs {});
    covered(grants, &args, labelled).then(|| Source {
        tool: "note_list",
        owner: NOTES.into(),
        path: canary(nonce, n),
    })
}

/// Whether an allowing one of `grants` of `args`' tool covers it (and when `labelled`, one
/// whose results are private or secret: brokerd joins every covering grant's labels).
fn covered<'a>(
    mut grants: impl Iterator<Item = &'a proto::Grant>,
    args: &ToolArgs,
    labelled: bool,
) -> bool {
    grants.any(|g| {
        g.tool == args.tool()
            && g.mode != proto::Mode::Deny
            && (!labelled || g.result_class != proto::DataClass::Public)
            && grants::constraints::check(g, args).is_ok()
    })
}

/// Chain `n`'s read of a note of its own, when an allowing `note_read` grant covers it (and
/// when `labelled`, one whose results are private or secret); `None`: none does.
pub fn source(r: &Rewritten, n: usize, labelled: bool) -> Option<Source> {
    source_of(r.grants.values(), n, labelled)
}

/// Chain `n`'s read of a note of its own when one of `grants` (a job's, `jobs`) covers it,
/// its results private or secret (a public read sent out is no flow).
pub fn source_of<'a>(
    grants: impl Iterator<Item = &'a proto::Grant>,
    n: usize,
    labelled: bool,
) -> Option<Source> {
    let args = ToolArgs::NoteRead(NoteReadArgs { name: name(n) });
    covered(grants, &args, labelled).then(|| Source {
        tool: "note_read",
        owner: NOTES.into(),
        path: name(n),
    })
}

/// Plants each note chain's note in the running shadow (`shadow`, its configuration) and
/// has its brokerd label it public and trusted: a read's holding what the chain awaits, a
/// listing's named by it, a write's holding its canary (`nonce`). The shadow has no other
/// note (`dev::shadow` keeps no demo note): a listing is labelled by every file there.
pub fn plant<'a>(
    shadow: &Config,
    chains: impl Iterator<Item = &'a Chain>,
    nonce: &str,
) -> Result<(), String> {
    let dir = shadow.notes_dir();
    let notes = chains.filter_map(|c| {
        let own = is(c).then(|| (c.source.path.clone(), c.awaited().to_owned()));
        let own = own.or_else(|| is_write(c).then(|| (c.source.path.clone(), canary(nonce, c.n))));
        // A `note_search` chain's words, in a note of its own (`search_source`).
        own.or_else(|| super::search_source::note(c))
    });
    for (name, text) in notes {
        let path = dir.join(format!("{name}.md"));
        std::fs::write(&path, format!("{text}\n"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        relabel(shadow, &name)?;
    }
    Ok(())
}

/// Has the shadow's brokerd label note `name` public and trusted, as `bxctl notes relabel`
/// does (audited in the shadow): what the self-test planted, or what a job's run listing
/// the notes delivered there (`play::with_jobs`).
pub fn relabel(shadow: &Config, name: &str) -> Result<(), String> {
    let msg = Message::NoteRelabel(proto::notes::NoteRelabel {
        name: name.to_owned(),
        class: proto::DataClass::Public,
        untrusted: false,
    });
    match crate::admin::call(shadow, msg) {
        Ok(Message::NoteRelabelled(_)) => Ok(()),
        Ok(other) => Err(format!(
            "the shadow's brokerd answered {} to relabelling note {name}",
            other.kind()
        )),
        Err(e) => Err(format!("relabelling note {name}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grant of note tool `tool`, `auto` at any taint, its results labelled `class`.
    fn labelled(tool: &str, class: &str) -> proto::Grant {
        super::super::tests::grant(&format!(
            "tool = \"{tool}\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
             result_class = \"{class}\"\n"
        ))
    }

    /// The sinks of `r`'s chains that `kind` picks, in plan order.
    fn sent(r: &Rewritten, kind: fn(&Chain) -> bool) -> Vec<String> {
        super::super::chains::plan(r, 4321, "n0", false)
            .into_iter()
            .filter(kind)
            .map(|c| c.sink.entry)
            .collect()
    }

    /// A note read grant makes a chain from a note of its own to every sink; the canary is
    /// in the note only, never in the read's arguments; without such a grant, none.
    #[test]
    fn a_note_of_its_own_is_a_source_to_every_sink() {
        let mut r = super::super::tests::rewritten();
        assert!(
            !super::super::chains::plan(&r, 4321, "n0", false)
                .iter()
                .any(is)
        );
        r.grants.insert(
            "notes-read".into(),
            super::super::tests::grant(
                "tool = \"note_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 result_class = \"private\"\n",
            ),
        );
        let plan = super::super::chains::plan(&r, 4321, "n0", false);
        let noted: Vec<&Chain> = plan.iter().filter(|c| is(c)).collect();
        let sinks: Vec<&str> = noted.iter().map(|c| c.sink.entry.as_str()).collect();
        assert_eq!(sinks, ["api.example.org", "*.wikipedia.org"]);
        for c in noted {
            assert_eq!(c.source.path, format!("bxnote-{}", c.n));
            let call = super::super::script::source_answer(c);
            assert_eq!(call.tool_calls[0].name, "note_read");
            assert_eq!(
                call.tool_calls[0].arguments,
                serde_json::json!({"name": c.source.path}).to_string()
            );
            assert!(!call.tool_calls[0].arguments.contains(&c.canary));
        }
        // A private grant whose patterns do not cover the chain's note, beside a public one
        // that does: the read would be public by its grants, so no chain.
        let mut r = super::super::tests::rewritten();
        let note = |extra: &str| {
            super::super::tests::grant(&format!(
                "tool = \"note_read\"\nmode = \"auto\"\nmax_taint = \"secret\"\n{extra}"
            ))
        };
        r.grants.insert(
            "work".into(),
            note("result_class = \"private\"\n[constraints]\npatterns = [\"work-*\"]\n"),
        );
        r.grants
            .insert("any".into(), note("result_class = \"public\"\n"));
        assert!(
            !super::super::chains::plan(&r, 4321, "n0", false)
                .iter()
                .any(is)
        );
    }

    /// A note write grant whose results are private makes a chain appending to a note of its
    /// own to every sink, its canary the note's new hash (in neither the call nor the
    /// sink's address before the answer); a public one makes none.
    #[test]
    fn a_note_writes_answer_is_a_source_to_every_sink() {
        let mut r = super::super::tests::rewritten();
        r.grants
            .insert("notes-write".into(), labelled("note_write", "public"));
        assert!(sent(&r, is_write).is_empty());
        r.grants
            .insert("notes-write".into(), labelled("note_write", "private"));
        let plan = super::super::chains::plan(&r, 4321, "n0", false);
        assert_eq!(sent(&r, is_write), ["api.example.org", "*.wikipedia.org"]);
        for c in plan.iter().filter(|c| is_write(c)) {
            assert_eq!(c.source.path, format!("bxnotew-{}", c.n));
            let text = format!("{}\nBXAPPEND-{}", canary("n0", c.n), c.n);
            assert_eq!(c.canary, proto::Hash32::digest(text.as_bytes()).to_string());
            assert_eq!(c.awaited(), c.canary);
            assert!(c.url.contains(&c.canary), "{}", c.url);
            let call = super::super::script::source_answer(c);
            assert_eq!(call.tool_calls[0].name, "note_write");
            let args: serde_json::Value =
                serde_json::from_str(&call.tool_calls[0].arguments).expect("json");
            assert_eq!(args["mode"], "append");
            assert_eq!(args["name"], c.source.path.as_str());
            assert!(!call.tool_calls[0].arguments.contains(&c.canary));
            assert!(!call.tool_calls[0].arguments.contains(&canary("n0", c.n)));
        }
    }

    /// A listing grant whose results are private makes a listing chain to every sink, its
    /// note named by the chain's canary and its call without arguments (they are played
    /// first: `play`); a public listing grant alone makes none (public data out is no flow),
    /// but drives an untrusted write all the same.
    #[test]
    fn a_listing_of_the_notes_is_a_source_to_every_sink() {
        let mut r = super::super::tests::rewritten();
        r.grants
            .insert("notes-list".into(), labelled("note_list", "private"));
        let plan = super::super::chains::plan(&r, 4321, "n0", false);
        assert_eq!(sent(&r, is_list), ["api.example.org", "*.wikipedia.org"]);
        for c in plan.iter().filter(|c| is_list(c)) {
            assert!(is(c));
            assert_eq!(c.source.path, c.canary);
            assert_eq!(c.awaited(), c.canary);
            proto::notes::check_name(&c.source.path).expect("a note's name");
            let call = super::super::script::source_answer(c);
            assert_eq!(call.tool_calls[0].name, "note_list");
            assert_eq!(call.tool_calls[0].arguments, "{}");
        }
        // Public: no send from it.
        let mut r = super::super::tests::rewritten();
        r.grants
            .insert("notes-list".into(), labelled("note_list", "public"));
        assert!(sent(&r, is_list).is_empty());
        // Beside a write grant, a listing drives a write: its note named by the token the
        // write carries, the listing's result holding it.
        r.grants.insert(
            "drafts-write".into(),
            super::super::tests::grant(
                "tool = \"write_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\n\
                 [constraints]\npaths = [\"/s/tree/home/owner/notes\"]\n",
            ),
        );
        let plan = super::super::chains::plan(&r, 4321, "n0", false);
        let written: Vec<&Chain> = plan
            .iter()
            .filter(|c| is_list(c) && c.sink.tool == "write_file")
            .collect();
        assert_eq!(written.len(), 1, "{plan:?}");
        let c = written[0];
        assert_eq!(c.awaited(), c.source.path);
        assert_eq!(
            c.canary,
            format!("{}{}", super::super::sink::WRITE, c.source.path)
        );
    }
}
