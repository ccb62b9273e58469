//! Reading the audit log: verification with `proto`'s chain verifier over the stored bytes
//! (never re-serialised) and of brokerd's checkpoint against them (`verify`), the same asked
//! of brokerd (`brokerd`), and a listing for a person: one line per record, whatever the
//! record holds (a detail quoting the model, a tool name with a newline) shown by
//! `inert`'s single-line rule, so no record can draw a line that looks like another.

mod brokerd;
pub(crate) mod read;
mod verify;

pub use brokerd::verify as verify_by_brokerd;
pub(crate) use read::lines;
pub use verify::verify;

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use proto::alert::AlertOutcome;
use proto::{AuditEvent, AuditLine, DecisionRecord};

use crate::Error;

pub fn show(dir: &Path, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    lines(dir, |file, line, bytes| {
        if json {
            out.write_all(bytes).map_err(Error::Output)?;
            return out.write_all(b"\n").map_err(Error::Output);
        }
        let text = match AuditLine::from_slice(bytes) {
            Ok(l) => describe(&l),
            Err(_) => format!(
                "{file}:{line}: not a record ({} bytes; a torn line, see the recovery record)",
                bytes.len()
            ),
        };
        writeln!(out, "{}", inert::line(&text)).map_err(Error::Output)
    })?;
    Ok(ExitCode::SUCCESS)
}

fn describe(line: &AuditLine) -> String {
    match line {
        AuditLine::Decision(r) => {
            let what = match &r.decision {
                DecisionRecord::Allowed { grant } => format!("ALLOWED by grant {grant}"),
                DecisionRecord::Approved {
                    grant,
                    approver,
                    post,
                    allowance,
                } => format!(
                    "APPROVED by {approver}{}{} (grant {grant})",
                    post.as_ref()
                        .map(|p| format!(" in post {p}"))
                        .unwrap_or_default(),
                    allowance
                        .as_ref()
                        .map(|a| format!(" through allowance {a}"))
                        .unwrap_or_default()
                ),
                DecisionRecord::Denied {
                    reason,
                    grant,
                    detail,
                } => format!(
                    "DENIED: {}{}{}",
                    reason.as_str(),
                    grant
                        .as_ref()
                        .map(|g| format!(" (grant {g})"))
                        .unwrap_or_default(),
                    detail
                        .as_ref()
                        .map(|d| format!(": {d}"))
                        .unwrap_or_default()
                ),
                DecisionRecord::Failed {
                    grant,
                    failure,
                    detail,
                } => format!(
                    "FAILED before anything was written: {} (grant {grant}): {detail}",
                    failure.as_str()
                ),
            };
            // A write's line proves what it replaces and leaves (docs/broker.md).
            let write = r.write.as_ref().map_or_else(String::new, |w| {
                let hash = |h: Option<proto::Hash32>| h.map_or("none".to_owned(), |h| h.to_hex());
                format!(
                    " write {}: old sha256 {}, new sha256 {}{}",
                    w.path,
                    hash(w.old_sha256),
                    hash(w.new_sha256),
                    w.new_size
                        .map(|n| format!(" ({n} bytes)"))
                        .unwrap_or_default()
                )
            });
            format!(
                "#{} {} session {} call {} {} {} [{}] {what}{write}",
                r.seq,
                r.time,
                r.session,
                r.call.0,
                r.tool,
                serde_json::to_string(r.canonical.as_ref().unwrap_or(&r.arguments))
                    .unwrap_or_default(),
                r.session_taint,
            )
        }
        AuditLine::Event(e) => match e {
            AuditEvent::GrantsLoaded {
                seq,
                time,
                snapshot,
                grants,
                texts,
                since,
                ..
            } => {
                let ids = |m: &std::collections::BTreeMap<String, String>| {
                    m.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
                };
                let texts = match since {
                    Some(s) if texts.is_empty() => format!("; none new or changed since #{s}"),
                    Some(s) => format!("; new or changed since #{s}: {}", ids(texts)),
                    None if texts.is_empty() => String::new(),
                    None => "; every grant's text recorded".to_owned(),
                };
                format!(
                    "#{seq} {time} grants loaded: snapshot {snapshot} ({}){texts}",
                    grants.join(", ")
                )
            }
            AuditEvent::NoteRelabelled {
                seq,
                time,
                by,
                name,
                hash,
                old_class,
                old_untrusted,
                class,
                untrusted,
                ..
            } => {
                let label = |c: &proto::DataClass, u: &bool| {
                    format!("{c}{}", if *u { ", untrusted" } else { "" })
                };
                format!(
                    "#{seq} {time} note {name} relabelled by {by}: {} -> {} (bytes {hash})",
                    label(old_class, old_untrusted),
                    label(class, untrusted)
                )
            }
            AuditEvent::GrantsRefused {
                seq,
                time,
                kept,
                reason,
                ..
            } => format!("#{seq} {time} grants reload REFUSED, snapshot {kept} stays: {reason}"),
            AuditEvent::Recovery {
                seq,
                time,
                file,
                line,
                torn_bytes,
                interrupted,
                ..
            } => format!(
                "#{seq} {time} recovery: {file} line {line} was torn ({torn_bytes} bytes kept){}",
                match interrupted.len() {
                    0 => String::new(),
                    n =>
                        format!(", and so were the {n} recovery lines of starts cut short after it"),
                }
            ),
            AuditEvent::ApprovalRequested {
                seq,
                time,
                approval,
                session,
                call,
                tool,
                grant,
                expires,
                ..
            } => format!(
                "#{seq} {time} approval {approval} asked: session {session} call {} {tool} \
                 (grant {grant}), expires {expires}",
                call.0
            ),
            AuditEvent::ApprovalRefused {
                seq,
                time,
                approval,
                by,
                refusal,
                ..
            } => format!(
                "#{seq} {time} answer to {approval} by {by} REFUSED: {}",
                refusal.as_str()
            ),
            AuditEvent::JobRunStarted {
                seq,
                time,
                job,
                session,
                peer,
                ..
            } => format!("#{seq} {time} job {job} run started: session {session}, runner {peer}"),
            AuditEvent::JobRunEnded {
                seq,
                time,
                job,
                session,
                ended,
                ..
            } => format!(
                "#{seq} {time} job {job} run ended ({}): session {session}",
                ended.as_str()
            ),
            AuditEvent::ToolFailed {
                seq,
                time,
                session,
                call,
                tool,
                failure,
                ..
            } => format!(
                "#{seq} {time} {session} call {} {tool}: FAILED, {failure}",
                call.0
            ),
            AuditEvent::JobNoteWritten {
                seq,
                time,
                job,
                session,
                note,
                class,
                untrusted,
                ..
            } => format!(
                "#{seq} {time} job {job} delivered to note {note}: session {session}, \
                 labelled {class}{}",
                if *untrusted { ", untrusted" } else { "" }
            ),
            AuditEvent::JobRunRefused {
                seq,
                time,
                peer,
                claimed,
                reason,
                ..
            } => format!("#{seq} {time} job run REFUSED: {peer} claimed job {claimed}: {reason}"),
            AuditEvent::AllowanceGranted {
                seq,
                time,
                allowance,
                approval,
                session,
                tool,
                grant,
                scope,
                session_taint,
                untrusted,
                by,
                expires,
                ..
            } => format!(
                "#{seq} {time} allowance {allowance} GRANTED by {by} (approval {approval}): \
                 {} in session {session}, until {expires}, while at {session_taint}{} or below",
                crate::card::words(tool, grant, scope),
                if *untrusted { ", untrusted" } else { "" }
            ),
            AuditEvent::AllowanceRevoked {
                seq,
                time,
                allowance,
                by,
                ..
            } => format!("#{seq} {time} allowance {allowance} REVOKED by {by}"),
            AuditEvent::McpPinned {
                seq,
                time,
                by,
                server,
                hash,
                tools,
                ..
            } => format!(
                "#{seq} {time} MCP server {server} pinned by {by}: {hash}, {} tools",
                tools.len()
            ),
            AuditEvent::McpRefused {
                seq,
                time,
                session,
                call,
                server,
                refused,
                ..
            } => {
                let asked: Vec<String> = refused.iter().map(refused_name).collect();
                format!(
                    "#{seq} {time} {session} call {} MCP server {server} asked the client \
                     (REFUSED): {}",
                    call.0,
                    asked.join(", ")
                )
            }
            AuditEvent::VerifyAlerted {
                seq,
                time,
                by,
                lines,
                outcome,
                ..
            } => format!(
                "#{seq} {time} a failed bxctl verify's {} FAIL line(s) from {by}: {}; first: {}",
                lines.len(),
                match outcome {
                    AlertOutcome::Forwarded => "forwarded to gatewayd",
                    AlertOutcome::Queued => "queued for gatewayd",
                    AlertOutcome::Held => "held back (one forwarded shortly before)",
                    AlertOutcome::NoGateway => "not posted (no gateway)",
                },
                lines.first().map_or("", String::as_str)
            ),
        },
    }
}

/// A refused server request, by its method.
fn refused_name(r: &proto::mcp::McpRefused) -> String {
    use proto::mcp::McpRefused;
    match r {
        McpRefused::Sampling => "sampling/createMessage".into(),
        McpRefused::Elicitation => "elicitation/create".into(),
        McpRefused::Roots => "roots/list".into(),
        McpRefused::Ping => "ping".into(),
        McpRefused::Other { name } => name.clone(),
    }
}
