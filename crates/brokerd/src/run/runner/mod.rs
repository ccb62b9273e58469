//! Tool runs: one `boxmaker-tool` process per call, request on stdin, result on stdout.
//!
//! Two runners behind one interface. [`SystemdRunner`] starts each call as its own transient
//! service unit (BRIEF decision 1): the isolation is systemd's, brokerd only builds the
//! property list. [`DirectRunner`] runs the tool as a plain child process, for development
//! and the stack tests only. Both share the same process handling ([`child`]): the request
//! is written and stdin closed, stdout is read with a hard cap, stderr is kept as a short
//! tail for messages, the time limit is enforced from brokerd's side, and the tool's answer
//! is parsed strictly and cut to the limit again (a tool never vouches for its own output).
//!
//! A tool runs only through [`Runner::run`], which takes a [`Decision`] by value: no code
//! outside this module can start one without a decision that allows it.
//!
//! ```
//! // The one door, as the refusals below name the types (each fails for its own reason).
//! fn door(
//!     r: &brokerd::run::runner::Runner,
//!     d: brokerd::policy::Decision,
//!     s: &brokerd::run::runner::RunSpec,
//! ) -> brokerd::run::runner::RunOutcome {
//!     r.run(d, s)
//! }
//! fn runners(_: &brokerd::run::runner::DirectRunner, _: &brokerd::run::runner::SystemdRunner) {}
//! ```
//!
//! ```compile_fail,E0624
//! fn bypass(r: &brokerd::run::runner::Runner, s: &brokerd::run::runner::RunSpec) {
//!     let _ = r.execute(s);
//! }
//! ```
//!
//! ```compile_fail,E0624
//! fn bypass(r: &brokerd::run::runner::DirectRunner, s: &brokerd::run::runner::RunSpec) {
//!     let _ = r.execute(s);
//! }
//! ```
//!
//! ```compile_fail,E0624
//! fn bypass(r: &brokerd::run::runner::SystemdRunner, s: &brokerd::run::runner::RunSpec) {
//!     let _ = r.execute(s);
//! }
//! ```

mod child;
mod direct;
mod explain;
mod mcp;
mod spec;
mod stage;
mod systemd;
mod unit_props;
mod unit_result;

use proto::tools::stage::StageInvocation;

use crate::policy::Decision;
pub use direct::DirectRunner;
pub use grants::unitpath::{check_credential_name, check_granted_path, check_unit_path};
pub use spec::{CheckError, Limits, McpInput, McpRun, RunOutcome, RunSpec, Secret, unit_name};
use stage::stage_matches;
pub use systemd::SystemdRunner;

/// The configured runner. The NixOS module always configures `Systemd`.
#[derive(Debug, Clone)]
pub enum Runner {
    Direct(DirectRunner),
    Systemd(SystemdRunner),
}

impl Runner {
    /// Runs a call. Takes the decision by value: only `policy` makes one, it cannot be
    /// copied, and only an allow runs, for exactly the arguments it authorises: a spec that
    /// would run anything else is refused. This is the only way to a tool run from outside
    /// this module.
    pub fn run(&self, decision: Decision, spec: &RunSpec) -> RunOutcome {
        let staged = spec.stage.as_ref().is_none_or(|s| {
            !matches!(s.invocation, StageInvocation::Look(_))
                && decision
                    .grant()
                    .is_some_and(|(g, _)| stage_matches(&spec.invocation.call, g, s))
        });
        if spec.mcp.is_some() || !decision.authorises(&spec.invocation.call) || !staged {
            return RunOutcome::failed(
                "internal: refusing to run a call its decision does not allow (not an allow, \
                 or other arguments)",
            );
        }
        self.execute(spec)
    }

    /// Looks at a write's target before the owner is asked (docs/decisions.md H2): only
    /// for a decision that may look (an allow or an ask of a write), only the look stage,
    /// and only of the path the decision is about. The decision is kept: the commit, if
    /// any, is its one run.
    pub fn look(&self, decision: &Decision, spec: &RunSpec) -> RunOutcome {
        // Never an MCP session: its unit's properties (its closure, no
        // MemoryDenyWriteExecute) are not a look's.
        let allowed = decision.may_look()
            && spec.mcp.is_none()
            && decision.args() == Some(&spec.invocation.call)
            && spec.stage.as_ref().is_some_and(|s| {
                matches!(s.invocation, StageInvocation::Look(_))
                    && decision
                        .grant()
                        .is_some_and(|(g, _)| stage_matches(&spec.invocation.call, g, s))
            });
        if !allowed {
            return RunOutcome::failed(
                "internal: refusing to look at a target its decision is not about",
            );
        }
        self.execute(spec)
    }

    /// Whether a run sees only what its spec binds (the systemd runner), so that the tool
    /// finds a bound path at its `target`; the direct runner binds nothing.
    pub fn binds(&self) -> bool {
        matches!(self, Self::Systemd(_))
    }

    /// Runs one call to completion (or to its limits). Never panics on tool behaviour: every
    /// failure, including a spec this runner refuses, is a [`RunOutcome::Failed`].
    fn execute(&self, spec: &RunSpec) -> RunOutcome {
        self.execute_with(spec, &child::tool_output)
    }

    /// [`Self::execute`] with the answer read by `decode` (an MCP mode's reader).
    fn execute_with(
        &self,
        spec: &RunSpec,
        decode: &dyn Fn(&[u8]) -> Result<proto::toolrun::ToolOutput, String>,
    ) -> RunOutcome {
        match self {
            Self::Direct(r) => r.execute(spec, decode),
            Self::Systemd(r) => r.execute(spec, decode),
        }
    }
}
