use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::tools::WriteMode;
use crate::{DataClass, JobName, Timestamp};

/// How a matching grant lets a call through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Auto,
    Ask,
    Deny,
}

/// One grant, the file `grants/<id>.toml`; the id is the file stem. Grants are the ceiling:
/// no grant means deny, and no boxmaker component can write them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    pub tool: String,
    pub mode: Mode,
    /// The highest session taint under which this grant applies.
    pub max_taint: DataClass,
    /// The class of this grant's results.
    #[serde(default = "default_result_class")]
    pub result_class: DataClass,
    /// Whether this grant's results may carry injected text (sets the session's flag).
    #[serde(default = "default_untrusted")]
    pub untrusted: bool,
    /// Absent means no expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<Timestamp>,
    /// The name of one secret handed to the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    #[serde(default)]
    pub constraints: Constraints,
    /// A stricter mode once the session has read untrusted content (the model may have been
    /// steered): `ask` or `deny`. Absent means the grant's own mode. It never loosens a grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_untrusted: Option<IfUntrusted>,
    /// The scheduled job this grant belongs to. A grant with a job applies only to that
    /// job's runs; one without applies to ordinary sessions and, when it denies, to job
    /// sessions too (docs/jobs.md). Absent means an ordinary grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobName>,
    /// Ask for every call, every time: the owner's answer is never "allow for this
    /// session" (docs/grants.md). Only on a grant that asks (`mode = "ask"`, or
    /// `if_untrusted = "ask"`); absent means false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub always_ask: bool,
}

/// The mode a grant takes in an untrusted session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IfUntrusted {
    Ask,
    Deny,
}

impl From<IfUntrusted> for Mode {
    fn from(m: IfUntrusted) -> Self {
        match m {
            IfUntrusted::Ask => Self::Ask,
            IfUntrusted::Deny => Self::Deny,
        }
    }
}

fn default_result_class() -> DataClass {
    DataClass::Private
}

fn default_untrusted() -> bool {
    true
}

/// What a grant is limited to. Matching is specified and done by brokerd alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub hosts: Vec<String>,
    #[serde(default)]
    pub patterns: Vec<String>,
    /// Whether the host names this grant reaches may resolve into private networks (10/8,
    /// 172.16/12, 192.168/16, 100.64/10, fc00::/7 and the IPv6 forms that embed them).
    /// Without it such addresses are dropped from a name's answer; addresses of this host
    /// and its link stay dropped either way. An IP literal the grant lists is reached
    /// whatever this says.
    #[serde(default, skip_serializing_if = "is_false")]
    pub private_networks: bool,
    /// `note_search` and `session_search` only: the highest class of documents the search
    /// reaches (the index partitions bound into its unit). Absent: every partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_class: Option<DataClass>,
    /// MCP tools only: a JSON pointer (RFC 6901) into the call's arguments, and the
    /// patterns the value there must match (any of them); every pointer must match.
    /// `[constraints.args] "/url" = ["https://example.org/*"]`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, Vec<String>>,
    /// `write_file` only: the modes it allows (`create`, `replace`, `append`). Empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<WriteMode>,
    /// `run` only: the programs, by name (brokerd's configuration says which file each is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<String>,
    /// `run` only: one granted directory bound read-write as the working directory (the run
    /// is then a write). Absent: an empty working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
    /// `run` only: whether a call may give the program standard input.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stdin: bool,
    /// `run` only: the owner knows that one of `programs` is a shell or runs programs named
    /// in its arguments (`sh`, `env`, `xargs`, …), and grants it all the same.
    #[serde(default, skip_serializing_if = "is_false")]
    pub shell: bool,
    /// `run` only: limits of each run. Absent: brokerd's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<u32>,
    /// The most KiB kept of stdout, and of stderr, each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_kib: Option<u32>,
}

/// Leaves `private_networks = false` out when a grant is written back, so a grant that
/// does not use the key reads as it did before the key existed.
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

impl Grant {
    /// Parses one grant file's text. The error names the line and column and says why.
    pub fn from_toml(text: &str) -> Result<Self, TomlError> {
        from_toml(text)
    }

    /// The grant as brokerd read it, as TOML: every field written (defaults included), in
    /// the struct's order, no comments. The audit records this text, so that what a grant
    /// meant does not depend on its file's comments or on a later change of a default; it
    /// parses back to the same grant.
    pub fn canonical(&self) -> String {
        // Every field is a string, a bool, a fieldless enum, a timestamp string or a list
        // of strings, which TOML always encodes.
        toml::to_string(self).expect("a grant always encodes as TOML")
    }
}

/// Parses a TOML file strictly into `T`; the error names the line and column.
pub fn from_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, TomlError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|span| line_and_column(text, span.start))
            .unwrap_or((0, 0));
        TomlError {
            line,
            column,
            reason: e.message().to_owned(),
        }
    })
}

/// 1-based line and column of a byte offset.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Why a TOML file does not parse. `line` and `column` are 1-based; 0 when the parser
/// could not point at a place (for example a missing field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.placed())]
pub struct TomlError {
    pub line: usize,
    pub column: usize,
    pub reason: String,
}

impl TomlError {
    /// `line L, column C: reason`, or the reason alone where there is no place.
    fn placed(&self) -> String {
        if self.line == 0 {
            self.reason.clone()
        } else {
            format!(
                "line {}, column {}: {}",
                self.line, self.column, self.reason
            )
        }
    }
}
