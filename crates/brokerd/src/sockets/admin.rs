//! brokerd's admin side, `broker.sock` in the admin ↔ broker pair directory
//! (`sockets.admin_broker`), reached only by the owner's admin group (`peers.admin`):
//! approvals and answers, the session allowances and their revocation, read-only queries
//! (sessions, grants, status, notes, search, MCP servers), the grants reload, a note's
//! relabel, an MCP server's probe and pin, the flows the grants allow (`flows_query`), a
//! failed `bxctl verify`'s lines for the owner's channel (`verify_alert`), and the full
//! verification of the audit log (`audit_verify`). With the gateway, answers heard
//! on Mattermost come the same way through the link (`gateway`); the socket decides what may
//! be asked, never the peer.

use std::sync::atomic::AtomicBool;

use daemon::accept::Activity;
use daemon::conn::Conn;
use daemon::serve::{self, Policy};
use proto::approval::{ApprovalAnswer, ApprovalListing, GrantsInfo, SessionInfo, SessionQuery};
use proto::{Envelope, Message, Timestamp};

use super::side::{self, Side};
use crate::Fatal;
use crate::broker::Broker;

/// Who may connect: the owner's admin group (`peers.admin`).
pub fn policy(broker: &Broker) -> Policy {
    side::admitting(broker, Side::Admin, vec![broker.config.peers.admin.clone()])
}

/// One admin request; `Ok(false)` closes the connection. `activity` says when brokerd
/// stops, which ends a full verification early.
pub fn handle(
    broker: &Broker,
    conn: &mut Conn,
    env: Envelope,
    who: &str,
    activity: &Activity,
) -> Result<bool, Fatal> {
    let id = env.id;
    let reply = match env.msg {
        // The whole chain, read while brokerd serves; ended early when brokerd stops.
        Message::AuditVerify(_) => verify(broker, &activity.stopping)?,
        msg => match AdminRequest::try_from(msg) {
            Ok(req) => reply(broker, req, who)?,
            Err(msg) => {
                serve::forbid(conn, id, Side::Admin.name(), who, msg.kind());
                return Ok(false);
            }
        },
    };
    Ok(conn.write(&Envelope::last(id, reply)).is_ok())
}

fn verify(broker: &Broker, stop: &AtomicBool) -> Result<Message, Fatal> {
    Ok(Message::AuditVerified(broker.verify_audit(stop)?))
}

/// What the admin side takes; every other kind is refused there like on any socket.
#[derive(Debug)]
pub enum AdminRequest {
    ApprovalList,
    ApprovalAnswer(ApprovalAnswer),
    SessionQuery(SessionQuery),
    GrantsQuery,
    StatusQuery,
    GrantsReload,
    NotesQuery(proto::notes::NotesQuery),
    NoteRelabel(proto::notes::NoteRelabel),
    NotesSearch(proto::notes::NotesSearch),
    AllowanceRevoke(proto::allowance::AllowanceRevoke),
    McpQuery(proto::mcp::McpQuery),
    McpProbe(proto::mcp::McpProbe),
    McpPin(proto::mcp::McpPin),
    FlowsQuery,
    VerifyAlert(proto::alert::VerifyAlert),
}

impl TryFrom<Message> for AdminRequest {
    /// The message, when it is not an admin kind.
    type Error = Message;

    fn try_from(msg: Message) -> Result<Self, Message> {
        Ok(match msg {
            Message::ApprovalList(_) => Self::ApprovalList,
            Message::ApprovalAnswer(answer) => Self::ApprovalAnswer(answer),
            Message::SessionQuery(q) => Self::SessionQuery(q),
            Message::GrantsQuery(_) => Self::GrantsQuery,
            Message::StatusQuery(_) => Self::StatusQuery,
            Message::GrantsReload(_) => Self::GrantsReload,
            Message::NotesQuery(q) => Self::NotesQuery(q),
            Message::NoteRelabel(r) => Self::NoteRelabel(r),
            Message::NotesSearch(q) => Self::NotesSearch(q),
            Message::AllowanceRevoke(r) => Self::AllowanceRevoke(r),
            Message::McpQuery(q) => Self::McpQuery(q),
            Message::McpProbe(p) => Self::McpProbe(p),
            Message::McpPin(p) => Self::McpPin(p),
            Message::FlowsQuery(_) => Self::FlowsQuery,
            Message::VerifyAlert(a) => Self::VerifyAlert(a),
            other => return Err(other),
        })
    }
}

/// Answers one admin request; `who` is the peer as the kernel names it.
fn reply(broker: &Broker, req: AdminRequest, who: &str) -> Result<Message, Fatal> {
    Ok(match req {
        AdminRequest::ApprovalList => {
            Message::ApprovalListing(fit(broker.pending_cards(), broker.allowances()))
        }
        // On the admin socket the owner is the peer's uid and user name.
        AdminRequest::AllowanceRevoke(r) => {
            Message::AllowanceRevoked(broker.revoke(&r.allowance, who.to_owned())?)
        }
        AdminRequest::ApprovalAnswer(answer) => {
            // On the admin socket the approver is the peer's uid and user name; what the
            // message claims (`by`, `post`) is not taken.
            Message::ApprovalAnswered(broker.answer(&answer, who.to_owned(), None)?)
        }
        AdminRequest::SessionQuery(q) => {
            let state = broker.session_state(&q.session);
            Message::SessionInfo(SessionInfo {
                session: state.session,
                taint: state.taint,
                untrusted: state.untrusted,
                untrusted_by: state.untrusted_by,
            })
        }
        AdminRequest::GrantsQuery => {
            let snapshot = broker.snapshot();
            Message::GrantsInfo(GrantsInfo {
                snapshot: snapshot.hash(),
                grants: snapshot.ids(),
            })
        }
        AdminRequest::StatusQuery => Message::BrokerStatus(broker.status()),
        // The reload SIGHUP makes, on the socket only the owner reaches.
        AdminRequest::GrantsReload => Message::GrantsReloaded(broker.reload()?),
        AdminRequest::NotesQuery(q) => match broker.notes.listing(q.name.as_deref()) {
            Ok(listing) => Message::NotesListing(listing),
            Err(e) => refused(&e),
        },
        AdminRequest::NoteRelabel(r) => match broker.relabel_note(&r, who)? {
            Ok(done) => Message::NoteRelabelled(done),
            Err(e) => refused(&e),
        },
        // The owner's search reaches every partition; each hit says its label.
        AdminRequest::NotesSearch(q) => match broker.notes.index().search_all(&q.query) {
            Ok(hits) => Message::NotesFound(proto::notes::NotesFound {
                hits: hits.into_iter().map(|(h, l)| hit(h, l)).collect(),
            }),
            Err(e) => refused(&crate::notes::NoteError::Index(e)),
        },
        AdminRequest::McpQuery(q) => Message::McpListing(broker.mcp_listing(&q)),
        // The server runs in a unit of its own while this connection waits.
        AdminRequest::McpProbe(p) => match broker.mcp_probe(&p.server) {
            Ok(probed) => Message::McpProbed(probed),
            Err(why) => Message::error(proto::ErrorCode::McpRefused, why),
        },
        AdminRequest::McpPin(p) => match broker.mcp_pin(&p, who)? {
            Ok(pinned) => Message::McpPinned(pinned),
            Err(e) => Message::error(proto::ErrorCode::McpRefused, e.to_string()),
        },
        // Audited with the peer as the kernel names it; the lines are shown inert.
        AdminRequest::VerifyAlert(a) => match broker.verify_alert(a, who)? {
            Ok(taken) => Message::VerifyAlerted(taken),
            Err(e) => Message::error(proto::ErrorCode::AlertRefused, e.to_string()),
        },
        // What the grants in force let a hostile model do without asking, by the policy
        // that decides (docs/verify.md).
        AdminRequest::FlowsQuery => {
            let setting = crate::policy::flows::Setting::of(&broker.config);
            match crate::policy::flows::report(&broker.snapshot(), &setting, Timestamp::now()) {
                Ok(report) => Message::FlowsReport(report),
                Err(e) => {
                    daemon::log::error(format_args!("flows: {e}"));
                    Message::error(
                        proto::ErrorCode::Internal,
                        "the flow analysis failed; brokerd's log says why",
                    )
                }
            }
        }
    })
}

/// One hit for the owner: a note by its name, a session record by its session and epoch.
fn hit(h: noteindex::Hit, l: noteindex::Label) -> proto::notes::NoteHit {
    let session = match h.kind {
        noteindex::Kind::Session => proto::SessionId::new(h.name.clone()).ok(),
        noteindex::Kind::Note => None,
    };
    proto::notes::NoteHit {
        kind: match h.kind {
            noteindex::Kind::Note => proto::notes::HitKind::Note,
            noteindex::Kind::Session => proto::notes::HitKind::Session,
        },
        name: session.is_none().then_some(h.name),
        session,
        epoch: h.epoch,
        snippet: h.snippet,
        class: l.class,
        untrusted: l.untrusted,
    }
}

/// A notes request refused: the owner's tool shows the reason (the owner's own note names
/// and brokerd's paths, on the owner's channel).
fn refused(e: &crate::notes::NoteError) -> Message {
    Message::Error(proto::WireError {
        code: proto::ErrorCode::NoteRefused,
        detail: e.to_string(),
    })
}

/// The listing must fit in one frame: cards are taken soonest-expiring first while they fit
/// in a budget well under `MAX_FRAME`; the rest are counted as omitted. The allowances (at
/// most `ask::allowances::MAX_ALLOWANCES` and their pending answers, each a few hundred
/// bytes) fit in the quarter left.
fn fit(
    cards: Vec<proto::approval::ApprovalCard>,
    allowances: Vec<proto::allowance::Allowance>,
) -> ApprovalListing {
    const BUDGET: usize = proto::MAX_FRAME * 3 / 4;
    let mut used = 0;
    let mut listing = ApprovalListing {
        pending: Vec::new(),
        omitted: 0,
        allowances,
    };
    for card in cards {
        let size = serde_json::to_vec(&card).map_or(usize::MAX, |v| v.len());
        if used + size <= BUDGET {
            used += size;
            listing.pending.push(card);
        } else {
            listing.omitted += 1;
        }
    }
    listing
}
