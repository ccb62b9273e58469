//! grants' tests, one module per concern: the snapshot of the grant directory, what each
//! grant covers, paths, and where a host name may lead.

mod constraints;
mod path;
mod reach;
mod snapshot;
