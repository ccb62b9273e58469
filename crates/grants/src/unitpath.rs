//! Paths and names that go into systemd unit properties: the grant loader refuses them at
//! load (so `bxctl grants check` says so) and the systemd runner refuses them again before
//! starting a unit. One definition for both.

/// Checks a path that goes into a unit property (a bind, a granted path, the tool, the root).
///
/// Refused: relative or non-normalised paths (`.`, `..`, `//`, a trailing `/`), and any
/// character that systemd's value syntax would interpret rather than take literally:
/// whitespace and `:` separate bind entries, quotes and `\` are unquoted, `%` is a unit-file
/// specifier and `$` an ExecStart variable, control characters are never sane in a path.
/// Quoting them correctly differs between `systemd-run -p` and unit files (`%` is expanded
/// only in files), so refusing them keeps the command and the printed unit identical.
pub fn check_unit_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("path {path:?} is not absolute"));
    }
    if let Some(bad) = path.chars().find(|&c| {
        c.is_whitespace() || c.is_control() || matches!(c, ':' | '"' | '\'' | '\\' | '%' | '$')
    }) {
        return Err(format!(
            "path {path:?} contains {bad:?}, which systemd unit settings would not take literally"
        ));
    }
    if path != "/"
        && (path.ends_with('/') || path[1..].split('/').any(|c| matches!(c, "" | "." | "..")))
    {
        return Err(format!("path {path:?} is not normalised"));
    }
    Ok(())
}

/// Checks a granted path before it is bound into a tool's root: a unit path that is not `/`
/// itself and not inside an API file system. Binding `/` would undo the empty root; `/run`
/// holds the D-Bus and systemd sockets, and `/proc`, `/sys` and `/dev` are systemd's to
/// mount (with ProtectProc, ProtectKernelTunables and PrivateDevices applied).
pub fn check_granted_path(path: &str) -> Result<(), String> {
    check_unit_path(path)?;
    if path == "/" {
        return Err("granting \"/\" would expose the whole host file system".into());
    }
    for api in ["/run", "/proc", "/sys", "/dev", "/var/run"] {
        if path == api || path.starts_with(&format!("{api}/")) {
            return Err(format!(
                "granted path {path:?} lies in {api}, which is never bound into a tool's root"
            ));
        }
    }
    Ok(())
}

/// A credential name as systemd accepts it and as a plain file name: no `/`, no `:` (the
/// `LoadCredential=` separator), not `.` or `..`, at most 255 bytes.
pub fn check_credential_name(name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'));
    if fine {
        Ok(())
    } else {
        Err(format!(
            "credential name {name:?} must be 1 to 255 characters of [A-Za-z0-9_.@-]"
        ))
    }
}
