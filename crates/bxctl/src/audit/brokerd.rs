//! `bxctl audit verify --brokerd`: brokerd verifies its whole chain itself, up to its last
//! line, checks its checkpoint on the way and writes a new one there (docs/decisions.md
//! A8). What the NixOS module's daily timer runs: a failure is in brokerd's journal and on
//! Mattermost when the gateway is on, and this exits 1, so the timer's unit fails too.

use std::io::Write;
use std::process::ExitCode;

use config::Config;
use proto::Message;
use proto::approval::Empty;
use proto::checkpoint::AuditVerified;
use serde_json::json;

use crate::Error;
use crate::admin::call;
use crate::error::unexpected;
use crate::output::print_json;

/// Exit 0 when brokerd found the chain good, 1 when not, 2 when it could not say (it is
/// stopping, or cannot be reached).
pub fn verify(config: &Config, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let verified = match call(config, Message::AuditVerify(Empty {}))? {
        Message::AuditVerified(v) => v,
        other => return Err(unexpected(&other)),
    };
    let code = match &verified {
        AuditVerified::Good { .. } => ExitCode::SUCCESS,
        AuditVerified::Broken { .. } => ExitCode::from(1),
        AuditVerified::Stopped => ExitCode::from(2),
    };
    if json {
        print_json(&json!({ "by": "brokerd", "verified": verified }), out)?;
        return Ok(code);
    }
    let said = match verified {
        AuditVerified::Good {
            records,
            recovered,
            next_seq,
            head,
            checkpoint,
        } => format!(
            "audit chain good (verified by brokerd): {records} records, {recovered} torn lines \
             recovered, next seq {next_seq}, head {head}; {}",
            match checkpoint {
                Some(seq) => format!("checkpoint now at seq {seq}"),
                None => "no new checkpoint (brokerd's log says why)".to_owned(),
            }
        ),
        AuditVerified::Broken { detail } => format!(
            "audit chain BROKEN (verified by brokerd): {detail}; brokerd logged it and, with \
             the gateway on, posted it on Mattermost"
        ),
        AuditVerified::Stopped => {
            "brokerd stopped before its verification ended: nothing concluded".to_owned()
        }
    };
    writeln!(out, "{}", inert::line(&said)).map_err(Error::Output)?;
    Ok(code)
}
