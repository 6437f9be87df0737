//! The native merge-insert executor: plans against the latest version with
//! [`crate::merge::plan`], commits the plan, re-plans after a lost commit
//! race (so keys are checked again), and keeps the key index current.
//!
//! With the key index, matching k source rows reads only the k matched
//! target rows (O(k)); a delete-by-source clause looks at every target row
//! and so is O(n). Updated and inserted rows become one new fragment, the
//! replaced and deleted rows deletion vectors.

use arrow::array::RecordBatch;
use arrow_schema::Schema;

use super::commit::{Change, Committed};
use super::{build_index, NativeTable, Snapshot};
use crate::data::Data;
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::keys::{KeyIndex, RowAddr};
use crate::merge::plan::{plan, Planned, Source};
use crate::merge::{MergeInsert, MergeResult};
use crate::schema::{align_new_rows, check_source_schema};

/// The source aligned to one schema: the schema, the rows, which columns
/// the source gave.
type Aligned = (Schema, RecordBatch, Vec<bool>);

impl NativeTable {
    /// Runs a merge insert (see the module doc).
    pub fn merge_insert_sync(&self, p: &MergeInsert, data: Data) -> Result<MergeResult> {
        let deadline = Deadline::new(p.timeout);
        // Schema checks that do not depend on the version run once, up front.
        let mut aligned: Option<Aligned> = None;
        let (version, out, attempts) = self.write_with_retry(
            deadline,
            |snap| {
                let (_, rows, present) = align_once(&mut aligned, &data, snap)?;
                self.plan_on(p, snap, Source { rows, present })
            },
            |slot, committed, out| learn_commit(p, slot, committed, out),
        )?;
        Ok(MergeResult {
            version: self.committed_or_current(version)?,
            num_inserted_rows: out.inserted,
            num_updated_rows: out.updated,
            num_deleted_rows: out.deleted,
            num_attempts: attempts,
            // Rows written, as LanceDB counts them: a source row that
            // updates two target rows writes two.
            num_rows: out.inserted + out.updated,
        })
    }

    /// Plans `p` against `snap` with the table's key index (or, without
    /// `use_index`, one built for this call) and makes the change.
    fn plan_on(
        &self,
        p: &MergeInsert,
        snap: &Snapshot,
        src: Source<'_>,
    ) -> Result<(Option<Change>, Planned)> {
        check_guard(p, snap, &self.inner.name)?;
        let schema = snap.schema();
        let mut planned = if p.use_index {
            let guard = self.ensure_index(snap, &p.on)?;
            let index = guard
                .as_ref()
                .ok_or_else(|| Error::internal("index missing"))?;
            plan(p, &schema, &snap.fragments, index, src)?
        } else {
            let index = build_index(snap, &p.on)?;
            plan(p, &schema, &snap.fragments, &index, src)?
        };
        if planned.is_empty() {
            return Ok((None, planned));
        }
        let change = Change {
            new_rows: planned.new_rows(&schema)?,
            deletions: std::mem::take(&mut planned.deletions),
            operation: "merge_insert",
            metadata: p.commit_metadata.clone(),
            ..Default::default()
        };
        Ok((Some(change), planned))
    }
}

/// Refuses to plan on a version whose guarded metadata value is past the
/// merge's bound (see `MergeInsertParams::commit_guard`): every attempt
/// plans on the latest version, so a commit never lands after it.
fn check_guard(p: &MergeInsert, snap: &Snapshot, table: &str) -> Result<()> {
    let Some((key, bound)) = &p.commit_guard else {
        return Ok(());
    };
    let found: u64 = snap
        .manifest
        .metadata
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if found > *bound {
        return Err(Error::Fenced {
            table: table.to_string(),
            message: format!(
                "version {} records {key} = {found}, past this writer's {bound}: another writer has taken over",
                snap.manifest.version
            ),
        });
    }
    Ok(())
}

/// The source aligned to `snap`'s schema, computed again only when the
/// schema differs from the last attempt's.
fn align_once<'a>(
    slot: &'a mut Option<Aligned>,
    data: &Data,
    snap: &Snapshot,
) -> Result<&'a Aligned> {
    let fresh = slot
        .as_ref()
        .is_some_and(|(s, ..)| *s == snap.manifest.schema);
    if !fresh {
        let schema = snap.schema();
        let present = check_source_schema(&data.schema, &schema)?;
        let rows = align_new_rows(&data.batches, &schema)?;
        *slot = Some((snap.manifest.schema.clone(), rows, present));
    }
    slot.as_ref().ok_or_else(|| Error::internal("no source"))
}

/// Teaches the cached key index what a committed merge changed, so that
/// it describes the new version (or drops it when it cannot).
fn learn_commit(
    p: &MergeInsert,
    slot: &mut Option<KeyIndex>,
    committed: &Committed,
    out: &Planned,
) {
    let Some(idx) = slot.as_mut() else { return };
    if !p.use_index || idx.on() != p.on.as_slice() || idx.version + 1 != committed.manifest.version
    {
        *slot = None;
        return;
    }
    for (k, a) in &out.removed {
        idx.remove_addr(k, *a);
    }
    let mut row_keys = out.new_keys.iter();
    for (frag, batch) in &committed.new_fragments {
        for row in 0..batch.num_rows() {
            if let Some(Some(k)) = row_keys.next() {
                let addr = RowAddr {
                    frag: *frag,
                    row: row as u32,
                };
                idx.insert(k.clone(), addr);
            }
        }
    }
    idx.version = committed.manifest.version;
}
