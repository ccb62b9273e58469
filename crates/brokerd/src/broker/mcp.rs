//! An allowed MCP call's run: the server started in its own unit by `boxmaker-tool
//! mcp-call`, checked against its pin there; what the server asked of the client (all
//! refused) audited; a server found changed marked, so that its later calls are refused
//! (`mcp_changed`) without starting it, until the owner pins it again. The result's labels
//! are the grant's joined with those of every grant reaching the paths its unit bound; the
//! caller joins the decided-at label (X9), as for any tool.

use proto::mcp::{McpArgs, McpFailure};
use proto::{AuditEvent, AuditLine, ToolFailure, ToolRequest};

use super::Broker;
use crate::Fatal;
use crate::policy::{self, Decision, Labels};
use crate::run::mcp as unit;
use crate::run::runner::RunOutcome;
use daemon::lock;
use grants::Snapshot;

impl Broker {
    pub(super) fn run_mcp(
        &self,
        req: &ToolRequest,
        decision: Decision,
        snapshot: &Snapshot,
        labels: Labels,
        call: &McpArgs,
    ) -> Result<(Labels, RunOutcome), Fatal> {
        let failed = |labels, why: String| Ok((labels, RunOutcome::failed(why)));
        let Some(server) = self.pins.server(&call.server) else {
            return failed(
                labels,
                format!("no MCP server {:?} is configured", call.server),
            );
        };
        let offered = mcp::names::offered(&call.server, &call.tool).unwrap_or_default();
        let Some((_, _, pinned)) = self
            .pins
            .current()
            .lookup(&offered)
            .map(|(s, t, h)| (s.to_owned(), t.name.clone(), h))
        else {
            return failed(labels, format!("{offered} is no longer pinned"));
        };
        if let Some(found) = self.pins.changed(&call.server) {
            return Ok((
                labels,
                RunOutcome::Failed {
                    message: format!(
                        "the MCP server {:?} listed other tools than were pinned at an \
                         earlier call: not started (the owner must pin it again)",
                        call.server
                    ),
                    failure: Some(ToolFailure::Mcp {
                        failure: McpFailure::McpChanged { pinned, found },
                    }),
                },
            ));
        }
        let spec = match unit::build(&self.config, req, &decision, server, pinned) {
            Ok(spec) => spec,
            Err(e) => return failed(labels, e.to_string()),
        };
        // What the unit binds of the grant's paths brings the labels of every grant that
        // reaches them, as a read's bind does.
        let bound: Vec<&str> = spec.read_binds().map(|b| b.target.as_str()).collect();
        let labels = labels.join(policy::bound_labels(snapshot, &bound, true));
        let (outcome, report) = self.runner.run_mcp(decision, &spec);
        if !report.refused.is_empty() {
            lock(&self.audit).append(|seq, time, prev| {
                AuditLine::Event(AuditEvent::McpRefused {
                    seq,
                    time,
                    prev,
                    session: req.session.clone(),
                    call: req.call,
                    server: call.server.clone(),
                    refused: report.refused.clone(),
                })
            })?;
        }
        if let RunOutcome::Failed {
            failure:
                Some(ToolFailure::Mcp {
                    failure: McpFailure::McpChanged { found, .. },
                }),
            ..
        } = &outcome
        {
            self.pins.mark_changed(&call.server, *found);
        }
        Ok((labels, outcome))
    }
}
