//! bxctl's tests, one module per concern: the commands that work on files without a daemon,
//! and foreign text kept inert on every command that shows it (against stand-in peers).

mod answer;
mod cards;
mod cli;
mod grants_check;
mod inert;
mod peer;
mod status;
