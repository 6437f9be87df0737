//! Planning one merge insert against one version, in steps that each take
//! plain inputs (the source rows, the version's fragments, its key index)
//! and can be tested alone:
//!
//! 1. [`source_keys`]: encode the source keys; two source rows with one
//!    key are an error naming the key (they could both claim a target row).
//! 2. [`match_keys`]: look each key up in the key index (null keys never
//!    match), giving matched `(source row, target row)` pairs and the
//!    unmatched source rows.
//! 3. updates: [`plain_upsert`] (every column given, no filter: the source
//!    batch is the new fragment as it is) or [`update_matched`] (the
//!    general path: the `source.*`/`target.*` filter, missing columns kept
//!    from the target row).
//! 4. [`insert_unmatched`]: the unmatched source rows.
//! 5. [`delete_by_source`]: live target rows no source key matches (O(n)).
//! 6. [`plan`] runs them in order and [`Planned::new_rows`] assembles the
//!    new fragment's rows.
//!
//! The table's executor (`crate::table::merge`) turns the plan into a
//! commit and keeps the key index current.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, interleave_record_batch, take_record_batch};
use arrow_schema::{Field, Schema, SchemaRef};
use hashbrown::HashSet;
use roaring::RoaringBitmap;

use super::MergeInsert;
use crate::error::{Error, Result};
use crate::filter::{Predicate, Resolve};
use crate::fragment::LoadedFragment;
use crate::keys::{Key, KeyEncoder, KeyIndex, RowAddr};

/// What a plan decided: the rows of the new fragment, the rows that stop
/// being live, the counts, and what the key index must learn on commit.
#[derive(Debug, Default)]
pub struct Planned {
    /// Source rows inserted.
    pub inserted: u64,
    /// Target rows replaced by their source row.
    pub updated: u64,
    /// Target rows deleted by the by-source clause.
    pub deleted: u64,
    /// Target rows that stop being live, with their keys.
    pub removed: Vec<(Key, RowAddr)>,
    /// Keys of the rows of the new fragment, in order.
    pub new_keys: Vec<Option<Key>>,
    /// Parts of the new fragment's rows, in order.
    pub new_parts: Vec<RecordBatch>,
    /// Row offsets to delete, per fragment id.
    pub deletions: HashMap<u64, RoaringBitmap>,
}

impl Planned {
    /// Whether the plan changes nothing.
    pub fn is_empty(&self) -> bool {
        self.new_parts.is_empty() && self.deletions.is_empty()
    }

    /// The new fragment's rows as one batch (`None` when there are none).
    pub fn new_rows(&mut self, schema: &SchemaRef) -> Result<Option<RecordBatch>> {
        Ok(match self.new_parts.len() {
            0 => None,
            1 => self.new_parts.pop(),
            _ => Some(concat_batches(schema, &self.new_parts)?),
        })
    }

    /// Records that the target row `addr` (key `key`) stops being live.
    fn remove(&mut self, key: Option<&Key>, addr: RowAddr) {
        self.deletions
            .entry(addr.frag)
            .or_default()
            .insert(addr.row);
        if let Some(k) = key {
            self.removed.push((k.clone(), addr));
        }
    }
}

/// The source rows of a merge, aligned to the table schema.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The rows, in the table schema (missing columns null).
    pub rows: &'a RecordBatch,
    /// For each table column, whether the source gave it.
    pub present: &'a [bool],
}

/// Source keys matched against the key index.
#[derive(Debug, Default, PartialEq)]
pub struct Matches {
    /// Source row of each match.
    pub source: Vec<usize>,
    /// Target row of each match.
    pub target: Vec<RowAddr>,
    /// Source rows that match no target row.
    pub unmatched: Vec<usize>,
}

/// Step 1: the source rows' keys, and the set of them; an error names the
/// first key two source rows share.
pub fn source_keys<'k>(
    enc: &KeyEncoder,
    src: &RecordBatch,
    keys: &'k [Option<Key>],
) -> Result<HashSet<&'k Key>> {
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
    Ok(seen)
}

/// Step 2: each source key looked up in `index`.
pub fn match_keys(keys: &[Option<Key>], index: &KeyIndex) -> Matches {
    let mut m = Matches::default();
    for (i, k) in keys.iter().enumerate() {
        let addrs = k.as_ref().map(|k| index.get(k)).unwrap_or_default();
        if addrs.is_empty() {
            m.unmatched.push(i);
        }
        for a in addrs {
            m.source.push(i);
            m.target.push(a);
        }
    }
    m
}

/// Whether step 3 can take the fast path: update all without a filter,
/// insert all, every column given, no source row matching two target rows.
pub fn is_plain_upsert(p: &MergeInsert, src: Source<'_>, m: &Matches) -> bool {
    p.when_matched_update_all
        && p.when_matched_update_all_filt.is_none()
        && p.when_not_matched_insert_all
        && src.present.iter().all(|h| *h)
        && m.source.windows(2).all(|w| w[0] != w[1])
}

/// Step 3, fast path: every source row goes into the new fragment as it is
/// (the source batch itself, no copies); every matched target row goes.
pub fn plain_upsert(src: Source<'_>, keys: &[Option<Key>], m: &Matches, out: &mut Planned) {
    for (&si, addr) in m.source.iter().zip(&m.target) {
        out.remove(keys[si].as_ref(), *addr);
    }
    out.updated = m.source.len() as u64;
    out.inserted = m.unmatched.len() as u64;
    out.new_keys = keys.to_vec();
    if src.rows.num_rows() > 0 {
        out.new_parts.push(src.rows.clone());
    }
}

/// Step 3, general path: matched rows where the update filter holds get
/// the source's columns and keep the target's others.
pub fn update_matched(
    p: &MergeInsert,
    fragments: &[LoadedFragment],
    schema: &SchemaRef,
    src: Source<'_>,
    keys: &[Option<Key>],
    m: &Matches,
    out: &mut Planned,
) -> Result<()> {
    if m.source.is_empty() {
        return Ok(());
    }
    let target_rows = fetch_rows(fragments, schema, &m.target)?;
    let source_rows = take(src.rows, &m.source)?;
    let keep = match &p.when_matched_update_all_filt {
        None => (0..m.source.len()).collect(),
        Some(sql) => filter_matches(sql, schema, src.present, &source_rows, &target_rows)?,
    };
    if keep.is_empty() {
        return Ok(());
    }
    let s = take(&source_rows, &keep)?;
    let t = take(&target_rows, &keep)?;
    let cols: Vec<ArrayRef> = src
        .present
        .iter()
        .enumerate()
        .map(|(j, has)| if *has { s.column(j) } else { t.column(j) }.clone())
        .collect();
    out.new_parts
        .push(RecordBatch::try_new(schema.clone(), cols)?);
    for &i in &keep {
        let key = keys[m.source[i]].as_ref();
        out.remove(key, m.target[i]);
        if let Some(k) = key {
            out.new_keys.push(Some(k.clone()));
        }
    }
    out.updated = keep.len() as u64;
    Ok(())
}

/// The matches (by position) for which the update filter `sql` is true
/// over the joined `source.*` / `target.*` rows.
fn filter_matches(
    sql: &str,
    schema: &Schema,
    present: &[bool],
    source_rows: &RecordBatch,
    target_rows: &RecordBatch,
) -> Result<Vec<usize>> {
    let js = joined_schema(schema, present);
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
    Ok(mask
        .iter()
        .enumerate()
        .filter(|(_, v)| *v == Some(true))
        .map(|(i, _)| i)
        .collect())
}

/// Step 4: the source rows that match nothing become new rows.
pub fn insert_unmatched(
    src: Source<'_>,
    keys: &[Option<Key>],
    m: &Matches,
    out: &mut Planned,
) -> Result<()> {
    if m.unmatched.is_empty() {
        return Ok(());
    }
    out.new_parts.push(take(src.rows, &m.unmatched)?);
    out.inserted = m.unmatched.len() as u64;
    out.new_keys
        .extend(m.unmatched.iter().map(|&i| keys[i].clone()));
    Ok(())
}

/// Step 5: every live target row whose key no source row has (and for
/// which the clause's filter, over bare target columns, holds) is deleted.
pub fn delete_by_source(
    filter: Option<&str>,
    fragments: &[LoadedFragment],
    schema: &Schema,
    enc: &KeyEncoder,
    seen: &HashSet<&Key>,
    out: &mut Planned,
) -> Result<()> {
    let pred = filter
        .map(|sql| Predicate::parse(sql, schema, Resolve::Plain))
        .transpose()?;
    for f in fragments {
        let fkeys = enc.encode(&f.batch)?;
        let mask = pred.as_ref().map(|p| p.mask(&f.batch)).transpose()?;
        for (row, k) in fkeys.iter().enumerate() {
            let row32 = row as u32;
            if f.deleted.contains(row32)
                || k.as_ref().is_some_and(|k| seen.contains(k))
                || mask.as_ref().is_some_and(|m| !m.value(row))
            {
                continue;
            }
            out.remove(
                k.as_ref(),
                RowAddr {
                    frag: f.id,
                    row: row32,
                },
            );
            out.deleted += 1;
        }
    }
    Ok(())
}

/// Plans `p` with the source `src` against a version's `fragments` and
/// key `index` (steps 1 to 5; see the module doc).
pub fn plan(
    p: &MergeInsert,
    schema: &SchemaRef,
    fragments: &[LoadedFragment],
    index: &KeyIndex,
    src: Source<'_>,
) -> Result<Planned> {
    let enc = KeyEncoder::new(schema, &p.on)?;
    let keys = enc.encode(src.rows)?;
    let seen = source_keys(&enc, src.rows, &keys)?;
    let m = match_keys(&keys, index);
    let mut out = Planned::default();
    if is_plain_upsert(p, src, &m) {
        plain_upsert(src, &keys, &m, &mut out);
    } else {
        if p.when_matched_update_all {
            update_matched(p, fragments, schema, src, &keys, &m, &mut out)?;
        }
        if p.when_not_matched_insert_all {
            insert_unmatched(src, &keys, &m, &mut out)?;
        }
    }
    if p.when_not_matched_by_source_delete {
        let filter = p.when_not_matched_by_source_delete_filt.as_deref();
        delete_by_source(filter, fragments, schema, &enc, &seen, &mut out)?;
    }
    Ok(out)
}

/// Schema of the joined rows an update filter sees: `source.x` for each
/// column the source has, `target.x` for every table column.
fn joined_schema(target: &Schema, present: &[bool]) -> SchemaRef {
    let renamed = |f: &Field, side: &str| {
        f.clone()
            .with_name(format!("{side}.{}", f.name()))
            .with_nullable(true)
    };
    let mut fields: Vec<Field> = Vec::new();
    for (f, has) in target.fields().iter().zip(present) {
        if *has {
            fields.push(renamed(f, "source"));
        }
    }
    fields.extend(target.fields().iter().map(|f| renamed(f, "target")));
    Arc::new(Schema::new(fields))
}

/// Target rows at `addrs`, in that order.
fn fetch_rows(
    fragments: &[LoadedFragment],
    schema: &SchemaRef,
    addrs: &[RowAddr],
) -> Result<RecordBatch> {
    if addrs.is_empty() {
        return Ok(RecordBatch::new_empty(schema.clone()));
    }
    let pos: HashMap<u64, usize> = fragments
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    let batches: Vec<&RecordBatch> = fragments.iter().map(|f| &f.batch).collect();
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

#[cfg(test)]
mod tests;
