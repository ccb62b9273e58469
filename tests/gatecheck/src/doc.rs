//! The format of `docs/dependencies.md`, as the `deps` check reads it.
//!
//! - A table is a run of consecutive lines that start with `|` (after leading spaces). Its first
//!   line is the header, its second line the delimiter row (cells of `-` with optional `:`).
//!   Cells are split on `|`; a cell cannot contain `|`.
//! - A table is a *dependency table* when its header's first cell is `crate` and one of its
//!   header cells is `reason` (both compared without case). Other tables are ignored. The file
//!   may have several dependency tables (for example one per section); the house format is
//!   `| crate | used by | reason |`.
//! - Every body row of a dependency table names one crate: its first cell is exactly the
//!   crate's package name in backticks, such as `` `serde_json` ``, and nothing else.
//! - Its `reason` cell is non-empty and not just dashes.
//! - A crate has one row in the whole file.
//!
//! A row that breaks these rules is reported as a problem.

use std::collections::BTreeMap;

/// One documented crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// 1-based line number in the file.
    pub line: usize,
    pub reason: String,
}

/// What the file documents, and its format problems.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Doc {
    pub entries: BTreeMap<String, Entry>,
    pub tables: usize,
    pub problems: Vec<String>,
}

/// Splits a table line into trimmed cells, dropping the outer pipes.
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim();
    let inner = inner.strip_prefix('|').unwrap_or(inner);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(str::trim).collect()
}

fn is_delimiter_row(line: &str) -> bool {
    cells(line).iter().all(|cell| {
        let core = cell.trim_start_matches(':').trim_end_matches(':');
        !core.is_empty() && core.chars().all(|c| c == '-')
    })
}

/// The crate name in a first cell of the form `` `name` ``.
fn crate_name(cell: &str) -> Option<&str> {
    let name = cell.strip_prefix('`')?.strip_suffix('`')?;
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    valid.then_some(name)
}

/// Reads the dependency tables of `text` (see the module documentation).
pub fn parse(text: &str) -> Doc {
    let mut doc = Doc::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with('|') {
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && lines[i].trim_start().starts_with('|') {
            i += 1;
        }
        read_table(&lines[start..i], start, &mut doc);
    }
    doc
}

/// Reads one table, whose header is at 0-based line `offset` of the file.
fn read_table(table: &[&str], offset: usize, doc: &mut Doc) {
    let [header, delimiter, body @ ..] = table else {
        return;
    };
    if !is_delimiter_row(delimiter) {
        return;
    }
    let header: Vec<String> = cells(header).iter().map(|c| c.to_lowercase()).collect();
    if header.first().map(String::as_str) != Some("crate") {
        return;
    }
    let Some(reason_column) = header.iter().position(|c| c == "reason") else {
        return;
    };
    doc.tables += 1;
    for (index, row) in body.iter().enumerate() {
        let line = offset + 3 + index;
        let row_cells = cells(row);
        let first = row_cells.first().copied().unwrap_or("");
        let Some(name) = crate_name(first) else {
            doc.problems.push(format!(
                "docs/dependencies.md line {line}: the first cell must be one crate name in \
                 backticks, found \"{first}\""
            ));
            continue;
        };
        let reason = row_cells.get(reason_column).copied().unwrap_or("");
        if reason
            .chars()
            .all(|c| c == '-' || c == '—' || c.is_whitespace())
        {
            doc.problems.push(format!(
                "docs/dependencies.md line {line}: `{name}` has no reason"
            ));
            continue;
        }
        if let Some(first_entry) = doc.entries.get(name) {
            doc.problems.push(format!(
                "docs/dependencies.md line {line}: `{name}` is already listed on line {}",
                first_entry.line
            ));
            continue;
        }
        doc.entries.insert(
            name.to_owned(),
            Entry {
                line,
                reason: reason.to_owned(),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
# Dependencies

Every crate the workspace names, and why.

| crate | used by | reason |
|---|---|---|
| `serde` | proto, gatecheck | derive for every wire type |
| `serde_json` | proto | frames and logs |

## Fuzzing

| Crate | Used by | Reason |
| :--- | --- | ---: |
| `libfuzzer-sys` | fuzz | the fuzz harness |

| name | note |
|---|---|
| not a crate table | ignored |
";

    #[test]
    fn reads_every_dependency_table() {
        let doc = parse(GOOD);
        assert_eq!(doc.problems, Vec::<String>::new());
        assert_eq!(doc.tables, 2);
        let names: Vec<&str> = doc.entries.keys().map(String::as_str).collect();
        assert_eq!(names, ["libfuzzer-sys", "serde", "serde_json"]);
        assert_eq!(doc.entries["serde"].line, 7);
        assert_eq!(doc.entries["serde_json"].reason, "frames and logs");
        assert_eq!(doc.entries["libfuzzer-sys"].line, 14);
    }

    #[test]
    fn flags_rows_without_reason_name_or_uniqueness() {
        let text = "\
| crate | used by | reason |
|---|---|---|
| `toml` | proto |  |
| `sha2` | brokerd | - |
| humantime | proto | timestamps |
| `serde` (derive) | proto | derive |
| `ureq` | gatewayd |
| `serde_json` | proto | frames |
| `serde_json` | loopd | again |
";
        let doc = parse(text);
        assert_eq!(doc.entries.keys().collect::<Vec<_>>(), ["serde_json"]);
        assert_eq!(doc.problems.len(), 6, "{:?}", doc.problems);
        assert!(doc.problems[0].contains("line 3: `toml` has no reason"));
        assert!(doc.problems[1].contains("line 4: `sha2` has no reason"));
        assert!(doc.problems[2].contains("line 5: the first cell must be one crate name"));
        assert!(doc.problems[3].contains("line 6: the first cell must be one crate name"));
        assert!(doc.problems[4].contains("line 7: `ureq` has no reason"));
        assert!(doc.problems[5].contains("line 9: `serde_json` is already listed on line 8"));
    }

    #[test]
    fn ignores_tables_that_are_not_dependency_tables() {
        let text = "\
| crate | version |
|---|---|
| `serde` | 1 |

| crate | reason |
| `serde` | no delimiter row, so not a table |
";
        let doc = parse(text);
        assert_eq!(doc.tables, 0);
        assert!(doc.entries.is_empty());
        assert!(doc.problems.is_empty());
    }
}
