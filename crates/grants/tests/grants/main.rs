//! grants' tests, one module per concern: the snapshot of the grant directory, what each
//! grant covers, why a grant does not load and why it does not cover a call, paths, where a
//! host name may lead, and the paths a tool unit may be given.

mod constraints;
mod hands;
mod invalid;
mod mcp;
mod mismatch;
mod path;
mod reach;
mod snapshot;
mod unitpath;
mod writes;
