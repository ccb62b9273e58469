//! Where `bxctl dev` finds the programs it starts and makes the paths it is given absolute.

use std::path::PathBuf;

use crate::error::DevError;

pub(crate) fn bin(name: &str) -> Result<PathBuf, DevError> {
    let exe = std::env::current_exe().map_err(DevError::CurrentExe)?;
    let path = exe.parent().map(|d| d.join(name)).unwrap_or_default();
    if path.exists() {
        Ok(path)
    } else {
        Err(DevError::NotBuilt { path })
    }
}

pub(super) fn absolute(path: &std::path::Path) -> Result<PathBuf, DevError> {
    std::path::absolute(path).map_err(|source| DevError::StateDir {
        path: path.to_owned(),
        error: source,
    })
}
