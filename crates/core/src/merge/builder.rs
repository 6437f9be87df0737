//! The merge-insert builder and the validation that runs before any data
//! is touched or any request is sent.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::api::Table;
use crate::data::Data;

/// Message of the NotSupported error for MemWAL on a native table.
pub const MEM_WAL_NATIVE_UNSUPPORTED: &str =
    "MemWAL is not supported for native (local) tables. MemWAL is only available for remote (LanceDB Cloud) tables.";

/// What a merge insert should do; built by [`MergeInsertBuilder`].
#[derive(Debug, Clone, PartialEq)]
pub struct MergeInsertParams {
    /// Key columns rows are matched on.
    pub on: Vec<String>,
    /// Update matched target rows with the source row.
    pub when_matched_update_all: bool,
    /// Only update matched rows for which this SQL filter (over `source.`
    /// and `target.` columns) is true.
    pub when_matched_update_all_filt: Option<String>,
    /// Insert source rows that match no target row.
    pub when_not_matched_insert_all: bool,
    /// Delete target rows that match no source row.
    pub when_not_matched_by_source_delete: bool,
    /// Only delete those for which this SQL filter (bare target columns) is true.
    pub when_not_matched_by_source_delete_filt: Option<String>,
    /// Use the key index (default true).
    pub use_index: bool,
    /// Give up (committing nothing) after this long.
    pub timeout: Option<Duration>,
    /// Route the upsert through the MemWAL write path.
    pub mem_wal: bool,
    /// Metadata to commit with the new version (internal: the server's
    /// MemWAL flush records its sequence number here).
    pub commit_metadata: BTreeMap<String, String>,
}

impl MergeInsertParams {
    /// Parameters matching on `on`, with no clause set yet.
    pub fn new(on: Vec<String>) -> Self {
        Self {
            on,
            when_matched_update_all: false,
            when_matched_update_all_filt: None,
            when_not_matched_insert_all: false,
            when_not_matched_by_source_delete: false,
            when_not_matched_by_source_delete_filt: None,
            use_index: true,
            timeout: None,
            mem_wal: false,
            commit_metadata: BTreeMap::new(),
        }
    }
}

/// What a merge insert did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MergeResult {
    /// Table version after the merge (unchanged when nothing changed; for a
    /// MemWAL upsert, the base version its rows will be merged on top of).
    pub version: u64,
    /// Source rows inserted as new rows.
    pub num_inserted_rows: u64,
    /// Target rows replaced by their matching source row.
    pub num_updated_rows: u64,
    /// Target rows deleted because no source row matched them.
    pub num_deleted_rows: u64,
    /// Commit attempts, 1 unless another writer won a race.
    pub num_attempts: u32,
    /// Source rows the merge read.
    pub num_rows: u64,
}

/// Checks the clause set, then the MemWAL rules in the order the protocol
/// fixes (messages word for word). Runs before anything is sent or written.
pub fn validate(p: &MergeInsertParams) -> Result<()> {
    if p.on.is_empty() {
        return Err(Error::invalid(
            "merge insert needs at least one key column in `on`",
        ));
    }
    if p.mem_wal {
        if !p.when_matched_update_all {
            return Err(Error::invalid(
                "MemWAL requires when_matched_update_all() to be set",
            ));
        }
        if p.when_matched_update_all_filt.is_some() {
            return Err(Error::invalid(
                "MemWAL does not support conditional when_matched_update_all (no filter allowed)",
            ));
        }
        if !p.when_not_matched_insert_all {
            return Err(Error::invalid(
                "MemWAL requires when_not_matched_insert_all() to be set",
            ));
        }
        if p.when_not_matched_by_source_delete {
            return Err(Error::invalid(
                "MemWAL does not support when_not_matched_by_source_delete()",
            ));
        }
    }
    if !p.when_matched_update_all
        && !p.when_not_matched_insert_all
        && !p.when_not_matched_by_source_delete
    {
        return Err(Error::invalid(
            "The merge insert job is not configured to change the data in any way",
        ));
    }
    Ok(())
}

/// Builds and runs a merge insert against any [`Table`].
#[derive(Debug, Clone)]
pub struct MergeInsertBuilder {
    table: Arc<dyn Table>,
    params: MergeInsertParams,
}

impl MergeInsertBuilder {
    /// A builder matching rows of `table` on `on`.
    pub fn new(table: Arc<dyn Table>, on: Vec<String>) -> Self {
        Self {
            table,
            params: MergeInsertParams::new(on),
        }
    }
    /// Update matched rows (only where `filter` holds, if given).
    pub fn when_matched_update_all(&mut self, filter: Option<String>) -> &mut Self {
        self.params.when_matched_update_all = true;
        self.params.when_matched_update_all_filt = filter;
        self
    }
    /// Insert unmatched source rows.
    pub fn when_not_matched_insert_all(&mut self) -> &mut Self {
        self.params.when_not_matched_insert_all = true;
        self
    }
    /// Delete target rows no source row matches (only where `filter` holds).
    pub fn when_not_matched_by_source_delete(&mut self, filter: Option<String>) -> &mut Self {
        self.params.when_not_matched_by_source_delete = true;
        self.params.when_not_matched_by_source_delete_filt = filter;
        self
    }
    /// Use the key index (default true).
    pub fn use_index(&mut self, use_index: bool) -> &mut Self {
        self.params.use_index = use_index;
        self
    }
    /// Give up after `timeout`.
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.params.timeout = Some(timeout);
        self
    }
    /// Route through the MemWAL write path.
    pub fn mem_wal(&mut self, enabled: bool) -> &mut Self {
        self.params.mem_wal = enabled;
        self
    }
    /// The parameters so far.
    pub fn params(&self) -> &MergeInsertParams {
        &self.params
    }
    /// Validates, then runs the merge.
    pub async fn execute(&self, data: Data) -> Result<MergeResult> {
        validate(&self.params)?;
        self.table.merge_insert(self.params.clone(), data).await
    }
}
