//! The `flows` part: what the grants brokerd decides by let a hostile model do without
//! asking (issue 27 point 2). brokerd computes them with its own policy (`flows_query` on
//! its admin side); bxctl only shows them: a `FAIL` for each flow of secret data out, a
//! `warn` for each of private data out and each write untrusted content can drive, an `ok`
//! for a severity with none.

use std::path::Path;

use config::Config;
use proto::Message;
use proto::approval::Empty;
use proto::flows::{Flow, FlowsReport, Severity};

use super::access::{self, Side};
use super::report::{Check, Level, Part};

const P: Part = Part::Flows;

pub fn checks(config: &Config) -> Vec<Check> {
    match access::call(config, Side::Admin, Message::FlowsQuery(Empty {})) {
        Ok(Message::FlowsReport(report)) => of_report(&report, &config.grants),
        Ok(Message::Error(e)) => vec![
            Check::fail(
                P,
                "flows",
                format!("brokerd could not analyse the grants: {}", e.detail),
            )
            .help("brokerd's log says why (`journalctl -u boxmaker-brokerd`)"),
        ],
        Ok(other) => vec![Check::fail(
            P,
            "flows",
            format!("brokerd answered {}", other.kind()),
        )],
        Err(t) => vec![access::judged(P, "flows", t)],
    }
}

/// The checks of a report: one line per flow, then an `ok` for each severity with none.
pub fn of_report(report: &FlowsReport, grants: &Path) -> Vec<Check> {
    let mut checks: Vec<Check> = report.flows.iter().map(|f| of_flow(f, grants)).collect();
    for (severity, what) in [
        (
            Severity::SecretOut,
            "a hijacked model send anything secret out of the box",
        ),
        (
            Severity::PrivateOut,
            "a hijacked model send anything private out of the box",
        ),
        (
            Severity::UntrustedWrite,
            "content that may carry injected text change your files",
        ),
    ] {
        if !report.flows.iter().any(|f| f.severity == severity) {
            checks.push(Check::ok(
                P,
                severity.as_str(),
                format!(
                    "no grant lets {what} without asking you ({} grant(s), snapshot {})",
                    report.grants.len(),
                    short(&report.snapshot)
                ),
            ));
        }
    }
    checks
}

fn short(h: &proto::Hash32) -> String {
    h.to_string().chars().take(12).collect::<String>() + "…"
}

fn of_flow(f: &Flow, grants: &Path) -> Check {
    let level = match f.severity {
        Severity::SecretOut => Level::Fail,
        Severity::PrivateOut | Severity::UntrustedWrite => Level::Warn,
    };
    // The grant the line says to change: the sink's, or for a job's delivery the source's.
    let grant = f
        .sink
        .grant
        .as_deref()
        .or(f.source.grant.as_deref())
        .unwrap_or_default();
    let help = match &f.job {
        Some(job) if f.sink.grant.is_none() => format!(
            "change job {job}'s deliver (services.boxmaker.jobs.{job}.deliver) or grant \
             {grant} as the line says; `bxctl verify flows` shows what is left"
        ),
        _ => format!(
            "change {}/{grant}.toml as the line says (on NixOS services.boxmaker.grants.{grant}), \
             check it with `bxctl grants check`, then `bxctl grants reload`; `bxctl verify \
             flows` shows what is left",
            grants.display()
        ),
    };
    Check::new(P, f.severity.as_str(), level, f.text.clone()).help(help)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::flows::Step;

    fn flow(severity: Severity, job: Option<&str>, sink: Option<&str>) -> Flow {
        Flow {
            severity,
            job: job.map(|j| proto::JobName::new(j).expect("job")),
            source: Step {
                grant: Some("notes-read".into()),
                tool: "read_file".into(),
                what: "/srv/notes".into(),
            },
            class: proto::DataClass::Private,
            untrusted: false,
            sink: Step {
                grant: sink.map(str::to_owned),
                tool: "http_fetch".into(),
                what: "api.example.org".into(),
            },
            text: "a hijacked model can …".into(),
        }
    }

    /// Secret out fails, private out warns, and a severity with no flow is an `ok` line.
    #[test]
    fn secret_out_fails_private_out_warns() {
        let grants = Path::new("/etc/boxmaker/grants");
        let report = FlowsReport {
            snapshot: proto::Hash32::digest(b"x"),
            grants: vec!["notes-read".into(), "web".into()],
            flows: vec![
                flow(Severity::SecretOut, None, Some("web")),
                flow(Severity::SecretOut, Some("brief"), None),
            ],
            sources: Vec::new(),
        };
        let checks = of_report(&report, grants);
        let levels: Vec<(&str, Level)> =
            checks.iter().map(|c| (c.check.as_str(), c.level)).collect();
        assert_eq!(
            levels,
            [
                ("secret_out", Level::Fail),
                ("secret_out", Level::Fail),
                ("private_out", Level::Ok),
                ("untrusted_write", Level::Ok),
            ]
        );
        assert!(
            checks[0]
                .help
                .as_deref()
                .unwrap_or("")
                .contains("grants.web")
        );
        assert!(
            checks[1]
                .help
                .as_deref()
                .unwrap_or("")
                .contains("jobs.brief.deliver")
        );
        let report = FlowsReport {
            flows: vec![
                flow(Severity::PrivateOut, None, Some("web")),
                flow(Severity::UntrustedWrite, None, Some("www-write")),
            ],
            ..report
        };
        let levels: Vec<Level> = of_report(&report, grants).iter().map(|c| c.level).collect();
        assert_eq!(levels, [Level::Warn, Level::Warn, Level::Ok]);
    }
}
