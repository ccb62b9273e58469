//! The `state` part: what brokerd holds is what it should be.
//!
//! - `grants`: the grants directory loads, to the snapshot brokerd decides by (brokerd's
//!   status compares them, as `bxctl status` shows);
//! - `approvals`: no approval waits past its expiry (brokerd withdraws each at its expiry; one
//!   still listed after it is a fault);
//! - `audit`: the whole chain verifies and brokerd's checkpoint agrees with it: `bxctl audit
//!   verify` itself when this user can read the audit directory (root, `bxctl dev`), else
//!   brokerd's own verification of its whole chain (`bxctl audit verify --brokerd`, which
//!   moves the checkpoint, and on a failure logs it and posts it on Mattermost).
//!
//! The grants and approvals are asked first: under systemd the first connection starts
//! brokerd, whose start writes the audit log's first lines on a fresh host.

use config::Config;
use proto::approval::{ApprovalCard, Empty};
use proto::checkpoint::AuditVerified;
use proto::status::OnDisk;
use proto::{Message, Timestamp};
use serde_json::Value;

use super::access::{self, Side};
use super::report::{Check, Part};

/// How long past its expiry an approval may still be listed: brokerd's waiter withdraws it
/// when its wait times out, which may be a moment after the expiry itself.
const GRACE_MS: u64 = 5_000;

const P: Part = Part::State;

pub fn checks(config: &Config) -> Vec<Check> {
    vec![grants(config), approvals(config), audit(config)]
}

fn short(h: &proto::Hash32) -> String {
    h.to_string().chars().take(12).collect::<String>() + "…"
}

fn grants(config: &Config) -> Check {
    let status = match access::call(config, Side::Admin, Message::StatusQuery(Empty {})) {
        Ok(Message::BrokerStatus(s)) => s,
        Ok(other) => return Check::fail(P, "grants", format!("brokerd answered {}", other.kind())),
        Err(t) => return access::judged(P, "grants", t),
    };
    let g = &status.grants;
    match &g.on_disk {
        OnDisk::Loads { snapshot } if *snapshot == g.loaded => Check::ok(
            P,
            "grants",
            format!(
                "the grants on disk are the ones brokerd decides by (snapshot {}: {})",
                short(&g.loaded),
                if g.grants.is_empty() {
                    "no grant".to_owned()
                } else {
                    g.grants.join(", ")
                }
            ),
        ),
        OnDisk::Loads { snapshot } => Check::fail(
            P,
            "grants",
            format!(
                "the grants on disk (snapshot {}) are not the ones brokerd decides by \
                 (snapshot {})",
                short(snapshot),
                short(&g.loaded)
            ),
        )
        .help(
            "`bxctl grants check` shows what the files hold; `bxctl grants reload` makes \
             brokerd decide by them (on NixOS a `nixos-rebuild switch` reloads it)",
        ),
        OnDisk::Refused { reason } => Check::fail(
            P,
            "grants",
            format!(
                "the grants on disk do not load ({reason}); brokerd decides by snapshot {}",
                short(&g.loaded)
            ),
        )
        .help("fix the file named, check it with `bxctl grants check`, then `bxctl grants reload`"),
    }
}

/// The cards listed past their expiry (with [`GRACE_MS`]) at `now`.
pub fn overdue(cards: &[ApprovalCard], now: Timestamp) -> Vec<&ApprovalCard> {
    cards
        .iter()
        .filter(|c| c.expires.as_millis().saturating_add(GRACE_MS) < now.as_millis())
        .collect()
}

fn approvals(config: &Config) -> Check {
    let listing = match access::call(config, Side::Admin, Message::ApprovalList(Empty {})) {
        Ok(Message::ApprovalListing(l)) => l,
        Ok(other) => {
            return Check::fail(P, "approvals", format!("brokerd answered {}", other.kind()));
        }
        Err(t) => return access::judged(P, "approvals", t),
    };
    let late = overdue(&listing.pending, Timestamp::now());
    if let Some(first) = late.first() {
        return Check::fail(
            P,
            "approvals",
            format!(
                "{} approval(s) still wait past their expiry, the first {} ({} call {} of \
                 session {}, expired {})",
                late.len(),
                first.approval,
                first.tool,
                first.call.0,
                first.session,
                first.expires
            ),
        )
        .help(
            "brokerd withdraws each approval at its expiry: one still waiting is a fault. Its \
             log says more (`journalctl -u boxmaker-brokerd`); a restart of brokerd denies \
             what waits",
        );
    }
    let said = format!(
        "{} approval(s) waiting, none past its expiry",
        listing.pending.len()
    );
    if listing.omitted > 0 {
        return Check::warn(
            P,
            "approvals",
            format!(
                "{said} among the {} listed; {} more were left out of the listing",
                listing.pending.len(),
                listing.omitted
            ),
        )
        .help("answer some (`bxctl approvals`), then verify again");
    }
    Check::ok(P, "approvals", said)
}

fn audit(config: &Config) -> Check {
    let dir = config.audit_dir();
    match std::fs::read_dir(&dir) {
        Ok(_) => offline(&dir),
        // Under systemd the audit directory is brokerd's alone: ask brokerd.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => by_brokerd(config),
        Err(e) => Check::fail(P, "audit", format!("{}: {e}", dir.display())).help(
            "brokerd writes its audit log under `audit/` in the configured home from its \
             first start; is this the configuration of the running stack?",
        ),
    }
}

/// `bxctl audit verify`'s own verdict, read from its JSON.
fn offline(dir: &std::path::Path) -> Check {
    let mut buf = Vec::new();
    if let Err(e) = crate::audit::verify(dir, true, &mut buf) {
        return match &e {
            crate::Error::File { error: source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                Check::unreached(P, "audit", format!("not checked: {e}"))
                    .help("run `sudo bxctl verify`: the audit log is brokerd's alone")
            }
            other => Check::fail(P, "audit", other.to_string()),
        };
    }
    let v: Value = serde_json::from_slice(&buf).unwrap_or(Value::Null);
    judge_offline(&v, dir)
}

/// The check `bxctl audit verify --json`'s answer `v` makes.
fn judge_offline(v: &Value, dir: &std::path::Path) -> Check {
    let cp = &v["checkpoint"];
    let remedy = format!(
        "brokerd does not start on it; once the chain is good (`bxctl audit verify`), remove \
         {} and brokerd verifies the whole log at its next start",
        dir.join(proto::checkpoint::FILE).display()
    );
    if v["good"] == true {
        let checkpoint = if cp.is_null() {
            "no checkpoint yet".to_owned()
        } else {
            format!("checkpoint at seq {} agrees", cp["seq"])
        };
        return Check::ok(
            P,
            "audit",
            format!(
                "audit chain good: {} records, next seq {}; {checkpoint}",
                v["records"], v["next_seq"]
            ),
        );
    }
    if v["error"] == "no audit log" {
        return Check::fail(P, "audit", format!("no audit log in {}", dir.display())).help(
            "brokerd writes its first lines when it starts; is brokerd running with this \
             configuration?",
        );
    }
    if cp["agrees"] == false && v["records"].is_number() {
        return Check::fail(
            P,
            "audit",
            format!(
                "the chain is good but {} DISAGREES with it: {}",
                match cp["seq"].as_u64() {
                    Some(seq) => format!("the checkpoint at seq {seq}"),
                    None => "the checkpoint".to_owned(),
                },
                cp["error"].as_str().unwrap_or("unreadable")
            ),
        )
        .help(remedy);
    }
    let at = match (v["file"].as_str(), v["line"].as_u64()) {
        (Some(f), Some(l)) => format!(" ({f} line {l})"),
        _ => String::new(),
    };
    Check::fail(
        P,
        "audit",
        format!(
            "audit chain BROKEN{at}: {}",
            v["error"].as_str().unwrap_or("unknown")
        ),
    )
    .help(
        "`sudo bxctl audit verify` names the first bad line; the log is evidence: keep a copy \
         before anything else (docs/broker.md)",
    )
}

fn by_brokerd(config: &Config) -> Check {
    let verified = match access::call(config, Side::Admin, Message::AuditVerify(Empty {})) {
        Ok(Message::AuditVerified(v)) => v,
        Ok(other) => return Check::fail(P, "audit", format!("brokerd answered {}", other.kind())),
        Err(t) => return access::judged(P, "audit", t),
    };
    match verified {
        AuditVerified::Good {
            records,
            next_seq,
            checkpoint,
            ..
        } => Check::ok(
            P,
            "audit",
            format!(
                "audit chain good (verified by brokerd): {records} records, next seq \
                 {next_seq}; {}",
                match checkpoint {
                    Some(seq) => format!("its checkpoint agreed and is now at seq {seq}"),
                    None => "its checkpoint agreed; no new one was written (brokerd's log \
                             says why)"
                        .to_owned(),
                }
            ),
        ),
        AuditVerified::Broken { detail } => Check::fail(
            P,
            "audit",
            format!("audit chain BROKEN (verified by brokerd): {detail}"),
        )
        .help(
            "brokerd logged it and, with the gateway on, posted it on Mattermost; `sudo bxctl \
             audit verify` names the first bad line (docs/broker.md)",
        ),
        AuditVerified::Stopped => Check::warn(
            P,
            "audit",
            "not concluded: brokerd stopped before its verification ended",
        )
        .help("verify again once brokerd runs"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(expires: u64) -> ApprovalCard {
        let mut c = ApprovalCard {
            approval: "a".repeat(32),
            binding: proto::Hash32::digest(b""),
            session: proto::SessionId::new("s-20261201-0123456789abcdef").expect("session"),
            call: proto::CallId(1),
            tool: "list_dir".into(),
            arguments: "{}".into(),
            grant: "g".into(),
            session_taint: proto::DataClass::Public,
            untrusted: false,
            untrusted_by: Vec::new(),
            expires: Timestamp::from_millis(expires).expect("time"),
            session_offer: None,
            write: None,
        };
        c.binding = c.bound();
        c
    }

    /// brokerd's listing is judged at the moment it is read: a card within the grace after
    /// its expiry is brokerd withdrawing it; one later is a fault.
    #[test]
    fn an_approval_is_overdue_only_past_its_expiry_and_the_grace() {
        let now = Timestamp::from_millis(1_800_000_000_000).expect("now");
        let cards = [
            card(1_800_000_060_000),
            card(1_800_000_000_000 - GRACE_MS),
            card(1_800_000_000_000 - GRACE_MS - 1),
        ];
        let late = overdue(&cards, now);
        assert_eq!(late.len(), 1);
        assert_eq!(
            late[0].expires.as_millis(),
            1_800_000_000_000 - GRACE_MS - 1
        );
    }

    #[test]
    fn audit_verify_json_becomes_one_check_each_way() {
        let dir = std::path::Path::new("/var/lib/private/boxmaker/audit");
        let good = serde_json::json!({"good": true, "records": 6, "next_seq": 6,
            "checkpoint": {"seq": 5, "file": "f", "line": 6, "agrees": true}});
        let c = judge_offline(&good, dir);
        assert_eq!(c.level, super::super::report::Level::Ok);
        assert!(c.said.ends_with("checkpoint at seq 5 agrees"), "{}", c.said);
        let broken = serde_json::json!({"good": false, "error": "line 3: prev mismatch",
            "file": "2026-12-01.jsonl", "line": 3, "checkpoint": {"agrees": null}});
        let c = judge_offline(&broken, dir);
        assert_eq!(c.level, super::super::report::Level::Fail);
        assert!(
            c.said
                .starts_with("audit chain BROKEN (2026-12-01.jsonl line 3)"),
            "{}",
            c.said
        );
        let disagrees = serde_json::json!({"good": false, "records": 6, "next_seq": 6,
            "checkpoint": {"seq": 5, "agrees": false, "error": "its line hashes to x"}});
        let c = judge_offline(&disagrees, dir);
        assert!(
            c.said.contains("DISAGREES with it: its line hashes to x"),
            "{}",
            c.said
        );
        assert!(
            c.help
                .as_deref()
                .is_some_and(|h| h.contains("checkpoint.json"))
        );
        let none = serde_json::json!({"good": false, "error": "no audit log"});
        assert!(
            judge_offline(&none, dir)
                .said
                .starts_with("no audit log in")
        );
    }
}
