//! Why a grant does not cover a call: the text the model and the audit see in a denial's
//! detail. Quoted values are the call's (normalised where the check got that far).

use proto::tools::WriteMode;

use super::{Host, InvalidGrant, PathError, Subject, UrlError};

/// Why a grant does not cover a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    /// The grant fails [`super::validate`], and so covers nothing.
    #[error("the grant is invalid: {0}")]
    Invalid(InvalidGrant),
    #[error("the grant is for {grant}, the call is to {call}")]
    OtherTool { grant: String, call: String },
    /// The call's path has no normal form.
    #[error("{0}")]
    Path(PathError),
    /// The call's URL is refused.
    #[error("{0}")]
    Url(UrlError),
    /// The normalised path is under none of the grant's `paths`.
    #[error("{path:?} is not under any of {}", roots.join(", "))]
    NotUnder { path: String, roots: Vec<String> },
    /// The URL's host is none of the grant's `hosts`; `url` is the normalised URL.
    #[error("the host {host} of {url:?} is not any of {}", hosts.join(", "))]
    HostNotListed {
        host: Host,
        url: String,
        hosts: Vec<String>,
    },
    /// The normalised path or URL, or the prompt, matches none of the grant's `patterns`.
    #[error("{}", no_pattern(*subject, value, patterns))]
    NoPattern {
        subject: Subject,
        value: String,
        patterns: Vec<String>,
    },
    /// `write_file` in a mode the grant's `modes` leave out.
    #[error("the grant allows the modes {}, not {}", mode_list(modes), mode.as_str())]
    Mode {
        mode: WriteMode,
        modes: Vec<WriteMode>,
    },
    /// `run` of a program the grant does not name.
    #[error("{program:?} is none of the granted programs {}", programs.join(", "))]
    Program {
        program: String,
        programs: Vec<String>,
    },
    /// An allowing `run` grant: this argument matches none of its patterns.
    #[error(
        "argument {index} {arg:?} matches none of the patterns {}",
        quoted(patterns)
    )]
    Argument {
        index: usize,
        arg: String,
        patterns: Vec<String>,
    },
    /// A deny `run` grant's patterns: no argument matches any of them.
    #[error("no argument matches any of the patterns {}", quoted(patterns))]
    NoArgument { patterns: Vec<String> },
    /// `run` with standard input, and the grant has no `stdin = true`.
    #[error("the grant gives the program no standard input (constraints.stdin is not set)")]
    Stdin,
    /// An MCP call's arguments against the grant's `constraints.args`.
    #[error("{0}")]
    Args(super::mcp_error::ArgMismatch),
}

/// A value no pattern matches. A prompt is named, not repeated: it can be long, and it is
/// the model's own.
fn no_pattern(subject: Subject, value: &str, patterns: &[String]) -> String {
    let what = match subject {
        Subject::Path | Subject::Url | Subject::Note | Subject::Program | Subject::Mcp => {
            format!("{value:?}")
        }
        Subject::Prompt => "the prompt".to_owned(),
    };
    format!("{what} matches none of the patterns {}", quoted(patterns))
}

fn mode_list(modes: &[WriteMode]) -> String {
    let modes: Vec<&str> = modes.iter().map(|m| m.as_str()).collect();
    modes.join(", ")
}

fn quoted(patterns: &[String]) -> String {
    let list: Vec<String> = patterns.iter().map(|p| format!("{p:?}")).collect();
    list.join(", ")
}
