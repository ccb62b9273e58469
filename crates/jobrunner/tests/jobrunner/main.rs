//! boxmaker-job's tests of its public parts: how a run's report reads. The run itself,
//! against the real daemons, is in the stack tests (`tests/stack`, module `job_runs`).

mod cli;
mod report;
