//! fake-llama-server's tests, one binary with a module per concern: the library's parts on
//! their own (api to slots), and the real binary seen from a client (behaviour, cache,
//! shapes), and compared with llama.cpp's own server (realpeer, `#[ignore]`d: run by
//! `tests/gate realpeer`).

mod common;

mod api;
mod behaviour;
mod cache;
mod completion;
mod http;
mod nljson;
mod realpeer;
mod render;
mod request;
mod script;
mod shapes;
mod slots;
