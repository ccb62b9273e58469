//! What several commands print alike.

use std::io::Write;
use std::process::ExitCode;

use crate::Error;

/// A wire body as one line of JSON: `--json` prints what brokerd or loopd answered, in
/// the shapes `docs/bxctl.md` names.
pub fn print_json(value: &impl serde::Serialize, out: &mut dyn Write) -> Result<ExitCode, Error> {
    let text = serde_json::to_string(value).map_err(|e| Error::Output(e.into()))?;
    writeln!(out, "{text}").map_err(Error::Output)?;
    Ok(ExitCode::SUCCESS)
}
