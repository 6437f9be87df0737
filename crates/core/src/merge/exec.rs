//! The native merge-insert executor. With the key index, matching k source
//! rows reads only the k matched target rows (O(k)); a delete-by-source
//! clause has to look at every target row and so is O(n).
//!
//! Plan, against one version: align the source to the table schema, encode
//! keys (null keys never match; duplicate keys are an error naming the
//! key), look each key up, evaluate the update filter on the joined
//! `source.*`/`target.*` rows, then write updated + inserted rows as one new
//! fragment and the replaced/deleted rows as deletion vectors. A lost
//! commit race re-plans on the new version, so keys are re-checked.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, interleave_record_batch, take_record_batch};
use arrow_schema::{Field, Schema, SchemaRef};
use hashbrown::HashSet;
use roaring::RoaringBitmap;

use super::{MergeInsertParams, MergeResult};
use crate::error::{Error, Result};
use crate::filter::{Predicate, Resolve};
use crate::keys::{Key, KeyEncoder, KeyIndex, RowAddr};
use crate::schema::{align_all, check_source_schema};
use crate::table::commit::Change;
use crate::table::{build_index, NativeTable, Snapshot};
use crate::data::Data;
use crate::deadline::Deadline;

/// What the plan decided, and what the key index must learn on commit.
#[derive(Debug, Default)]
struct Outcome {
    inserted: u64,
    updated: u64,
    deleted: u64,
    /// Target rows that stop being live.
    removed: Vec<(Key, RowAddr)>,
    /// Keys of the rows of the new fragment, in order.
    new_keys: Vec<Option<Key>>,
}

/// Schema of the joined rows an update filter sees: `source.x` for each
/// column the source has, `target.x` for every table column.
fn joined_schema(target: &Schema, present: &[bool]) -> SchemaRef {
    let mut fields: Vec<Field> = Vec::new();
    for (f, has) in target.fields().iter().zip(present) {
        if *has {
            fields.push(
                f.as_ref()
                    .clone()
                    .with_name(format!("source.{}", f.name()))
                    .with_nullable(true),
            );
        }
    }
    for f in target.fields() {
        fields.push(
            f.as_ref()
                .clone()
                .with_name(format!("target.{}", f.name()))
                .with_nullable(true),
        );
    }
    Arc::new(Schema::new(fields))
}

/// Target rows at `addrs`, in that order.
fn fetch_rows(snap: &Snapshot, schema: &SchemaRef, addrs: &[RowAddr]) -> Result<RecordBatch> {
    if addrs.is_empty() {
        return Ok(RecordBatch::new_empty(schema.clone()));
    }
    let pos: HashMap<u64, usize> = snap
        .fragments
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    let batches: Vec<&RecordBatch> = snap.fragments.iter().map(|f| &f.batch).collect();
    let idx = addrs
        .iter()
        .map(|a| {
            pos.get(&a.frag)
                .map(|p| (*p, a.row as usize))
                .ok_or_else(|| {
                    Error::internal(format!("key index points at missing fragment {}", a.frag))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(interleave_record_batch(&batches, &idx)?)
}

fn take(batch: &RecordBatch, rows: &[usize]) -> Result<RecordBatch> {
    let idx = UInt32Array::from_iter_values(rows.iter().map(|r| *r as u32));
    Ok(take_record_batch(batch, &idx)?)
}

fn plan(
    p: &MergeInsertParams,
    snap: &Snapshot,
    index: &KeyIndex,
    src: &RecordBatch,
    present: &[bool],
) -> Result<(Option<Change>, Outcome)> {
    let schema = snap.schema();
    let enc = KeyEncoder::new(&schema, &p.on)?;
    let keys = enc.encode(src)?;

    // Ambiguity: two source rows with one key could both claim a target row.
    let mut seen: HashSet<&Key> = HashSet::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            if !seen.insert(k) {
                return Err(Error::invalid(format!(
                    "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on {}",
                    enc.describe(src, i)
                )));
            }
        }
    }

    let mut matched_src: Vec<usize> = Vec::new();
    let mut matched_addr: Vec<RowAddr> = Vec::new();
    let mut unmatched: Vec<usize> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let addrs = k.as_ref().map(|k| index.get(k)).unwrap_or_default();
        if addrs.is_empty() {
            unmatched.push(i);
        }
        for a in addrs {
            matched_src.push(i);
            matched_addr.push(a);
        }
    }

    let mut out = Outcome::default();
    let mut deletions: HashMap<u64, RoaringBitmap> = HashMap::new();
    let mut new_parts: Vec<RecordBatch> = Vec::new();

    // A plain upsert (update all without a filter, insert all, every column
    // given, no source row matching two target rows) puts every source row
    // into the new fragment as it is: the source batch itself, no copies.
    let plain_upsert = p.when_matched_update_all
        && p.when_matched_update_all_filt.is_none()
        && p.when_not_matched_insert_all
        && present.iter().all(|h| *h)
        && matched_src.windows(2).all(|w| w[0] != w[1]);
    if plain_upsert {
        for (&si, addr) in matched_src.iter().zip(&matched_addr) {
            deletions.entry(addr.frag).or_default().insert(addr.row);
            if let Some(k) = &keys[si] {
                out.removed.push((k.clone(), *addr));
            }
        }
        out.updated = matched_src.len() as u64;
        out.inserted = unmatched.len() as u64;
        out.new_keys = keys.clone();
        if src.num_rows() > 0 {
            new_parts.push(src.clone());
        }
    }

    if !plain_upsert && p.when_matched_update_all && !matched_src.is_empty() {
        let target_rows = fetch_rows(snap, &schema, &matched_addr)?;
        let source_rows = take(src, &matched_src)?;
        let keep: Vec<usize> = match &p.when_matched_update_all_filt {
            None => (0..matched_src.len()).collect(),
            Some(sql) => {
                let js = joined_schema(&schema, present);
                let pred = Predicate::parse(sql, &js, Resolve::Merge)?;
                let mut cols: Vec<ArrayRef> = Vec::new();
                for (j, has) in present.iter().enumerate() {
                    if *has {
                        cols.push(source_rows.column(j).clone());
                    }
                }
                cols.extend(target_rows.columns().iter().cloned());
                let joined = RecordBatch::try_new(js, cols)?;
                let mask = pred.mask(&joined)?;
                mask.iter()
                    .enumerate()
                    .filter(|(_, v)| *v == Some(true))
                    .map(|(i, _)| i)
                    .collect()
            }
        };
        if !keep.is_empty() {
            let s = take(&source_rows, &keep)?;
            let t = take(&target_rows, &keep)?;
            let cols: Vec<ArrayRef> = present
                .iter()
                .enumerate()
                .map(|(j, has)| {
                    if *has {
                        s.column(j).clone()
                    } else {
                        t.column(j).clone()
                    }
                })
                .collect();
            new_parts.push(RecordBatch::try_new(schema.clone(), cols)?);
            for &i in &keep {
                let (si, addr) = (matched_src[i], matched_addr[i]);
                deletions.entry(addr.frag).or_default().insert(addr.row);
                if let Some(k) = &keys[si] {
                    out.removed.push((k.clone(), addr));
                    out.new_keys.push(Some(k.clone()));
                }
            }
            out.updated = keep.len() as u64;
        }
    }

    if !plain_upsert && p.when_not_matched_insert_all && !unmatched.is_empty() {
        new_parts.push(take(src, &unmatched)?);
        out.inserted = unmatched.len() as u64;
        out.new_keys
            .extend(unmatched.iter().map(|&i| keys[i].clone()));
    }

    if p.when_not_matched_by_source_delete {
        let pred = p
            .when_not_matched_by_source_delete_filt
            .as_deref()
            .map(|sql| Predicate::parse(sql, &schema, Resolve::Plain))
            .transpose()?;
        for f in &snap.fragments {
            let fkeys = enc.encode(&f.batch)?;
            let mask = pred.as_ref().map(|p| p.mask(&f.batch)).transpose()?;
            for (row, k) in fkeys.iter().enumerate() {
                if f.deleted.contains(row as u32) {
                    continue;
                }
                if k.as_ref().is_some_and(|k| seen.contains(k)) {
                    continue;
                }
                if mask.as_ref().is_some_and(|m| !m.value(row)) {
                    continue;
                }
                deletions.entry(f.id).or_default().insert(row as u32);
                if let Some(k) = k {
                    out.removed.push((
                        k.clone(),
                        RowAddr {
                            frag: f.id,
                            row: row as u32,
                        },
                    ));
                }
                out.deleted += 1;
            }
        }
    }

    if new_parts.is_empty() && deletions.is_empty() {
        return Ok((None, out));
    }
    let new_rows = match new_parts.len() {
        0 => None,
        1 => new_parts.pop(),
        _ => Some(concat_batches(&schema, &new_parts)?),
    };
    let change = Change {
        new_rows,
        deletions,
        operation: "merge_insert",
        metadata: p.commit_metadata.clone(),
        ..Default::default()
    };
    Ok((Some(change), out))
}

impl NativeTable {
    /// Runs a validated merge insert (see the module doc).
    pub fn merge_insert_sync(&self, p: &MergeInsertParams, data: Data) -> Result<MergeResult> {
        super::validate(p)?;
        let deadline = Deadline::new(p.timeout);
        let num_rows = data.num_rows() as u64;
        // Schema checks that do not depend on the version run once, up front.
        let mut aligned: Option<(Schema, RecordBatch, Vec<bool>)> = None;
        let mut temp_index: Option<KeyIndex> = None;
        let (version, out, attempts) = self.write_with_retry(
            deadline,
            |snap| {
                let schema = snap.schema();
                let fresh = aligned
                    .as_ref()
                    .is_some_and(|(s, ..)| *s == snap.manifest.schema);
                if !fresh {
                    let present = check_source_schema(&data.schema, &schema)?;
                    let src = align_all(&data.batches, &schema)?;
                    aligned = Some((snap.manifest.schema.clone(), src, present));
                }
                let (_, src, present) = aligned
                    .as_ref()
                    .ok_or_else(|| Error::internal("no source"))?;
                if p.use_index {
                    let guard = self.ensure_index(snap, &p.on)?;
                    let index = guard
                        .as_ref()
                        .ok_or_else(|| Error::internal("index missing"))?;
                    plan(p, snap, index, src, present)
                } else {
                    temp_index = Some(build_index(snap, &p.on)?);
                    let index = temp_index
                        .as_ref()
                        .ok_or_else(|| Error::internal("index missing"))?;
                    plan(p, snap, index, src, present)
                }
            },
            |slot, committed, out| {
                // Keep the index current: it now describes the new version.
                let Some(idx) = slot.as_mut() else { return };
                if !p.use_index
                    || idx.on() != p.on.as_slice()
                    || idx.version + 1 != committed.manifest.version
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
                            idx.insert(
                                k.clone(),
                                RowAddr {
                                    frag: *frag,
                                    row: row as u32,
                                },
                            );
                        }
                    }
                }
                idx.version = committed.manifest.version;
            },
        )?;
        Ok(MergeResult {
            version: match version {
                Some(v) => v,
                None => self.version_sync()?,
            },
            num_inserted_rows: out.inserted,
            num_updated_rows: out.updated,
            num_deleted_rows: out.deleted,
            num_attempts: attempts,
            num_rows,
        })
    }
}
