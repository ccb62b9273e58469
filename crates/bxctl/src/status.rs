//! `bxctl status` and `bxctl grants reload`, through the two sockets bxctl may use: brokerd's
//! admin side says how brokerd is (audit head, grants, its link to gatewayd), loopd's chat
//! socket how loopd is and what only it reaches (inferproxy, the model's `/health`). bxctl
//! never enters another pair's directory. Under systemd the units' state is added from
//! `systemctl show`.

use std::io::Write;
use std::process::ExitCode;

use config::Config;
use daemon::conn::Conn;
use inert::line;
use proto::Message;
use proto::approval::Empty;
use proto::status::{BrokerStatus, GatewayLink, LoopStatus, ModelHealth, OnDisk, Reach, Reloaded};
use serde_json::{Value, json};

use crate::Error;
use crate::admin::call;
use crate::error::{answered, call_failed, unexpected};
use crate::output::print_json;

/// The units `bxctl status` asks systemd about, when systemd runs.
const UNITS: &[&str] = &[
    "boxmaker-brokerd.service",
    "boxmaker-loopd.service",
    "boxmaker-inferproxy.service",
    "boxmaker-gatewayd.service",
    "boxmaker-brokerd-admin.socket",
    "boxmaker-brokerd-loop.socket",
    "boxmaker-loopd.socket",
    "boxmaker-inferproxy.socket",
    "boxmaker-gatewayd.socket",
];

pub(crate) fn loop_status(config: &Config) -> Result<LoopStatus, Error> {
    let path = config.sockets.chat_loop_sock();
    let mut conn = Conn::connect(&path).map_err(|source| Error::Reach {
        server: "loopd",
        path,
        error: source,
    })?;
    let reply = conn
        .call(1, Message::StatusQuery(Empty {}), |_| {})
        .map_err(call_failed("loopd", "chat"))?;
    match answered("loopd", reply.msg)? {
        Message::LoopStatus(s) => Ok(s),
        other => Err(unexpected(&other)),
    }
}

pub(crate) fn broker_status(config: &Config) -> Result<BrokerStatus, Error> {
    match call(config, Message::StatusQuery(Empty {}))? {
        Message::BrokerStatus(s) => Ok(s),
        other => Err(unexpected(&other)),
    }
}

/// Exit 0 when brokerd and loopd answer and the model is healthy, 1 when any is not.
pub fn status(config: &Config, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let broker = broker_status(config);
    let looped = loop_status(config);
    let units = units();
    let good = broker.is_ok() && matches!(&looped, Ok(l) if l.model == ModelHealth::Ok);
    if json {
        let side = |r: Result<Value, &Error>| match r {
            Ok(status) => json!({ "reachable": true, "status": status }),
            Err(e) => json!({ "reachable": false, "error": e.to_string() }),
        };
        let value = json!({
            "good": good,
            "brokerd": side(broker.as_ref().map(|s| json!(s))),
            "loopd": side(looped.as_ref().map(|s| json!(s))),
            "units": units.iter().map(|u| json!({"unit": u.0, "active": u.1, "sub": u.2})).collect::<Vec<_>>(),
        });
        print_json(&value, out)?;
    } else {
        let text = match &broker {
            Ok(b) => broker_text(b),
            Err(e) => format!("brokerd     NOT REACHABLE: {e}\n"),
        } + &match &looped {
            Ok(l) => loop_text(l),
            Err(e) => format!("loopd       NOT REACHABLE: {e}\n"),
        };
        write!(out, "{text}").map_err(Error::Output)?;
        for (unit, active, sub) in &units {
            writeln!(out, "unit        {unit}: {active} ({sub})").map_err(Error::Output)?;
        }
    }
    Ok(if good {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn broker_text(b: &BrokerStatus) -> String {
    let g = &b.grants;
    let mut s = format!(
        "brokerd     reachable, ready, version {}\n\
         approvals   {} waiting{}\n\
         audit       next seq {}, head {}\n\
         grants      snapshot {} loaded ({})\n",
        line(&b.version),
        b.pending_approvals,
        if b.pending_approvals > 0 {
            " (`bxctl approvals`)"
        } else {
            ""
        },
        b.audit_next_seq,
        b.audit_head,
        g.loaded,
        line(&g.grants.join(", ")),
    );
    s += &match &g.on_disk {
        OnDisk::Loads { snapshot } if *snapshot == g.loaded => {
            "grants      on disk: the same\n".to_owned()
        }
        OnDisk::Loads { snapshot } => format!(
            "grants      on disk: DIFFERENT (snapshot {snapshot}): `bxctl grants reload` loads them\n"
        ),
        OnDisk::Refused { reason } => {
            format!("grants      on disk: DO NOT LOAD: {}\n", line(reason))
        }
    };
    s += &match &g.last_reload {
        None => String::new(),
        Some(Reloaded::Loaded { time, snapshot, .. }) => {
            format!("grants      last reload {time}: loaded snapshot {snapshot}\n")
        }
        Some(Reloaded::Refused { time, kept, reason }) => format!(
            "grants      last reload {time}: FAILED, snapshot {kept} stays: {}\n",
            line(reason)
        ),
    };
    s += &match &b.gateway {
        None => "gatewayd    not configured\n".to_owned(),
        Some(GatewayLink::Linked { since, version }) => format!(
            "gatewayd    linked since {since}{}\n",
            stated(version.as_deref())
        ),
        Some(GatewayLink::Down { since, reason }) => {
            format!("gatewayd    NOT LINKED since {since}: {}\n", line(reason))
        }
    };
    s
}

/// `, version V` for a version its role stated (shown inert), nothing otherwise.
fn stated(version: Option<&str>) -> String {
    version.map_or_else(String::new, |v| format!(", version {}", line(v)))
}

fn loop_text(l: &LoopStatus) -> String {
    format!(
        "loopd       reachable, ready, version {}\n\
         inferproxy  {}\n\
         model       {}\n",
        line(&l.version),
        match &l.inferproxy {
            Reach::Reachable { version } => {
                format!("reachable (from loopd){}", stated(version.as_deref()))
            }
            Reach::Unreachable { reason } => format!("NOT REACHABLE from loopd: {}", line(reason)),
        },
        model_text(l)
    )
}

/// The model as loopd sees it: `ok` with the model the server names, `loading`, or why not.
pub(crate) fn model_text(l: &LoopStatus) -> String {
    match &l.model {
        ModelHealth::Ok => match &l.model_path {
            Some(path) => format!("ok: {}", line(path)),
            None => "ok".to_owned(),
        },
        ModelHealth::Loading => "loading".to_owned(),
        ModelHealth::Unhealthy { reason } => format!("NOT HEALTHY: {}", line(reason)),
    }
}

/// The boxmaker units systemd knows: (unit, active state, sub state). Empty when systemd
/// does not run here or `systemctl` is not installed (as under `bxctl dev`).
fn units() -> Vec<(String, String, String)> {
    if !std::path::Path::new("/run/systemd/system").is_dir() {
        return Vec::new();
    }
    let out = std::process::Command::new("systemctl")
        .args(["show", "--property=Id,LoadState,ActiveState,SubState"])
        .args(UNITS)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => parse_show(&String::from_utf8_lossy(&o.stdout)),
        _ => Vec::new(),
    }
}

/// `systemctl show`'s blocks (one per unit, blank-line separated), loaded units only.
fn parse_show(text: &str) -> Vec<(String, String, String)> {
    text.split("\n\n")
        .filter_map(|block| {
            let get = |key: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                    .map(str::to_owned)
            };
            (get("LoadState")? == "loaded").then_some(())?;
            Some((get("Id")?, get("ActiveState")?, get("SubState")?))
        })
        .collect()
}

/// `bxctl grants reload`: exit 0 when the new grants are in force, 1 when brokerd refused
/// them (the old snapshot stays).
pub fn reload(config: &Config, json: bool, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let outcome = match call(config, Message::GrantsReload(Empty {}))? {
        Message::GrantsReloaded(r) => r,
        other => return Err(unexpected(&other)),
    };
    if json {
        print_json(&outcome, out)?;
    } else {
        match &outcome {
            Reloaded::Loaded {
                snapshot, grants, ..
            } => writeln!(
                out,
                "grants reloaded: snapshot {snapshot} ({} grants: {})",
                grants.len(),
                line(&grants.join(", "))
            ),
            Reloaded::Refused { kept, reason, .. } => writeln!(
                out,
                "grants reload REFUSED, snapshot {kept} stays in force: {}\n\
                 help: fix the file named, check it with `bxctl grants check`, then reload again",
                line(reason)
            ),
        }
        .map_err(Error::Output)?;
    }
    Ok(match outcome {
        Reloaded::Loaded { .. } => ExitCode::SUCCESS,
        Reloaded::Refused { .. } => ExitCode::from(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemctl_show_blocks_give_the_loaded_units() {
        let text = "Id=boxmaker-brokerd.service\nLoadState=loaded\nActiveState=active\n\
                    SubState=running\n\nId=boxmaker-gatewayd.service\nLoadState=not-found\n\
                    ActiveState=inactive\nSubState=dead\n\nId=boxmaker-loopd.socket\n\
                    LoadState=loaded\nActiveState=active\nSubState=listening\n";
        assert_eq!(
            parse_show(text),
            [
                (
                    "boxmaker-brokerd.service".to_owned(),
                    "active".to_owned(),
                    "running".to_owned()
                ),
                (
                    "boxmaker-loopd.socket".to_owned(),
                    "active".to_owned(),
                    "listening".to_owned()
                ),
            ]
        );
    }
}
