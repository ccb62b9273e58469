//! An MCP session through either runner: `boxmaker-tool mcp-call` for a call a decision
//! allows, `boxmaker-tool mcp-pin` for the owner's look at a server's tools. The process
//! handling is the same as any tool's ([`super::child`]); only the answer is read with the
//! MCP mode's type, its typed failure kept (`ToolFailure::Mcp`) and its report (what the
//! server asked and was refused) handed back for the audit.

use std::cell::RefCell;

use proto::ToolFailure;
use proto::mcp::{McpArgs, McpCallOutput, McpFailure, McpPinOutput, McpReport, McpServer};
use proto::toolrun::ToolOutput;
use proto::tools::ToolArgs;

use super::Runner;
use super::spec::{McpInput, RunOutcome, RunSpec};
use crate::policy::Decision;

const ADMITTED: &str = "internal: refusing an MCP run whose remote server's addresses are not \
                        the unit's";

/// A remote server's addresses are all the unit's own (the tool connects to these, the
/// unit admits those: they must agree); a started server has none.
fn admitted(server: &McpServer, spec: &RunSpec) -> bool {
    server.remote.as_ref().is_none_or(|remote| {
        remote.addresses.iter().all(|a| {
            a.parse::<std::net::SocketAddr>()
                .is_ok_and(|a| spec.addresses.contains(&a.ip()))
        })
    })
}

/// What the MCP mode said besides its content: the failure's kind, the report.
type Seen = RefCell<Option<(Option<McpFailure>, McpReport)>>;

impl Runner {
    /// Runs one MCP call. Like [`Runner::run`], it takes the decision by value and runs
    /// only what it authorises: the spec's call, and an `mcp-call` input naming exactly that
    /// server, tool and arguments. The report is the server's refused requests.
    pub fn run_mcp(&self, decision: Decision, spec: &RunSpec) -> (RunOutcome, McpReport) {
        let refuse = |why: &str| (RunOutcome::failed(why.to_owned()), McpReport::default());
        let Some(McpInput::Call(inv)) = spec.mcp.as_ref().map(|m| &m.input) else {
            return refuse("internal: an MCP run without an mcp-call input");
        };
        let call = ToolArgs::Mcp(McpArgs {
            arguments: inv.arguments.clone(),
            server: inv.server.name.clone(),
            tool: inv.tool.clone(),
        });
        // Never a hands stage too: its unit would get the stage's user and binds.
        if spec.stage.is_some() || spec.invocation.call != call || !decision.authorises(&call) {
            return refuse(
                "internal: refusing to run an MCP call its decision does not allow (not an \
                 allow, or another server, tool or arguments)",
            );
        }
        if !admitted(&inv.server, spec) {
            return refuse(ADMITTED);
        }
        let seen: Seen = RefCell::new(None);
        let decode = |stdout: &[u8]| {
            let output: McpCallOutput =
                serde_json::from_slice(stdout).map_err(|e| e.to_string())?;
            Ok(match output {
                McpCallOutput::Ok {
                    content,
                    truncated,
                    report,
                } => {
                    *seen.borrow_mut() = Some((None, report));
                    ToolOutput::Ok { content, truncated }
                }
                McpCallOutput::Failed {
                    failure,
                    message,
                    report,
                } => {
                    *seen.borrow_mut() = Some((Some(failure), report));
                    ToolOutput::Failed { message }
                }
            })
        };
        let outcome = self.execute_with(spec, &decode);
        let (failure, report) = seen.into_inner().unwrap_or_default();
        let outcome = match (outcome, failure) {
            (RunOutcome::Failed { message, .. }, Some(failure)) => RunOutcome::Failed {
                message,
                failure: Some(ToolFailure::Mcp { failure }),
            },
            (outcome, _) => outcome,
        };
        (outcome, report)
    }

    /// Lists a server's tools in a unit of its own, for the owner (`bxctl mcp pin`): no
    /// decision, since nothing is called and the answer goes to the owner only. A run
    /// that gives no answer of the mode's own is a `start` failure with the runner's words.
    pub fn probe(&self, spec: &RunSpec) -> McpPinOutput {
        let failed = |message: String| McpPinOutput::Failed {
            failure: McpFailure::Start,
            message,
            report: McpReport::default(),
        };
        let Some(McpInput::Pin(inv)) = spec.mcp.as_ref().map(|m| &m.input) else {
            return failed("internal: a probe without an mcp-pin input".into());
        };
        if !admitted(&inv.server, spec) {
            return failed(ADMITTED.into());
        }
        let seen: RefCell<Option<McpPinOutput>> = RefCell::new(None);
        let decode = |stdout: &[u8]| {
            let output: McpPinOutput = serde_json::from_slice(stdout).map_err(|e| e.to_string())?;
            let shown = match &output {
                McpPinOutput::Ok { .. } => ToolOutput::Ok {
                    content: String::new(),
                    truncated: false,
                },
                McpPinOutput::Failed { message, .. } => ToolOutput::Failed {
                    message: message.clone(),
                },
            };
            *seen.borrow_mut() = Some(output);
            Ok(shown)
        };
        let outcome = self.execute_with(spec, &decode);
        match (seen.into_inner(), outcome) {
            (Some(output), _) => output,
            (None, RunOutcome::Failed { message, .. }) => failed(message),
            (None, RunOutcome::Ok { .. } | RunOutcome::Staged(_)) => {
                failed("the tool gave no list".into())
            }
        }
    }
}
