//! Which reads run without asking: the look-alike, restart, compaction and smuggling
//! chains start from one (`chains::plan`, and a job's, `jobs::plan`), so that what stops
//! them is what their kind tries, never the read.

use super::rewrite::Rewritten;

/// Whether a grant of `tool` lets an ordinary session's first read of `path` run without
/// asking: one allowing (`auto`, no job, no patterns, not expired, applying at private,
/// where every session starts) grant covers it and no denying one does.
pub fn reads_freely(r: &Rewritten, tool: &str, path: &str) -> bool {
    reads_freely_by(r.grants.values(), tool, path)
}

/// Whether `grants` (a job's, `jobs`) let `tool` read `path` without asking, as
/// [`reads_freely`].
pub fn reads_freely_by<'a>(
    grants: impl Iterator<Item = &'a proto::Grant> + Clone,
    tool: &str,
    path: &str,
) -> bool {
    let now = proto::Timestamp::now();
    let covers = |g: &proto::Grant| {
        g.tool == tool
            && (g.constraints.paths.is_empty()
                || g.constraints
                    .paths
                    .iter()
                    .any(|root| grants::constraints::is_under(path, root)))
    };
    let grants = || grants.clone().filter(|g| covers(g));
    grants().any(|g| {
        g.mode == proto::Mode::Auto
            && g.constraints.patterns.is_empty()
            && g.expires.is_none_or(|t| t > now)
            && g.max_taint >= proto::DataClass::Private
    }) && !grants().any(|g| g.mode == proto::Mode::Deny && g.expires.is_none_or(|t| t > now))
}
