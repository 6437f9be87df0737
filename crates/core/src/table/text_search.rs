//! Full-text search over tiers (a native table's fragments; a served table's base fragments and
//! memtable rows): every FTS-indexed column becomes a `memwal-fts` corpus of its index's segments
//! plus the rows of the tiers the index does not cover (so a row is found the moment it is
//! written: a fragment's rows tokenized once into a segment the table keeps, [`TextCache`]; a served
//! table's memtable rows per query), with the rows the tiers' masks leave out (deleted, superseded)
//! counted nowhere; the filter (`where`) only decides which rows may be answered. The answer is
//! `[selected..., _score Float32, _rowid UInt64 when asked]`, best first (LanceDB's layout).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, BooleanArray, Float32Array, RecordBatch, UInt64Array};
use arrow::compute::interleave;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_fts::{
    ColumnInput, Corpus, FtsQuery, LiveRows, ScoredRow, Segment, SegmentBuilder, UnindexedRow,
};
use roaring::RoaringTreemap;

use super::fts::texts_at;
use super::indices::cache_key;
use super::{lock, Snapshot};
use crate::error::{Error, Result};
use crate::fragment::LoadedFragment;
use crate::index::fts::TextIndex;
use crate::query::QueryRequest;
use crate::schema::projection;
use crate::vector::{RowIds, Tier, DEFAULT_K, ROW_ID_COLUMN};

/// The score column of a full-text answer.
pub const SCORE_COLUMN: &str = "_score";

/// The answer's schema: the selected columns, `_score`, then `_rowid` when asked.
pub fn answer_schema(schema: &Schema, req: &QueryRequest) -> Result<SchemaRef> {
    let mut fields: Vec<Field> = match projection(schema, req.columns.as_deref())? {
        Some(idx) => idx.iter().map(|i| schema.field(*i).clone()).collect(),
        None => schema.fields().iter().map(|f| f.as_ref().clone()).collect(),
    };
    fields.push(Field::new(SCORE_COLUMN, DataType::Float32, true));
    if req.with_row_id {
        fields.push(Field::new(ROW_ID_COLUMN, DataType::UInt64, true));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// One FTS-indexed column of the snapshot.
struct Indexed<'s> {
    column: String,
    position: usize,
    text: &'s TextIndex,
    covered: &'s std::collections::HashSet<u64>,
    /// The index's cache key (its files).
    key: String,
}

/// A table's full-text segments over fragments no FTS index covers yet, by (index, data file):
/// made by the first query that needs one and kept while its index and its file are in the version
/// read last, so rows written since the build are tokenized once, not on every query. A segment holds
/// every row of its fragment; rows deleted since are dead for the query, as in the index's own.
#[derive(Debug, Default)]
pub struct TextCache {
    segments: Mutex<HashMap<(String, String), Arc<Segment>>>,
}

impl TextCache {
    /// The segment of fragment `f` (data file `file`) for index `ix`, made if missing; entries of
    /// files `snap` no longer names are dropped when one is added.
    fn get(
        &self,
        snap: &Snapshot,
        ix: &Indexed<'_>,
        f: &LoadedFragment,
        file: &str,
    ) -> Result<Arc<Segment>> {
        let key = (ix.key.clone(), file.to_string());
        if let Some(s) = lock(&self.segments).get(&key) {
            return Ok(s.clone());
        }
        let col = f.batch.column(ix.position);
        let params = &ix.text.params;
        let mut b = SegmentBuilder::new(&ix.text.analyzer, params.with_position);
        for i in 0..col.len() {
            if let Some(texts) = texts_at(col, i) {
                b.add_texts((f.id << 32) | i as u64, texts)?;
            }
        }
        let seg = Arc::new(b.finish()?);
        seg.prepare_blocks(params.block_size as usize);
        let files: HashSet<&str> = snap
            .manifest
            .fragments
            .iter()
            .map(|m| m.file.as_str())
            .collect();
        let indexes: HashSet<String> = snap.indices.iter().map(|i| cache_key(&i.meta)).collect();
        let mut map = lock(&self.segments);
        map.retain(|(index, file), _| files.contains(file.as_str()) && indexes.contains(index));
        map.insert(key, seg.clone());
        Ok(seg)
    }
}

/// Segments of the tiers that are not fragments (a served table's memtable rows), each made
/// once: whoever holds one keeps it with one fixed set of tiers (their row ids and masks hold
/// only for it), so every query of that set after the first finds the rows tokenized.
#[derive(Debug, Default)]
pub struct TierSegments {
    segments: Mutex<HashMap<(String, usize), Arc<Segment>>>,
}

impl TierSegments {
    /// The segment of the live rows of tier `at` (`t`) for index `ix`, made if missing.
    fn get(&self, ix: &Indexed<'_>, at: usize, t: &Tier) -> Result<Arc<Segment>> {
        let key = (ix.key.clone(), at);
        if let Some(s) = lock(&self.segments).get(&key) {
            return Ok(s.clone());
        }
        let col = t.batch.column(ix.position);
        let params = &ix.text.params;
        let mut b = SegmentBuilder::new(&ix.text.analyzer, params.with_position);
        for i in 0..col.len() {
            if t.mask.as_ref().is_some_and(|m| !m.value(i)) {
                continue;
            }
            if let Some(texts) = texts_at(col, i) {
                b.add_texts(t.row_ids.get(i), texts)?;
            }
        }
        let seg = Arc::new(b.finish()?);
        seg.prepare_blocks(params.block_size as usize);
        lock(&self.segments).insert(key, seg.clone());
        Ok(seg)
    }
}

/// Runs `req.full_text` over `tiers` (masks: live rows) with `allowed` (masks: rows the filter
/// passes, `None` without a filter). A prefilter decides which rows may be answered; a postfilter
/// keeps what passes of the best `offset + limit` rows, then pages (LanceDB's order). Under
/// `fast_search` the rows no index covers are left out of the answer and of the statistics.
pub fn search(
    snap: &Snapshot,
    req: &QueryRequest,
    tiers: &[Tier],
    allowed: Option<&[Tier]>,
    memo: Option<&TierSegments>,
) -> Result<RecordBatch> {
    let text = req
        .full_text
        .as_ref()
        .ok_or_else(|| Error::internal("no full-text query"))?;
    if req.nearest.is_some() {
        return Err(Error::not_supported(
            "a query with both a vector and a full-text search (hybrid search runs them as two queries and fuses them)",
        ));
    }
    let indexed = indexed_columns(snap)?;
    let dead = dead_rows(tiers, &indexed);
    // No dead row (the common case): no per-posting liveness check.
    let live = if dead.is_empty() {
        LiveRows::All
    } else {
        LiveRows::Except(&dead)
    };
    let cached = indexed
        .iter()
        .map(|ix| cached_segments(snap, ix, tiers, text.fast_search, memo))
        .collect::<Result<Vec<_>>>()?;
    let corpora = indexed
        .iter()
        .zip(&cached)
        .map(|(ix, c)| Corpus::new(column_input(ix, tiers, c), live))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let keep = allowed.map(allowed_rows);
    let limit = req.limit.unwrap_or(DEFAULT_K);
    let offset = req.offset.unwrap_or(0);
    let hits = match &keep {
        Some(k) if !text.prefilter => {
            let top = memwal_fts::search(
                &corpora,
                &text.query,
                None,
                Some(offset.saturating_add(limit)),
                0,
            )?;
            top.into_iter()
                .filter(|h| k.contains(h.row_id))
                .skip(offset)
                .take(limit)
                .collect()
        }
        _ => {
            let keep_fn = keep.as_ref().map(|k| move |r: u64| k.contains(r));
            memwal_fts::search(
                &corpora,
                &text.query,
                keep_fn.as_ref().map(|f| f as &dyn Fn(u64) -> bool),
                Some(limit),
                offset,
            )?
        }
    };
    assemble(snap, req, tiers, &hits)
}

fn indexed_columns(snap: &Snapshot) -> Result<Vec<Indexed<'_>>> {
    let mut out = Vec::new();
    for ix in &snap.indices {
        let Some(text) = ix.text() else { continue };
        let Some(column) = ix.meta.columns.first() else {
            continue;
        };
        let position = snap.manifest.schema.index_of(column).map_err(|_| {
            Error::invalid(format!(
                "FTS index {:?} names column '{column}', which is gone",
                ix.meta.name
            ))
        })?;
        out.push(Indexed {
            column: column.clone(),
            position,
            text,
            covered: &ix.fragments,
            key: cache_key(&ix.meta),
        });
    }
    if out.is_empty() {
        return Err(Error::invalid(
            "Cannot perform full text search unless an INVERTED index has been created on at least one column",
        ));
    }
    Ok(out)
}

/// Whether tier `t` is a fragment `covered` holds.
fn is_covered(t: &Tier, covered: &std::collections::HashSet<u64>) -> bool {
    matches!(t.row_ids, RowIds::Fragment(id) if covered.contains(&id))
}

/// Rows of the indexes' segments that are not live: masked out in a covered tier, or in a
/// fragment no tier holds any more.
fn dead_rows(tiers: &[Tier], indexed: &[Indexed<'_>]) -> RoaringTreemap {
    let mut dead = RoaringTreemap::new();
    let mut present = std::collections::HashSet::new();
    for t in tiers {
        let RowIds::Fragment(id) = t.row_ids else {
            continue;
        };
        present.insert(id);
        if let Some(m) = &t.mask {
            // The unset bits, a word at a time (most rows of a tier are live).
            (!m.values()).set_indices().for_each(|i| {
                dead.insert((id << 32) | i as u64);
            });
        }
    }
    for ix in indexed {
        for seg in &ix.text.segments {
            for &frag in ix.covered.iter().filter(|f| !present.contains(f)) {
                let rows = seg.row_ids();
                let lo = rows.partition_point(|&r| r < frag << 32);
                let hi = rows.partition_point(|&r| r < (frag + 1) << 32);
                rows[lo..hi].iter().for_each(|&r| {
                    dead.insert(r);
                });
            }
        }
    }
    dead
}

/// The segments (from the table's [`TextCache`]) of the fragments `ix` does not cover, and which
/// fragments they are; none under `fast_search`. A fragment tier not of `snap` is left out (its rows
/// go through [`column_input`] as unindexed ones).
fn cached_segments(
    snap: &Snapshot,
    ix: &Indexed<'_>,
    tiers: &[Tier],
    fast_search: bool,
    memo: Option<&TierSegments>,
) -> Result<Uncovered> {
    let mut out = Uncovered::default();
    if fast_search {
        out.skip_unindexed = true;
        return Ok(out);
    }
    for (at, t) in tiers
        .iter()
        .enumerate()
        .filter(|(_, t)| !is_covered(t, ix.covered))
    {
        let RowIds::Fragment(id) = t.row_ids else {
            if let Some(m) = memo {
                out.segments.push(m.get(ix, at, t)?);
                out.tiers.insert(at);
            }
            continue;
        };
        let (Some(f), Some(meta)) = (
            snap.fragment(id),
            snap.manifest.fragments.iter().find(|m| m.id == id),
        ) else {
            continue;
        };
        if f.batch.num_rows() != t.batch.num_rows() {
            continue;
        }
        out.segments
            .push(snap.text_cache.get(snap, ix, f, &meta.file)?);
        out.fragments.insert(id);
    }
    Ok(out)
}

/// What a column's query takes beside its index: cached segments of uncovered fragments.
#[derive(Default)]
struct Uncovered {
    segments: Vec<Arc<Segment>>,
    /// The fragments those segments hold.
    fragments: HashSet<u64>,
    /// The other tiers they hold (by position, from a [`TierSegments`]).
    tiers: HashSet<usize>,
    /// `fast_search`: rows no index covers are left out.
    skip_unindexed: bool,
}

/// The column's segments (its index's and the cached ones of `uncovered`), plus (unless
/// `fast_search`) the live rows of the other tiers it does not cover, tokenized per query (a
/// served table's memtable rows).
fn column_input<'a>(
    ix: &Indexed<'a>,
    tiers: &'a [Tier],
    uncovered: &'a Uncovered,
) -> ColumnInput<'a> {
    let mut unindexed = Vec::new();
    let rest = tiers.iter().enumerate().filter_map(|(at, t)| {
        (!uncovered.skip_unindexed
            && !is_covered(t, ix.covered)
            && !uncovered.tiers.contains(&at)
            && !matches!(t.row_ids, RowIds::Fragment(id) if uncovered.fragments.contains(&id)))
        .then_some(t)
    });
    for t in rest {
        let col = t.batch.column(ix.position);
        for i in 0..col.len() {
            if t.mask.as_ref().is_some_and(|m| !m.value(i)) {
                continue;
            }
            if let Some(texts) = texts_at(col, i) {
                unindexed.push(UnindexedRow {
                    row_id: t.row_ids.get(i),
                    texts,
                });
            }
        }
    }
    ColumnInput {
        name: ix.column.clone(),
        analyzer: &ix.text.analyzer,
        with_position: ix.text.params.with_position,
        segments: ix
            .text
            .segments
            .iter()
            .chain(&uncovered.segments)
            .map(Arc::as_ref)
            .collect(),
        unindexed,
        block_size: ix.text.params.block_size as usize,
    }
}

/// The row ids the filter lets through.
fn allowed_rows(tiers: &[Tier]) -> RoaringTreemap {
    let mut out = RoaringTreemap::new();
    for t in tiers {
        let n = t.batch.num_rows();
        for i in 0..n {
            if t.mask.as_ref().is_none_or(|m: &BooleanArray| m.value(i)) {
                out.insert(t.row_ids.get(i));
            }
        }
    }
    out
}

/// The answer rows, gathered from the tiers in score order.
fn assemble(
    snap: &Snapshot,
    req: &QueryRequest,
    tiers: &[Tier],
    hits: &[ScoredRow],
) -> Result<RecordBatch> {
    let schema = &snap.manifest.schema;
    let out = answer_schema(schema, req)?;
    let mut by_fragment = HashMap::new();
    let mut given = HashMap::new();
    for (ti, t) in tiers.iter().enumerate() {
        match &t.row_ids {
            RowIds::Fragment(id) => {
                by_fragment.insert(*id, ti);
            }
            RowIds::Given(a) => a.values().iter().enumerate().for_each(|(i, &r)| {
                given.insert(r, (ti, i));
            }),
        }
    }
    let locate = |r: u64| match by_fragment.get(&(r >> 32)) {
        Some(&ti) if matches!(tiers[ti].row_ids, RowIds::Fragment(_)) => {
            Some((ti, (r & 0xffff_ffff) as usize))
        }
        _ => given.get(&r).copied(),
    };
    let idx: Vec<(usize, usize)> = hits
        .iter()
        .map(|h| {
            locate(h.row_id).ok_or_else(|| {
                Error::internal(format!("row {} of an FTS answer is in no tier", h.row_id))
            })
        })
        .collect::<Result<_>>()?;
    let cols = match projection(schema, req.columns.as_deref())? {
        Some(p) => p,
        None => (0..schema.fields().len()).collect(),
    };
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(out.fields().len());
    for c in cols {
        let parts: Vec<&dyn Array> = tiers.iter().map(|t| t.batch.column(c).as_ref()).collect();
        arrays.push(if parts.is_empty() {
            arrow::array::new_empty_array(schema.field(c).data_type())
        } else {
            interleave(&parts, &idx)?
        });
    }
    arrays.push(Arc::new(Float32Array::from_iter_values(
        hits.iter().map(|h| h.score),
    )));
    if req.with_row_id {
        arrays.push(Arc::new(UInt64Array::from_iter_values(
            hits.iter().map(|h| h.row_id),
        )));
    }
    Ok(RecordBatch::try_new(out, arrays)?)
}

/// The query's full-text part with its columns checked against the snapshot (for `explain`).
pub fn columns_of(query: &FtsQuery) -> Vec<String> {
    let mut out = Vec::new();
    collect_columns(query, &mut out);
    out
}

fn collect_columns(q: &FtsQuery, out: &mut Vec<String>) {
    match q {
        FtsQuery::Match(m) => out.extend(m.column.clone()),
        FtsQuery::Phrase(p) => out.extend(p.column.clone()),
        FtsQuery::MultiMatch(m) => out.extend(m.columns.iter().cloned()),
        FtsQuery::Boost(b) => {
            collect_columns(&b.positive, out);
            collect_columns(&b.negative, out);
        }
        FtsQuery::Boolean(b) => b
            .should
            .iter()
            .chain(&b.must)
            .chain(&b.must_not)
            .for_each(|x| collect_columns(x, out)),
    }
}
