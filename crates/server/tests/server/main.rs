//! The server on 127.0.0.1: in-process for protocol and MemWAL behaviour,
//! the real binary for SIGKILL durability.

mod support;

mod bad_input;
mod durability;
mod failover;
mod fts;
mod fuzz;
mod memwal;
mod metrics;
mod model;
mod promise;
mod served;
mod upkeep;
