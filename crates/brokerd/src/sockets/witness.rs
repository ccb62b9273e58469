//! brokerd's witness side, `witness.sock` in the pair directory `infer-broker/` shared with
//! inferproxy only (docs/decisions.md W1). The socket decides the kind: `witness_report`,
//! each answered with `witness_recorded` once it is on disk, and `tools_query`, the tools a
//! request may offer (W3). A report
//! that cannot be recorded (a completion reported twice) gets a typed error and the
//! connection serves on; one the store cannot write stops brokerd (exit 70), since nothing
//! unrecorded may be acknowledged.

use daemon::conn::Conn;
use daemon::log;
use daemon::serve::{self, Policy};
use proto::attest::WitnessRecorded;
use proto::{Envelope, ErrorCode, Message};

use super::side::{self, Side};
use crate::Fatal;
use crate::broker::Broker;
use crate::context::witness::NotRecorded;

/// Who may connect (`peers.infer`), and the broker's cap and deadlines.
pub fn policy(broker: &Broker) -> Policy {
    let infer = broker.config.peers.infer.iter();
    side::admitting(broker, Side::Witness, infer.cloned().collect())
}

/// One report of inferproxy's, acknowledged once it is on disk.
pub fn handle(broker: &Broker, conn: &mut Conn, env: Envelope, who: &str) -> Result<bool, Fatal> {
    let id = env.id;
    Ok(match env.msg {
        Message::WitnessReport(report) => {
            let completion = report.completion.clone();
            match broker.context.record(report).map_err(Fatal::Witness)? {
                Ok(()) => {
                    let done = Message::WitnessRecorded(WitnessRecorded { completion });
                    conn.write(&Envelope::last(id, done)).is_ok()
                }
                Err(NotRecorded::Again) => {
                    log::warn(format_args!(
                        "witness socket: {who}: completion {completion} reported again; refused"
                    ));
                    let detail = format!("completion {completion} is recorded already");
                    conn.refuse(id, ErrorCode::BadMessage, &detail);
                    true
                }
            }
        }
        // The hash a witnessable request's tools must have now: boxmaker's tools and the
        // pinned MCP tools (docs/decisions.md W3).
        Message::ToolsQuery(_) => {
            let offered = Message::ToolsOffered(broker.pins.offered());
            conn.write(&Envelope::last(id, offered)).is_ok()
        }
        msg => {
            serve::forbid(conn, id, Side::Witness.name(), who, msg.kind());
            false
        }
    })
}
