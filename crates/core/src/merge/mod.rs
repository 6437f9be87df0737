//! Merge insert, independent of where the rows live: its parameters and
//! their validation (the MemWAL rules included, word for word), the checked
//! form every table takes, its result ([`params`]), and the planning steps
//! against one version's fragments and key index ([`plan`]). The native
//! executor that commits a plan is `crate::table::merge`; remote and served
//! tables take the same [`MergeInsert`].

pub mod params;
pub mod plan;

pub use params::{MergeInsert, MergeInsertParams, MergeResult, MEM_WAL_NATIVE_UNSUPPORTED};
