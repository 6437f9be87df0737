//! Merge insert: the builder users chain ([`MergeInsertBuilder`]), its
//! parameters and result, the validation every implementation shares
//! (including the MemWAL rules, word for word), and the native executor.

mod builder;
pub(crate) mod exec;

pub use builder::{
    validate, MergeInsertBuilder, MergeInsertParams, MergeResult, MEM_WAL_NATIVE_UNSUPPORTED,
};
