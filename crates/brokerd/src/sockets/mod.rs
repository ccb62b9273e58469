//! Every socket brokerd has: its listening sides, in one pattern, and its link to gatewayd.
//!
//! The listening sides, where the socket a connection arrived on decides what it may ask,
//! are all bound and served in one way ([`listen`]): `loopd` (tool requests), `admin` (the
//! owner), `chat` (the channels' owner messages), `witness` (inferproxy's reports), `jobs`
//! (the job runners), each saying who may connect (`policy`) and what one request may ask
//! (`handle`). The link to gatewayd's socket, where brokerd is the client, is `gateway`. A
//! new socket is a module here and a row of [`Side`]; what a request then does belongs to
//! the zone that owns it (a new tool needs no socket: it comes as a tool request).

pub mod admin;
mod chat;
pub mod gateway;
mod jobs;
mod loopd;
mod side;
mod witness;

pub use side::Side;

use std::sync::Arc;

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::serve::Policy;
use daemon::service::{Halt, Service};

use crate::Error;
use crate::broker::Broker;

/// How a side serves one admitted connection (on a thread of its own).
type Serve = fn(&Broker, &mut Conn, &str, &Activity, &Halt);

/// Binds every side the configuration enables (or takes the one systemd passed), each
/// serving every admitted connection on a thread of its own.
pub fn listen(service: &mut Service, broker: &Arc<Broker>, halt: &Halt) -> Result<(), Error> {
    for side in Side::ALL {
        if !side.enabled(&broker.config) {
            continue;
        }
        let (b, activity, halt, serve) = (
            broker.clone(),
            service.activity(),
            halt.clone(),
            serve(side),
        );
        let path = side.path(&broker.config);
        service
            .framed(
                &path,
                &policy(side, broker),
                move |mut conn: Conn, who: &str| {
                    serve(&b, &mut conn, who, &activity, &halt);
                },
            )
            .map_err(|error| Error::Listen {
                socket: side.name(),
                error,
            })?;
    }
    Ok(())
}

/// Who may connect to `side`.
fn policy(side: Side, broker: &Broker) -> Policy {
    match side {
        Side::Loop => loopd::policy(broker),
        Side::Admin => admin::policy(broker),
        Side::Chat => chat::policy(broker),
        Side::Witness => witness::policy(broker),
        Side::Jobs => jobs::policy(broker),
    }
}

/// How `side` serves one admitted connection.
fn serve(side: Side) -> Serve {
    match side {
        Side::Loop => |b, conn, who, activity, halt| {
            side::requests(Side::Loop, conn, who, activity, halt, |conn, env| {
                loopd::handle(b, conn, env, who)
            });
        },
        Side::Admin => |b, conn, who, activity, halt| {
            side::requests(Side::Admin, conn, who, activity, halt, |conn, env| {
                admin::handle(b, conn, env, who, activity)
            });
        },
        Side::Chat => |b, conn, who, activity, halt| {
            side::requests(Side::Chat, conn, who, activity, halt, |conn, env| {
                chat::handle(b, conn, env, who)
            });
        },
        Side::Witness => |b, conn, who, activity, halt| {
            side::requests(Side::Witness, conn, who, activity, halt, |conn, env| {
                witness::handle(b, conn, env, who)
            });
        },
        Side::Jobs => jobs::serve,
    }
}
