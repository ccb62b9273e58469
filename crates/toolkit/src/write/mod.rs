//! The write stages (docs/decisions.md H2-H6): `look` reads the target for brokerd (the
//! granted root bound read-only), `commit` writes it by compare-and-swap (the granted root
//! bound read-write). Both run as the hands user and walk below the root themselves
//! ([`beneath`]); neither takes a path from anywhere but the invocation's target.

mod beneath;
mod commit;
#[cfg(test)]
mod tests;
mod walk;

use proto::Hash32;
use proto::tools::stage::{Look, OldFile, StageOutput};

use crate::stage_error::StageError;

pub use commit::commit;

/// The target's text and metadata, or that it is absent. The same checks as a replace
/// (H5), so a file the commit would refuse is refused before the owner is asked.
pub fn look(l: &Look) -> Result<StageOutput, StageError> {
    let path = l.target.path.as_str();
    let (dir, name) = beneath::open_parent(&l.target)?;
    beneath::owned_dir(&dir, path)?;
    let Some((file, st)) = beneath::open_file(&dir, name, path)? else {
        return Ok(StageOutput::Looked { file: None });
    };
    beneath::replaceable(&st, path)?;
    let text = beneath::read_text(file, path)?;
    Ok(StageOutput::Looked {
        file: Some(OldFile {
            sha256: Hash32::digest(text.as_bytes()),
            size: text.len() as u64,
            text,
            uid: st.st_uid,
            gid: st.st_gid,
            mode: st.st_mode & 0o7777,
        }),
    })
}
