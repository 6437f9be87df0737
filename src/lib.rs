//! napi bindings of memwal: thin wrappers that convert JS values to the
//! core types and back. Errors cross into JS in one place ([`error`]).
//! Data crosses as Arrow IPC bytes in Buffers, both ways.

// napi registers exports only outside cfg(test); under `clippy --all-targets`
// the test build would see them as unused.
#![cfg_attr(test, allow(dead_code))]

mod connection;
mod data;
mod error;
mod fts;
mod headers;
mod merge;
mod server;
mod table;
