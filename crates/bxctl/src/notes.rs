//! `bxctl notes`: the agent's notes with the labels brokerd keeps (list, show) and the
//! owner's relabel, and `bxctl search` over all of them, all through brokerd's admin socket
//! (brokerd alone owns the notes and their index).
//! Names and text were written by the model: shown inert. With `--json`, brokerd's answer
//! as it is (`notes_listing`, `note_relabelled`, `notes_found`), one line; JSON escaping
//! keeps it inert.

use std::io::Write;
use std::process::ExitCode;

use config::Config;
use inert::{block, line};
use proto::notes::{NoteInfo, NoteRelabel, NotesQuery, NotesSearch};
use proto::{DataClass, Message};

use crate::Error;
use crate::admin::call;
use crate::error::unexpected;
use crate::output::print_json;

fn label(class: DataClass, untrusted: bool) -> String {
    format!("{class}{}", if untrusted { ", untrusted" } else { "" })
}

fn describe(n: &NoteInfo) -> String {
    let mut s = format!("{}  {}", line(&n.file), label(n.class, n.untrusted));
    if !n.matches {
        s.push_str(
            "  (NOT as brokerd wrote it: edited on disk, or never written by brokerd; \
             it reads as secret and untrusted until `bxctl notes relabel`)",
        );
    }
    if let Some(r) = &n.record {
        match &r.session {
            Some(session) => s.push_str(&format!("  last written {} by {session}", r.time)),
            None => s.push_str(&format!("  relabelled {}", r.time)),
        }
    }
    s
}

fn query(config: &Config, name: Option<String>) -> Result<proto::notes::NotesListing, Error> {
    match call(config, Message::NotesQuery(NotesQuery { name }))? {
        Message::NotesListing(l) => Ok(l),
        other => Err(unexpected(&other)),
    }
}

pub fn list(config: &Config, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let listing = query(config, None)?;
    if json {
        return print_json(&listing, out);
    }
    if listing.notes.is_empty() {
        writeln!(out, "no notes").map_err(Error::Output)?;
    }
    for n in &listing.notes {
        writeln!(out, "{}", describe(n)).map_err(Error::Output)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show(
    config: &Config,
    name: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let listing = query(config, Some(name.to_owned()))?;
    if json {
        return print_json(&listing, out);
    }
    for n in &listing.notes {
        writeln!(out, "{}", describe(n)).map_err(Error::Output)?;
        if let Some(r) = &n.record
            && !r.untrusted_by.is_empty()
        {
            let by: Vec<String> = r.untrusted_by.iter().map(crate::card::source).collect();
            writeln!(out, "  written after reading: {}", by.join(", ")).map_err(Error::Output)?;
        }
    }
    let text = listing.text.unwrap_or_default();
    write!(out, "{}", block(&text)).map_err(Error::Output)?;
    Ok(ExitCode::SUCCESS)
}

pub fn relabel(
    config: &Config,
    name: &str,
    class: DataClass,
    untrusted: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let msg = Message::NoteRelabel(NoteRelabel {
        name: name.to_owned(),
        class,
        untrusted,
    });
    match call(config, msg)? {
        Message::NoteRelabelled(r) if json => print_json(&r, out),
        Message::NoteRelabelled(r) => {
            writeln!(
                out,
                "note {} relabelled: {} -> {} (bytes {}; audited)",
                line(&r.name),
                label(r.old_class, r.old_untrusted),
                label(r.class, r.untrusted),
                r.hash
            )
            .map_err(Error::Output)?;
            Ok(ExitCode::SUCCESS)
        }
        other => Err(unexpected(&other)),
    }
}

/// `bxctl search QUERY`: every note and session log record that matches, best first, each
/// with its partition's label; the names and snippets shown inert.
pub fn search(
    config: &Config,
    query: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, Error> {
    let msg = Message::NotesSearch(NotesSearch {
        query: query.to_owned(),
    });
    match call(config, msg)? {
        Message::NotesFound(found) if json => print_json(&found, out),
        Message::NotesFound(found) => {
            if found.hits.is_empty() {
                writeln!(out, "no note or session matches").map_err(Error::Output)?;
            }
            for h in &found.hits {
                let what = match (&h.name, &h.session, h.epoch) {
                    (Some(name), _, _) => line(name),
                    (None, Some(session), Some(epoch)) => {
                        format!("session {session} epoch {epoch}")
                    }
                    (None, Some(session), None) => format!("session {session}"),
                    (None, None, _) => "?".to_owned(),
                };
                writeln!(out, "{what}  {}", label(h.class, h.untrusted)).map_err(Error::Output)?;
                writeln!(out, "  {}", line(&h.snippet)).map_err(Error::Output)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        other => Err(unexpected(&other)),
    }
}
