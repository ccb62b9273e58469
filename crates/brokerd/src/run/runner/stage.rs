//! What both runners do with a hands unit's stage: check that it is the call its decision
//! is about, and put the granted root and the working directory where the unit has them.

use proto::Grant;
use proto::tools::ToolArgs;
use proto::tools::stage::{StageInvocation, Target};

use crate::run::hands::{StageSpec, StageUnit, write_call};

/// Whether `stage` does what `call` (the decision's arguments, under `grant`) says and
/// nothing else: a look or commit of that very path through one of the grant's roots, bound
/// read-only for the look, a commit of that very write, a run of those arguments and input
/// binding the grant's paths and working directory and nothing else.
pub(super) fn stage_matches(call: &ToolArgs, grant: &Grant, stage: &StageSpec) -> bool {
    let granted = |root: &String| grant.constraints.paths.contains(root);
    match (&stage.invocation, &stage.unit) {
        (StageInvocation::Look(l), StageUnit::Write { root, writable }) => {
            !writable && granted(root) && same_target(call, root, &l.target)
        }
        (StageInvocation::Commit(c), StageUnit::Write { root, writable }) => {
            *writable
                && granted(root)
                && same_target(call, root, &c.target)
                && write_call(call).is_some_and(|(w, _)| w == c.call)
        }
        (StageInvocation::Run(r), StageUnit::Run { paths, workdir, .. }) => {
            *paths == grant.constraints.paths
                && *workdir == grant.constraints.workdir
                && matches!(call, ToolArgs::Run(a) if a.args == r.args && a.stdin == r.stdin)
        }
        _ => false,
    }
}

/// Whether `target` (the root as brokerd gave it, and the path below) is `call`'s path.
fn same_target(call: &ToolArgs, root: &str, target: &Target) -> bool {
    let Some((_, path)) = write_call(call) else {
        return false;
    };
    target.root == root && format!("{}/{}", root.trim_end_matches('/'), target.path) == path
}

/// The stage as the unit is sent it: the root at `root` (where the unit finds the granted
/// root) and a run's working directory at `work`.
pub(super) fn sent(stage: &StageSpec, root: &str, work: &str) -> StageInvocation {
    let mut sent = stage.invocation.clone();
    match &mut sent {
        StageInvocation::Look(l) => l.target.root = root.to_owned(),
        StageInvocation::Commit(c) => c.target.root = root.to_owned(),
        StageInvocation::Run(r) => r.workdir = work.to_owned(),
    }
    sent
}
