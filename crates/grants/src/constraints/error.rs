//! Why a constraint value or a grant is refused. Each variant carries what it is about (the
//! value as written, the list and index, the grant's tool); the text is written for the
//! owner (`bxctl grants check`, brokerd's refusal to start). Why a grant does not cover a
//! call is [`Mismatch`](super::Mismatch), in `mismatch.rs`. A refusal that wraps another
//! prints it, and keeps it typed; `source()` does not return it (docs/decisions.md F16).

use std::net::Ipv4Addr;

use proto::tools::TOOL_NAMES;

use super::hands::HandsError;
use super::subject::Subject;

/// Why a path is refused: a call's, or a grant's entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("{path:?} contains a NUL byte")]
    Nul { path: String },
    #[error("{path:?} is not an absolute path (it must start with /)")]
    NotAbsolute { path: String },
    /// A `..` component, never resolved.
    #[error(
        "{path:?} has a `..` component, which is never resolved (it could cross a \
         symlink): name the path without it"
    )]
    DotDot { path: String },
    /// A grant's entry that is not written in normal form, and the form to write.
    #[error("{entry:?} is not in normal form: write {normal:?}")]
    NotNormal { entry: String, normal: String },
}

/// Why a `patterns` entry is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("an empty pattern matches only empty text; remove it or write `*`")]
    Empty,
    /// `\` before a character that is not `*`, `?` or `\`.
    #[error(
        "{pattern:?} escapes {escaped:?}; only \\*, \\? and \\\\ are escapes \
         (write \\\\ for a literal backslash)"
    )]
    Escape { pattern: String, escaped: char },
    #[error("{pattern:?} ends in a lone backslash (write \\\\ for a literal one)")]
    LoneBackslash { pattern: String },
}

/// Why a host name is not plain DNS labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// `..`, or a leading or second trailing dot.
    #[error("the name has an empty label (`..`, or a leading or second trailing dot)")]
    EmptyLabel,
    /// A character that is not a letter, digit, `-` or `_`.
    #[error("the name has {found:?}; host names are letters, digits, `-` and `_`")]
    Char { found: char },
}

/// Why a `hosts` entry is refused; `entry` is as the owner wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("an empty host entry names no host")]
    Empty,
    #[error(
        "{entry:?} is not ASCII: write an internationalised name in punycode \
         (for example xn--bcher-kva.de for bücher.de)"
    )]
    NotAscii { entry: String },
    /// An IPv6 address in brackets.
    #[error("{entry:?}: write an IPv6 address without brackets, for example ::1")]
    Bracketed { entry: String },
    #[error("{entry:?}: write the host alone, without a scheme")]
    Scheme { entry: String },
    #[error("{entry:?}: write the host alone, without a path")]
    Path { entry: String },
    #[error("{entry:?}: write the host alone, without a user name")]
    UserName { entry: String },
    /// An IPv6 address with a zone (`%eth0`).
    #[error("{entry:?}: an IPv6 address with a zone (%eth0) cannot be granted")]
    Zone { entry: String },
    #[error("{entry:?}: write the host without a port (any port of a listed host is allowed)")]
    Port { entry: String },
    /// `*` or `*.` alone.
    #[error("{entry:?}: `*` alone would grant every host; list the hosts")]
    EveryHost { entry: String },
    /// A `*` anywhere but a leading `*.`.
    #[error("{entry:?}: a wildcard is allowed only as a leading `*.`")]
    Wildcard { entry: String },
    #[error("{entry:?}: {error}")]
    Label { entry: String, error: LabelError },
    /// A name the URL parser reads as this IPv4 address (`127.1`, `0x7f.0.0.1`).
    #[error(
        "{entry:?} is read as the IPv4 address {ip}: write IPv4 addresses as a \
         dotted quad"
    )]
    Ipv4Spelling { entry: String, ip: Ipv4Addr },
    /// The URL parser keeps it as another host than written, or as none.
    #[error(
        "{entry:?} is not a host name (it reads as {})",
        seen.as_ref().map_or_else(|| "nothing".to_owned(), ToString::to_string)
    )]
    ReadsAs {
        entry: String,
        seen: Option<url::Host>,
    },
    #[error("{entry:?} is not a host name: {error}")]
    NotName {
        entry: String,
        error: url::ParseError,
    },
}

/// Why an `http_fetch` URL is refused; `url` is as the call gave it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("{url:?} is not a URL: {error}")]
    NotUrl { url: String, error: url::ParseError },
    /// Not http or https.
    #[error("{url:?}: only http and https URLs can be fetched, not {scheme}:")]
    Scheme { url: String, scheme: String },
    #[error("{url:?} carries a user name or password (user:pass@); such URLs are refused")]
    UserInfo { url: String },
    #[error("{url:?}: {error}")]
    Label { url: String, error: LabelError },
    #[error("{url:?} has no host")]
    NoHost { url: String },
    /// Writing the host back without its trailing dot failed.
    #[error("{url:?}: cannot rewrite the host: {error}")]
    RewriteHost { url: String, error: url::ParseError },
    /// A `.` or `..` segment behind an escaped slash or a `;`.
    #[error(
        "{url:?}: the path hides a `.` or `..` segment behind an escaped slash \
         (%2F, %5C) or a `;`, which a server may resolve out of the granted place"
    )]
    HiddenDotSegment { url: String },
}

/// Why a grant's constraints do not fit its tool: the load-time refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidGrant {
    #[error(
        "no tool is named {tool:?} (the tools are {})",
        TOOL_NAMES.join(", ")
    )]
    UnknownTool { tool: String },
    /// `constraints.<list>` is set on a tool whose arguments it cannot limit.
    #[error(
        "constraints.{list} does not apply to {tool} ({}): remove it",
        not_applicable(tool, *subject)
    )]
    NotApplicable {
        list: &'static str,
        tool: String,
        subject: Subject,
    },
    /// An allowing grant leaves `constraints.<list>` empty.
    #[error(
        "an allowing grant for {tool} must list constraints.{list} (only a deny grant \
         may leave it empty, meaning every value)"
    )]
    Required { list: &'static str, tool: String },
    #[error("constraints.paths[{index}]: {error}")]
    Path { index: usize, error: PathError },
    #[error("constraints.hosts[{index}]: {error}")]
    Host { index: usize, error: HostError },
    #[error("constraints.patterns[{index}]: {error}")]
    Pattern { index: usize, error: PatternError },
    /// `constraints.private_networks` on a tool that reaches no network.
    #[error(
        "constraints.private_networks does not apply to {tool} (it reaches no network): \
         remove it"
    )]
    PrivateNetworksNoNetwork { tool: String },
    #[error(
        "constraints.private_networks means nothing on a deny grant (it only widens where \
         an allowed call may connect): remove it"
    )]
    PrivateNetworksOnDeny,
    /// `constraints.private_networks` on an `http_fetch` grant that lists only addresses.
    #[error(
        "constraints.private_networks is for host names, and every entry of \
         constraints.hosts is an IP address (reached as listed): remove it"
    )]
    PrivateNetworksNoNames,
    /// An MCP grant's name, `args` or hosts (`super::mcp`).
    #[error("{0}")]
    Mcp(super::mcp_error::McpGrantError),
    /// A key of the hands (`modes`, `programs`, `workdir`, `stdin`, `shell`, the limits).
    #[error("{0}")]
    Hands(HandsError),
}

/// Why a list of constraints cannot limit `tool`, whose arguments are `subject`.
fn not_applicable(tool: &str, subject: Subject) -> &'static str {
    match subject {
        Subject::Path => "it reads local files; patterns can narrow it further",
        Subject::Url => "it fetches URLs; hosts and patterns limit it",
        Subject::Prompt => "its destination is the endpoint brokerd is configured with",
        Subject::Note if matches!(tool, "note_list" | "note_search" | "session_search") => {
            "it lists or searches brokerd's notes or the session logs: there is no \
             name to match"
        }
        Subject::Note => "it works on brokerd's notes; patterns narrow the note names",
        Subject::Mcp => "its arguments are matched by constraints.args pointers",
        Subject::Program => "it runs a granted program; programs and patterns limit it",
    }
}
