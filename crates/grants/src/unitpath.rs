//! Paths and names that go into systemd unit properties: the grant loader refuses them at
//! load (so `bxctl grants check` says so) and the systemd runner refuses them again before
//! starting a unit. One definition for both.

/// Why a path cannot go into a unit property, or be granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitPathError {
    #[error("path {path:?} is not absolute")]
    NotAbsolute { path: String },
    /// `bad` is a character systemd's value syntax would interpret.
    #[error(
        "path {path:?} contains {bad:?}, which systemd unit settings would not take \
         literally"
    )]
    Unquotable { path: String, bad: char },
    /// `.`, `..`, `//` or a trailing `/`.
    #[error("path {path:?} is not normalised")]
    NotNormalised { path: String },
    /// `/` itself, granted.
    #[error("granting \"/\" would expose the whole host file system")]
    WholeHost,
    /// Granted inside `api`, an API file system systemd mounts itself.
    #[error("granted path {path:?} lies in {api}, which is never bound into a tool's root")]
    ApiFileSystem { path: String, api: &'static str },
}

/// Why a name cannot be a credential's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("credential name {name:?} must be 1 to 255 characters of [A-Za-z0-9_.@-]")]
pub struct CredentialNameError {
    pub name: String,
}

/// Checks a path that goes into a unit property (a bind, a granted path, the tool, the root).
///
/// Refused: relative or non-normalised paths (`.`, `..`, `//`, a trailing `/`), and any
/// character that systemd's value syntax would interpret rather than take literally:
/// whitespace and `:` separate bind entries, quotes and `\` are unquoted, `%` is a unit-file
/// specifier and `$` an ExecStart variable, control characters are never sane in a path.
/// Quoting them correctly differs between `systemd-run -p` and unit files (`%` is expanded
/// only in files), so refusing them keeps the command and the printed unit identical.
pub fn check_unit_path(path: &str) -> Result<(), UnitPathError> {
    if !path.starts_with('/') {
        return Err(UnitPathError::NotAbsolute {
            path: path.to_owned(),
        });
    }
    if let Some(bad) = path.chars().find(|&c| {
        c.is_whitespace() || c.is_control() || matches!(c, ':' | '"' | '\'' | '\\' | '%' | '$')
    }) {
        return Err(UnitPathError::Unquotable {
            path: path.to_owned(),
            bad,
        });
    }
    if path != "/"
        && (path.ends_with('/') || path[1..].split('/').any(|c| matches!(c, "" | "." | "..")))
    {
        return Err(UnitPathError::NotNormalised {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Checks a granted path before it is bound into a tool's root: a unit path that is not `/`
/// itself and not inside an API file system. Binding `/` would undo the empty root; `/run`
/// holds the D-Bus and systemd sockets, and `/proc`, `/sys` and `/dev` are systemd's to
/// mount (with ProtectProc, ProtectKernelTunables and PrivateDevices applied).
pub fn check_granted_path(path: &str) -> Result<(), UnitPathError> {
    check_unit_path(path)?;
    if path == "/" {
        return Err(UnitPathError::WholeHost);
    }
    for api in ["/run", "/proc", "/sys", "/dev", "/var/run"] {
        if path == api || path.starts_with(&format!("{api}/")) {
            return Err(UnitPathError::ApiFileSystem {
                path: path.to_owned(),
                api,
            });
        }
    }
    Ok(())
}

/// A credential name as systemd accepts it and as a plain file name: no `/`, no `:` (the
/// `LoadCredential=` separator), not `.` or `..`, at most 255 bytes.
pub fn check_credential_name(name: &str) -> Result<(), CredentialNameError> {
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
        Err(CredentialNameError {
            name: name.to_owned(),
        })
    }
}
