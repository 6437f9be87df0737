//! Merge-insert parameters and result as JS objects. The chaining builder
//! is `lib/merge.ts`; validation (MemWAL rules included) is the core's.

use std::time::Duration;

use memwal_core::{MergeInsertParams, MergeResult};
use napi_derive::napi;

/// The builder's state, as lib/merge.ts collects it.
#[napi(object)]
pub struct MergeInsertOptions {
    pub on: Vec<String>,
    pub when_matched_update_all: bool,
    pub when_matched_update_all_filt: Option<String>,
    pub when_not_matched_insert_all: bool,
    pub when_not_matched_by_source_delete: bool,
    pub when_not_matched_by_source_delete_filt: Option<String>,
    pub use_index: Option<bool>,
    pub timeout_ms: Option<f64>,
    pub mem_wal: Option<bool>,
}

impl From<MergeInsertOptions> for MergeInsertParams {
    fn from(o: MergeInsertOptions) -> Self {
        let mut p = MergeInsertParams::new(o.on);
        p.when_matched_update_all = o.when_matched_update_all;
        p.when_matched_update_all_filt = o.when_matched_update_all_filt;
        p.when_not_matched_insert_all = o.when_not_matched_insert_all;
        p.when_not_matched_by_source_delete = o.when_not_matched_by_source_delete;
        p.when_not_matched_by_source_delete_filt = o.when_not_matched_by_source_delete_filt;
        p.use_index = o.use_index.unwrap_or(true);
        p.timeout = o
            .timeout_ms
            .filter(|t| t.is_finite() && *t >= 0.0)
            .map(|t| Duration::from_micros((t * 1000.0) as u64));
        p.mem_wal = o.mem_wal.unwrap_or(false);
        p
    }
}

/// What a merge insert did.
#[napi(object)]
pub struct MergeInsertResult {
    /// Table version after the merge.
    pub version: i64,
    /// Rows inserted.
    pub num_inserted_rows: i64,
    /// Rows updated.
    pub num_updated_rows: i64,
    /// Rows deleted.
    pub num_deleted_rows: i64,
    /// Commit attempts (requests, for remote tables).
    pub num_attempts: i64,
    /// Source rows.
    pub num_rows: i64,
}

impl From<MergeResult> for MergeInsertResult {
    fn from(r: MergeResult) -> Self {
        Self {
            version: r.version as i64,
            num_inserted_rows: r.num_inserted_rows as i64,
            num_updated_rows: r.num_updated_rows as i64,
            num_deleted_rows: r.num_deleted_rows as i64,
            num_attempts: r.num_attempts as i64,
            num_rows: r.num_rows as i64,
        }
    }
}

/// Runs the merge-insert validation alone (so JS can fail before it
/// converts data or sends anything).
#[napi(catch_unwind)]
pub fn validate_merge_insert(options: MergeInsertOptions) -> napi::Result<()> {
    memwal_core::merge::validate(&options.into()).map_err(crate::error::core)
}
