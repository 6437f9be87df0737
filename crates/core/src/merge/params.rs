//! What a merge insert is asked to do ([`MergeInsertParams`], plain and
//! mutable, as a builder or a request body fills it), the checked form every
//! table takes ([`MergeInsert`]: validated once, when it is made), and what
//! it did ([`MergeResult`]). Validation runs before any data is touched or
//! any request is sent; nothing downstream checks the clause set again.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::time::Duration;

use crate::error::{Error, Result};

/// Message of the NotSupported error for MemWAL on a native table.
pub const MEM_WAL_NATIVE_UNSUPPORTED: &str =
    "MemWAL is not supported for native (local) tables. MemWAL is only available for remote (LanceDB Cloud) tables.";

/// What a merge insert should do; [`MergeInsertParams::validate`] turns it
/// into the [`MergeInsert`] a table runs.
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
    /// Route the upsert through the MemWAL write path (`Some(true)`), the
    /// standard path (`Some(false)`), or as the table's LSM write spec says
    /// (`None`: the MemWAL for an upsert when a spec is recorded).
    pub mem_wal: Option<bool>,
    /// Metadata to commit with the new version (internal: the server's
    /// MemWAL flush records its sequence number here).
    pub commit_metadata: BTreeMap<String, String>,
    /// Commit only on a version whose metadata value under this key (a
    /// number; missing is 0) is at most this bound; otherwise the merge
    /// fails with [`crate::Error::Fenced`] and commits nothing (internal:
    /// a MemWAL flush must never land after a newer writer's flush).
    pub commit_guard: Option<(String, u64)>,
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
            mem_wal: None,
            commit_metadata: BTreeMap::new(),
            commit_guard: None,
        }
    }

    /// Checks the clause set (see [`validate`]) and returns the form a
    /// table runs.
    pub fn validate(self) -> Result<MergeInsert> {
        validate(&self)?;
        Ok(MergeInsert(self))
    }
}

/// A merge insert whose clause set has been checked: only
/// [`MergeInsertParams::validate`] makes one, so a table that receives one
/// does not check again. Reads as its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeInsert(MergeInsertParams);

impl MergeInsert {
    /// The parameters, for a caller that needs to change them (they must be
    /// validated again).
    pub fn into_params(self) -> MergeInsertParams {
        self.0
    }
}

impl Deref for MergeInsert {
    type Target = MergeInsertParams;
    fn deref(&self) -> &MergeInsertParams {
        &self.0
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
    /// Rows written, as LanceDB counts them: inserted plus updated (a source
    /// row matching two target rows writes two). On the MemWAL path, where
    /// keys are unique, the rows sent.
    pub num_rows: u64,
}

/// Checks the clause set, then the MemWAL rules in the order the protocol
/// fixes (messages word for word). Runs before anything is sent or written.
fn validate(p: &MergeInsertParams) -> Result<()> {
    if p.on.is_empty() {
        return Err(Error::invalid(
            "merge insert needs at least one key column in `on`",
        ));
    }
    if p.mem_wal == Some(true) {
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
