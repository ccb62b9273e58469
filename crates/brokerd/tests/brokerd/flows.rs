//! The flow table (issue 27 point 2): grant sets and the flows a hostile model can complete
//! without asking, as `brokerd::policy::flows::analyse` finds them with `decide_in`. The
//! table is data, `tests/flows-table.toml`, shared with the stack test that plays every grant
//! set live (`bxctl verify --hostile`, tests/stack/tests/stack/verify_hostile_table.rs).

use brokerd::policy::flows::{self, Setting};
use std::collections::BTreeMap;

use proto::JobName;
use proto::flows::Flow;
use serde::Deserialize;

use crate::policy::{now, snapshot};

pub(crate) fn read(id_path: &str, class: &str, extra: &str) -> String {
    format!(
        "tool = \"read_file\"\nmode = \"auto\"\nmax_taint = \"secret\"\nresult_class = \
         \"{class}\"\nuntrusted = false\n{extra}\n[constraints]\npaths = [\"{id_path}\"]\n"
    )
}

pub(crate) fn fetch(max_taint: &str, extra: &str, hosts: &str) -> String {
    format!(
        "tool = \"http_fetch\"\nmode = \"auto\"\nmax_taint = \"{max_taint}\"\nresult_class = \
         \"public\"\n{extra}\n[constraints]\nhosts = [{hosts}]\n"
    )
}

pub(crate) const ORG: &str = "\"api.example.org\"";
pub(crate) const FUTURE: &str = "expires = \"2099-01-01T00:00:00.000Z\"";

/// The table, shared with the stack tests.
const TABLE: &str = include_str!("../../../../tests/flows-table.toml");

#[derive(Deserialize)]
struct Table {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    consult: Option<String>,
    /// The MCP servers configured by `url`, each name to its URL.
    #[serde(default)]
    remote: BTreeMap<String, String>,
    #[serde(default)]
    jobs: Vec<Job>,
    grant: Vec<Grant>,
    #[serde(default)]
    flow: Vec<Row>,
}

#[derive(Deserialize)]
struct Job {
    name: String,
    deliver: String,
}

#[derive(Deserialize)]
struct Grant {
    id: String,
    text: String,
}

/// A flow as the table says it; `not_tried` is the live self-test's, not the analysis's.
#[derive(Deserialize, Debug, PartialEq, Eq)]
struct Row {
    severity: String,
    job: Option<String>,
    source: String,
    sink: String,
    what: String,
}

impl Case {
    fn setting(&self) -> Setting {
        let jobs = self
            .jobs
            .iter()
            .map(|j| {
                let name = JobName::new(j.name.clone()).expect("job name");
                let out = match j.deliver.as_str() {
                    "mattermost" => true,
                    "note" => false,
                    other => panic!("{}: deliver {other:?}", self.name),
                };
                (name, out)
            })
            .collect();
        Setting {
            jobs,
            consult: self.consult.clone(),
            remote: self.remote.clone(),
        }
    }
}

fn found(flows: &[Flow]) -> Vec<Row> {
    flows
        .iter()
        .map(|f| Row {
            severity: f.severity.as_str().to_owned(),
            job: f.job.as_ref().map(ToString::to_string),
            source: f.source.grant.clone().unwrap_or_default(),
            sink: f.sink.grant.clone().unwrap_or_else(|| f.sink.tool.clone()),
            what: f.sink.what.clone(),
        })
        .collect()
}

/// Every grant set of the table: the analysis finds exactly its flows, in its order.
#[test]
fn the_table() {
    let table: Table = toml::from_str(TABLE).expect("tests/flows-table.toml");
    assert!(table.case.len() >= 38, "the table lost cases");
    for case in &table.case {
        let grants: Vec<(&str, &str)> = case
            .grant
            .iter()
            .map(|g| (g.id.as_str(), g.text.as_str()))
            .collect();
        let flows = flows::analyse(&snapshot(&grants), &case.setting(), now()).expect("analysed");
        assert_eq!(found(&flows), case.flow, "{}: {flows:#?}", case.name);
    }
}
