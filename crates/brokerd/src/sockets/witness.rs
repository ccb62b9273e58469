//! brokerd's witness side, `witness.sock` in the pair directory `infer-broker/` shared with
//! inferproxy only (docs/decisions.md W1). The socket decides the kind: only
//! `witness_report`, each answered with `witness_recorded` once it is on disk. A report
//! that cannot be recorded (a completion reported twice) gets a typed error and the
//! connection serves on; one the store cannot write stops brokerd (exit 70), since nothing
//! unrecorded may be acknowledged.

use std::convert::Infallible;

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::log;
use daemon::serve::{self, Policy};
use daemon::service::Halt;
use proto::attest::WitnessRecorded;
use proto::{Envelope, ErrorCode, Message};

use crate::Fatal;
use crate::broker::Broker;
use crate::context::witness::NotRecorded;

/// The socket's name in logs and refusals.
pub const NAME: &str = "witness";

/// Who may connect (`peers.infer`), and the broker's cap and deadlines.
pub fn policy(broker: &Broker) -> Policy {
    let c = &broker.config;
    Policy {
        name: NAME,
        peers: c.peers.infer.iter().cloned().collect(),
        max_connections: c.broker.max_connections,
        idle: c.broker.idle_timeout,
        frame: c.broker.frame_deadline,
    }
}

/// Serves each admitted inferproxy connection (`start::framed` calls it for each).
pub fn serve(broker: &Broker, mut conn: Conn, who: &str, activity: &Activity, halt: &Halt) {
    let served: Result<(), Infallible> = serve::requests(
        &mut conn,
        NAME,
        who,
        activity,
        |conn, env| {
            let id = env.id;
            Ok(match env.msg {
                Message::WitnessReport(report) => {
                    let completion = report.completion.clone();
                    match broker.witness.record(report) {
                        Ok(Ok(())) => {
                            let done = Message::WitnessRecorded(WitnessRecorded { completion });
                            conn.write(&Envelope::last(id, done)).is_ok()
                        }
                        Ok(Err(NotRecorded::Again)) => {
                            log::warn(format_args!(
                                "witness socket: {who}: completion {completion} reported again; refused"
                            ));
                            let detail = format!("completion {completion} is recorded already");
                            conn.refuse(id, ErrorCode::BadMessage, &detail);
                            true
                        }
                        Err(e) => {
                            halt.stop("a report on the witness socket", Fatal::Witness(e));
                            false
                        }
                    }
                }
                msg => {
                    serve::forbid(conn, id, NAME, who, msg.kind());
                    false
                }
            })
        },
    );
    let Ok(()) = served;
}
