//! Merge insert at the JS boundary: the options lib/merge.ts's chaining
//! builder collects, the checked [`MergeInsertPlan`] it turns them into
//! (validated once, by the core, before any data is converted or sent), and
//! the result as a JS object.

use std::sync::Arc;
use std::time::Duration;

use memwal_core::{MergeInsert, MergeInsertParams, MergeResult, Table as CoreTable};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use crate::error;

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
        p.mem_wal = o.mem_wal;
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
    /// Rows written: inserted plus updated, as @lancedb/lancedb counts them.
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

/// A merge insert whose clause set has been checked, bound to its table
/// (`Table.prepareMergeInsert` makes one); `execute` may run it any number
/// of times, each with its own data.
#[napi]
pub struct MergeInsertPlan {
    table: Arc<dyn CoreTable>,
    merge: MergeInsert,
}

impl MergeInsertPlan {
    /// Checks `options` (the MemWAL rules included) for `table`.
    pub fn prepare(table: Arc<dyn CoreTable>, options: MergeInsertOptions) -> napi::Result<Self> {
        let params: MergeInsertParams = options.into();
        let merge = params.validate().map_err(error::core)?;
        Ok(Self { table, merge })
    }
}

#[napi]
impl MergeInsertPlan {
    /// Runs the merge with `data` (an Arrow IPC stream or file).
    #[napi(catch_unwind)]
    pub async fn execute(&self, data: Buffer) -> napi::Result<MergeInsertResult> {
        let data = crate::data::decode(&data)?;
        let r = self
            .table
            .merge_insert(self.merge.clone(), data)
            .await
            .map_err(error::core)?;
        Ok(r.into())
    }
}
