//! grants' tests, one module per concern: the snapshot of the grant directory, what each
//! grant covers, paths, where a host name may lead, each refusal's kind and text, and the paths
//! a tool unit may be given.

mod constraints;
mod path;
mod reach;
mod refusals;
mod snapshot;
mod unitpath;
