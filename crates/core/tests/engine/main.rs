//! Integration tests of the engine on real files in temp dirs, one module
//! per scenario.

mod support;

mod bad_input;
mod binary;
mod chaos;
mod cleanup;
mod config;
mod crash;
mod evolve;
mod fence;
mod fts;
mod fts_fuzz;
mod fuzz;
mod index;
mod lsm;
mod merge;
mod model;
mod namespace;
mod s3;
mod scalar_index;
mod scale;
mod scan_limit;
mod table_ops;
mod two_process;
mod vector;
