//! brokerd's tests: one binary, a module per concern.

mod policy;
