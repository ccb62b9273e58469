//! Why a constraint value or a grant is refused. Each variant carries what it is about (the
//! value as written, the list and index, the grant's tool); the text is written for the
//! owner (`bxctl grants check`, brokerd's refusal to start). Why a grant does not cover a
//! call is [`Mismatch`](super::Mismatch), in `mismatch.rs`.

use std::fmt;
use std::net::Ipv4Addr;

use proto::tools::TOOL_NAMES;

use super::hands::HandsError;
use super::subject::Subject;

/// Why a path is refused: a call's, or a grant's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathError {
    Nul {
        path: String,
    },
    NotAbsolute {
        path: String,
    },
    /// A `..` component, never resolved.
    DotDot {
        path: String,
    },
    /// A grant's entry that is not written in normal form, and the form to write.
    NotNormal {
        entry: String,
        normal: String,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nul { path } => write!(f, "{path:?} contains a NUL byte"),
            Self::NotAbsolute { path } => {
                write!(f, "{path:?} is not an absolute path (it must start with /)")
            }
            Self::DotDot { path } => write!(
                f,
                "{path:?} has a `..` component, which is never resolved (it could cross a \
                 symlink): name the path without it"
            ),
            Self::NotNormal { entry, normal } => {
                write!(f, "{entry:?} is not in normal form: write {normal:?}")
            }
        }
    }
}

impl std::error::Error for PathError {}

/// Why a `patterns` entry is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    Empty,
    /// `\` before a character that is not `*`, `?` or `\`.
    Escape {
        pattern: String,
        escaped: char,
    },
    LoneBackslash {
        pattern: String,
    },
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => {
                f.write_str("an empty pattern matches only empty text; remove it or write `*`")
            }
            Self::Escape { pattern, escaped } => write!(
                f,
                "{pattern:?} escapes {escaped:?}; only \\*, \\? and \\\\ are escapes \
                 (write \\\\ for a literal backslash)"
            ),
            Self::LoneBackslash { pattern } => write!(
                f,
                "{pattern:?} ends in a lone backslash (write \\\\ for a literal one)"
            ),
        }
    }
}

impl std::error::Error for PatternError {}

/// Why a host name is not plain DNS labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelError {
    /// `..`, or a leading or second trailing dot.
    EmptyLabel,
    /// A character that is not a letter, digit, `-` or `_`.
    Char { found: char },
}

impl fmt::Display for LabelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyLabel => f.write_str(
                "the name has an empty label (`..`, or a leading or second trailing dot)",
            ),
            Self::Char { found } => write!(
                f,
                "the name has {found:?}; host names are letters, digits, `-` and `_`"
            ),
        }
    }
}

impl std::error::Error for LabelError {}

/// Why a `hosts` entry is refused; `entry` is as the owner wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostError {
    Empty,
    NotAscii {
        entry: String,
    },
    /// An IPv6 address in brackets.
    Bracketed {
        entry: String,
    },
    Scheme {
        entry: String,
    },
    Path {
        entry: String,
    },
    UserName {
        entry: String,
    },
    /// An IPv6 address with a zone (`%eth0`).
    Zone {
        entry: String,
    },
    Port {
        entry: String,
    },
    /// `*` or `*.` alone.
    EveryHost {
        entry: String,
    },
    /// A `*` anywhere but a leading `*.`.
    Wildcard {
        entry: String,
    },
    Label {
        entry: String,
        source: LabelError,
    },
    /// A name the URL parser reads as this IPv4 address (`127.1`, `0x7f.0.0.1`).
    Ipv4Spelling {
        entry: String,
        ip: Ipv4Addr,
    },
    /// The URL parser keeps it as another host than written, or as none.
    ReadsAs {
        entry: String,
        seen: Option<url::Host>,
    },
    NotName {
        entry: String,
        source: url::ParseError,
    },
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape =
            |f: &mut fmt::Formatter<'_>, entry: &str, why: &str| write!(f, "{entry:?}: {why}");
        match self {
            Self::Empty => f.write_str("an empty host entry names no host"),
            Self::NotAscii { entry } => write!(
                f,
                "{entry:?} is not ASCII: write an internationalised name in punycode \
                 (for example xn--bcher-kva.de for bücher.de)"
            ),
            Self::Bracketed { entry } => shape(
                f,
                entry,
                "write an IPv6 address without brackets, for example ::1",
            ),
            Self::Scheme { entry } => shape(f, entry, "write the host alone, without a scheme"),
            Self::Path { entry } => shape(f, entry, "write the host alone, without a path"),
            Self::UserName { entry } => {
                shape(f, entry, "write the host alone, without a user name")
            }
            Self::Zone { entry } => shape(
                f,
                entry,
                "an IPv6 address with a zone (%eth0) cannot be granted",
            ),
            Self::Port { entry } => shape(
                f,
                entry,
                "write the host without a port (any port of a listed host is allowed)",
            ),
            Self::EveryHost { entry } => {
                shape(f, entry, "`*` alone would grant every host; list the hosts")
            }
            Self::Wildcard { entry } => {
                shape(f, entry, "a wildcard is allowed only as a leading `*.`")
            }
            Self::Label { entry, source } => write!(f, "{entry:?}: {source}"),
            Self::Ipv4Spelling { entry, ip } => write!(
                f,
                "{entry:?} is read as the IPv4 address {ip}: write IPv4 addresses as a \
                 dotted quad"
            ),
            Self::ReadsAs { entry, seen } => {
                let seen = seen
                    .as_ref()
                    .map_or_else(|| "nothing".to_owned(), ToString::to_string);
                write!(f, "{entry:?} is not a host name (it reads as {seen})")
            }
            Self::NotName { entry, source } => {
                write!(f, "{entry:?} is not a host name: {source}")
            }
        }
    }
}

impl std::error::Error for HostError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Label { source, .. } => Some(source),
            Self::NotName { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why an `http_fetch` URL is refused; `url` is as the call gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlError {
    NotUrl {
        url: String,
        source: url::ParseError,
    },
    /// Not http or https.
    Scheme {
        url: String,
        scheme: String,
    },
    UserInfo {
        url: String,
    },
    Label {
        url: String,
        source: LabelError,
    },
    NoHost {
        url: String,
    },
    /// Writing the host back without its trailing dot failed.
    RewriteHost {
        url: String,
        source: url::ParseError,
    },
    /// A `.` or `..` segment behind an escaped slash or a `;`.
    HiddenDotSegment {
        url: String,
    },
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUrl { url, source } => write!(f, "{url:?} is not a URL: {source}"),
            Self::Scheme { url, scheme } => write!(
                f,
                "{url:?}: only http and https URLs can be fetched, not {scheme}:"
            ),
            Self::UserInfo { url } => write!(
                f,
                "{url:?} carries a user name or password (user:pass@); such URLs are refused"
            ),
            Self::Label { url, source } => write!(f, "{url:?}: {source}"),
            Self::NoHost { url } => write!(f, "{url:?} has no host"),
            Self::RewriteHost { url, source } => {
                write!(f, "{url:?}: cannot rewrite the host: {source}")
            }
            Self::HiddenDotSegment { url } => write!(
                f,
                "{url:?}: the path hides a `.` or `..` segment behind an escaped slash \
                 (%2F, %5C) or a `;`, which a server may resolve out of the granted place"
            ),
        }
    }
}

impl std::error::Error for UrlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NotUrl { source, .. } | Self::RewriteHost { source, .. } => Some(source),
            Self::Label { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why a grant's constraints do not fit its tool: the load-time refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidGrant {
    UnknownTool {
        tool: String,
    },
    /// `constraints.<list>` is set on a tool whose arguments it cannot limit.
    NotApplicable {
        list: &'static str,
        tool: String,
        subject: Subject,
    },
    /// An allowing grant leaves `constraints.<list>` empty.
    Required {
        list: &'static str,
        tool: String,
    },
    Path {
        index: usize,
        source: PathError,
    },
    Host {
        index: usize,
        source: HostError,
    },
    Pattern {
        index: usize,
        source: PatternError,
    },
    /// `constraints.private_networks` on a tool that reaches no network.
    PrivateNetworksNoNetwork {
        tool: String,
    },
    PrivateNetworksOnDeny,
    /// `constraints.private_networks` on an `http_fetch` grant that lists only addresses.
    PrivateNetworksNoNames,
    /// A key of the hands (`modes`, `programs`, `workdir`, `stdin`, `shell`, the limits).
    Hands(HandsError),
}

impl fmt::Display for InvalidGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool { tool } => write!(
                f,
                "no tool is named {tool:?} (the tools are {})",
                TOOL_NAMES.join(", ")
            ),
            Self::NotApplicable {
                list,
                tool,
                subject,
            } => {
                let why = match subject {
                    Subject::Path => "it reads local files; patterns can narrow it further",
                    Subject::Url => "it fetches URLs; hosts and patterns limit it",
                    Subject::Prompt => "its destination is the endpoint brokerd is configured with",
                    Subject::Note
                        if matches!(
                            tool.as_str(),
                            "note_list" | "note_search" | "session_search"
                        ) =>
                    {
                        "it lists or searches brokerd's notes or the session logs: there is no \
                         name to match"
                    }
                    Subject::Note => "it works on brokerd's notes; patterns narrow the note names",
                    Subject::Program => "it runs a granted program; programs and patterns limit it",
                };
                write!(
                    f,
                    "constraints.{list} does not apply to {tool} ({why}): remove it"
                )
            }
            Self::Required { list, tool } => write!(
                f,
                "an allowing grant for {tool} must list constraints.{list} (only a deny grant \
                 may leave it empty, meaning every value)"
            ),
            Self::Path { index, source } => write!(f, "constraints.paths[{index}]: {source}"),
            Self::Host { index, source } => write!(f, "constraints.hosts[{index}]: {source}"),
            Self::Pattern { index, source } => {
                write!(f, "constraints.patterns[{index}]: {source}")
            }
            Self::PrivateNetworksNoNetwork { tool } => write!(
                f,
                "constraints.private_networks does not apply to {tool} (it reaches no network): \
                 remove it"
            ),
            Self::PrivateNetworksOnDeny => f.write_str(
                "constraints.private_networks means nothing on a deny grant (it only widens where \
                 an allowed call may connect): remove it",
            ),
            Self::Hands(e) => e.fmt(f),
            Self::PrivateNetworksNoNames => f.write_str(
                "constraints.private_networks is for host names, and every entry of \
                 constraints.hosts is an IP address (reached as listed): remove it",
            ),
        }
    }
}

impl std::error::Error for InvalidGrant {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Path { source, .. } => Some(source),
            Self::Host { source, .. } => Some(source),
            Self::Pattern { source, .. } => Some(source),
            Self::Hands(e) => Some(e),
            _ => None,
        }
    }
}
