//! Why a grant does not cover a call: the text the model and the audit see in a denial's
//! detail. Quoted values are the call's (normalised where the check got that far).

use std::fmt;

use proto::tools::WriteMode;

use super::{Host, InvalidGrant, PathError, Subject, UrlError};

/// Why a grant does not cover a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The grant fails [`super::validate`], and so covers nothing.
    Invalid(InvalidGrant),
    OtherTool {
        grant: String,
        call: String,
    },
    /// The call's path has no normal form.
    Path(PathError),
    /// The call's URL is refused.
    Url(UrlError),
    /// The normalised path is under none of the grant's `paths`.
    NotUnder {
        path: String,
        roots: Vec<String>,
    },
    /// The URL's host is none of the grant's `hosts`; `url` is the normalised URL.
    HostNotListed {
        host: Host,
        url: String,
        hosts: Vec<String>,
    },
    /// The normalised path or URL, or the prompt, matches none of the grant's `patterns`.
    NoPattern {
        subject: Subject,
        value: String,
        patterns: Vec<String>,
    },
    /// `write_file` in a mode the grant's `modes` leave out.
    Mode {
        mode: WriteMode,
        modes: Vec<WriteMode>,
    },
    /// `run` of a program the grant does not name.
    Program {
        program: String,
        programs: Vec<String>,
    },
    /// An allowing `run` grant: this argument matches none of its patterns.
    Argument {
        index: usize,
        arg: String,
        patterns: Vec<String>,
    },
    /// A deny `run` grant's patterns: no argument matches any of them.
    NoArgument {
        patterns: Vec<String>,
    },
    /// `run` with standard input, and the grant has no `stdin = true`.
    Stdin,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(e) => write!(f, "the grant is invalid: {e}"),
            Self::OtherTool { grant, call } => {
                write!(f, "the grant is for {grant}, the call is to {call}")
            }
            Self::Path(e) => e.fmt(f),
            Self::Url(e) => e.fmt(f),
            Self::NotUnder { path, roots } => {
                write!(f, "{path:?} is not under any of {}", roots.join(", "))
            }
            Self::HostNotListed { host, url, hosts } => write!(
                f,
                "the host {host} of {url:?} is not any of {}",
                hosts.join(", ")
            ),
            Self::NoPattern {
                subject,
                value,
                patterns,
            } => {
                // A prompt is named, not repeated: it can be long, and it is the model's own.
                match subject {
                    Subject::Path | Subject::Url | Subject::Note | Subject::Program => {
                        write!(f, "{value:?}")?
                    }
                    Subject::Prompt => f.write_str("the prompt")?,
                }
                write!(f, " matches none of the patterns {}", quoted(patterns))
            }
            Self::Mode { mode, modes } => {
                let modes: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
                write!(
                    f,
                    "the grant allows the modes {}, not {}",
                    modes.join(", "),
                    mode.as_str()
                )
            }
            Self::Program { program, programs } => write!(
                f,
                "{program:?} is none of the granted programs {}",
                programs.join(", ")
            ),
            Self::Argument {
                index,
                arg,
                patterns,
            } => write!(
                f,
                "argument {index} {arg:?} matches none of the patterns {}",
                quoted(patterns)
            ),
            Self::NoArgument { patterns } => write!(
                f,
                "no argument matches any of the patterns {}",
                quoted(patterns)
            ),
            Self::Stdin => f.write_str(
                "the grant gives the program no standard input (constraints.stdin is not set)",
            ),
        }
    }
}

impl std::error::Error for Mismatch {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Invalid(e) => Some(e),
            Self::Path(e) => Some(e),
            Self::Url(e) => Some(e),
            _ => None,
        }
    }
}

fn quoted(patterns: &[String]) -> String {
    let list: Vec<String> = patterns.iter().map(|p| format!("{p:?}")).collect();
    list.join(", ")
}
