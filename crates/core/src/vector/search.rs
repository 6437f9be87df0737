//! Exact (flat) search over tiers of rows. A tier is a batch, the mask of
//! its rows that may be returned (live, not superseded by a newer tier) and
//! how its row ids are formed. Each query vector is ranked against every
//! eligible row in blocks, each worker thread keeping a bounded top-k; the
//! workers' tops merge at the end. A prefilter removes rows before ranking
//! (k results whenever k rows match); a postfilter ranks first and filters
//! the top `k + offset`, so it may return fewer.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, FixedSizeListArray, Float32Array, Int32Array,
    RecordBatch, UInt64Array,
};
use arrow::buffer::BooleanBuffer;
use arrow::compute::{and, interleave};
use arrow::datatypes::{Float16Type, Float32Type, Float64Type, UInt8Type};

use super::kernels::{self, Isa};
use super::plan::{Element, VectorPlan};
use super::topk::{Hit, TopK};
use crate::error::{Error, Result};
use crate::query::{DistanceType, IndexTuning};

/// How a tier's row ids are formed.
#[derive(Debug, Clone)]
pub enum RowIds {
    /// A fragment's: `fragment id << 32 | row offset` (Lance's row address).
    Fragment(u64),
    /// One per row, given.
    Given(UInt64Array),
}

impl RowIds {
    /// The id of row `i`.
    pub fn get(&self, i: usize) -> u64 {
        match self {
            RowIds::Fragment(id) => (id << 32) | i as u64,
            RowIds::Given(a) => a.value(i),
        }
    }

    /// The ids of the first `n` rows, only those `mask` keeps (all when `None`).
    pub fn masked(&self, n: usize, mask: Option<&BooleanArray>) -> Result<ArrayRef> {
        let ids = match self {
            RowIds::Fragment(_) => UInt64Array::from_iter_values((0..n).map(|i| self.get(i))),
            RowIds::Given(a) => a.slice(0, n.min(a.len())),
        };
        Ok(match mask {
            Some(m) => arrow::compute::filter(&ids, m)?,
            None => Arc::new(ids),
        })
    }
}

/// An approximate index over the rows of some fragments, addressed by row
/// id (`fragment id << 32 | offset`).
pub trait AnnIndex: Send + Sync + std::fmt::Debug {
    /// Up to `n` ids of rows near `q`, nearest first by the index's own
    /// (approximate) distance, only rows `keep` accepts.
    fn candidates(
        &self,
        q: &[f32],
        tuning: &IndexTuning,
        n: usize,
        keep: &dyn Fn(u64) -> bool,
    ) -> Vec<u64>;
}

/// An index and the fragments whose rows it holds: tiers of those
/// fragments are searched through it, every other tier exactly.
#[derive(Debug, Clone, Copy)]
pub struct Ann<'a> {
    /// The index.
    pub index: &'a dyn AnnIndex,
    /// Ids of the fragments it covers.
    pub fragments: &'a HashSet<u64>,
}

/// Rows that a search may return.
#[derive(Debug, Clone)]
pub struct Tier {
    /// The rows (the table's schema).
    pub batch: RecordBatch,
    /// Which rows are live (`None`: all).
    pub mask: Option<BooleanArray>,
    /// Their ids.
    pub row_ids: RowIds,
}

/// Rows per block handed to a kernel.
const BLOCK: usize = 256;
/// Rows per unit of work for a thread.
const CHUNK: usize = 16 * 1024;
/// Below this many rows one thread does it all.
const PARALLEL_MIN: usize = 64 * 1024;

/// A tier ready to rank: its vectors and the rows that may be ranked.
struct Prepared<'a> {
    vectors: &'a FixedSizeListArray,
    eligible: Option<BooleanBuffer>,
}

/// Runs `plan` over `tiers`: the answer as one batch of `plan.output`.
/// With `ann` (and no `bypass_vector_index`), the tiers it covers are
/// searched through the index: its candidates are re-ranked with exact
/// distances and merged with an exact search of every other tier (skipped
/// under `fast_search`), so rows written since the index was built are
/// always found.
pub fn search(plan: &VectorPlan, tiers: &[Tier], ann: Option<Ann>) -> Result<RecordBatch> {
    let prepared = tiers
        .iter()
        .map(|t| prepare(plan, t))
        .collect::<Result<Vec<_>>>()?;
    let hits = match ann {
        Some(a) if !plan.tuning.bypass_vector_index => rank_indexed(plan, &prepared, tiers, a)?,
        // `fast_search` without an index: no row is indexed, so none is searched (as LanceDB);
        // `bypass_vector_index` asks for the exact search of every row instead.
        None if plan.tuning.fast_search && !plan.tuning.bypass_vector_index => {
            rank(plan, &prepared, tiers, &vec![false; tiers.len()])?
        }
        _ => rank(plan, &prepared, tiers, &vec![true; tiers.len()])?,
    };
    let mut columns: Vec<Vec<ArrayRef>> = Vec::new();
    for (qi, hits) in hits.into_iter().enumerate() {
        let hits = finish(plan, tiers, hits)?;
        columns.push(assemble(plan, tiers, &hits, qi)?);
    }
    concat_columns(plan, columns)
}

/// The rows of `t` that may be ranked: its mask, the prefilter, a non-null
/// vector with no null element.
fn prepare<'a>(plan: &VectorPlan, t: &'a Tier) -> Result<Prepared<'a>> {
    let vectors = t
        .batch
        .column(plan.column)
        .as_fixed_size_list_opt()
        .ok_or_else(|| Error::internal("vector column is not a fixed-size list"))?;
    let mut mask = t.mask.clone();
    if plan.prefilter {
        if let Some(f) = &plan.filter {
            let m = f.mask(&t.batch)?;
            mask = Some(match mask {
                Some(l) => and(&l, &m)?,
                None => m,
            });
        }
    }
    if vectors.null_count() > 0 || vectors.values().null_count() > 0 {
        let valid = BooleanArray::from_iter((0..vectors.len()).map(|i| Some(complete(vectors, i))));
        mask = Some(match mask {
            Some(l) => and(&l, &valid)?,
            None => valid,
        });
    }
    // SQL NULL in a mask counts as not eligible.
    let eligible = mask.map(|m| match m.nulls() {
        Some(n) => m.values() & n.inner(),
        None => m.values().clone(),
    });
    Ok(Prepared { vectors, eligible })
}

/// Whether row `i` has a vector with every element set.
fn complete(v: &FixedSizeListArray, i: usize) -> bool {
    if v.is_null(i) {
        return false;
    }
    let vals = v.values();
    let start = v.value_offset_at(i);
    (start..start + v.value_length() as usize).all(|j| vals.is_valid(j))
}

/// The top `k + offset` hits of each query vector over every tier (the
/// whole table for a postfilter: the filter comes after). One pass over the
/// data ranks every query vector: each block is compared with all of them
/// while it is in cache.
fn rank(
    plan: &VectorPlan,
    prepared: &[Prepared],
    tiers: &[Tier],
    include: &[bool],
) -> Result<Vec<Vec<Hit>>> {
    let cap = plan.k.saturating_add(plan.offset);
    let units: Vec<(usize, Range<usize>)> = prepared
        .iter()
        .enumerate()
        .filter(|(t, _)| include[*t])
        .flat_map(|(t, p)| {
            let n = p.vectors.len();
            (0..n.div_ceil(CHUNK)).map(move |c| (t, c * CHUNK..((c + 1) * CHUNK).min(n)))
        })
        .collect();
    let rows: usize = units.iter().map(|(_, r)| r.len()).sum();
    let threads = super::worker_threads(rows, PARALLEL_MIN);
    let next = AtomicUsize::new(0);
    let fresh = || -> Vec<TopK> { plan.vectors.iter().map(|_| TopK::new(cap)).collect() };
    let work = || -> Result<Vec<TopK>> {
        let mut top = fresh();
        let mut scan = Scanner::new(plan);
        loop {
            let u = next.fetch_add(1, Ordering::Relaxed);
            let Some((t, range)) = units.get(u) else {
                break;
            };
            scan.range(
                &prepared[*t],
                &tiers[*t].row_ids,
                *t as u32,
                range.clone(),
                &mut top,
            )?;
        }
        Ok(top)
    };
    let mut top = fresh();
    let merge = |top: &mut Vec<TopK>, other: Vec<TopK>| {
        for (t, o) in top.iter_mut().zip(other) {
            t.merge(o);
        }
    };
    if threads == 1 {
        merge(&mut top, work()?);
    } else {
        let tops: Vec<Result<Vec<TopK>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::internal("a search thread panicked")))
                })
                .collect()
        });
        for t in tops {
            merge(&mut top, t?);
        }
    }
    Ok(top.into_iter().map(TopK::into_sorted).collect())
}

/// Whether row `i` of `p` may be ranked.
fn eligible(p: &Prepared, i: usize) -> bool {
    i < p.vectors.len() && p.eligible.as_ref().is_none_or(|e| e.value(i))
}

/// [`rank`] with an index over some tiers: the index's candidates for the
/// covered tiers (re-ranked exactly), an exact search of the others. Falls
/// back to an exact search of every tier when the candidates asked for are
/// as many as the eligible indexed rows (a huge `k`, a selective
/// prefilter), or when the index, limited by
/// `maximum_nprobes`, found fewer than `k + offset` rows that exist.
fn rank_indexed(
    plan: &VectorPlan,
    prepared: &[Prepared],
    tiers: &[Tier],
    ann: Ann,
) -> Result<Vec<Vec<Hit>>> {
    let fast = plan.tuning.fast_search;
    let by_fragment: HashMap<u64, usize> = tiers
        .iter()
        .enumerate()
        .filter_map(|(t, tier)| match tier.row_ids {
            RowIds::Fragment(id) if ann.fragments.contains(&id) => Some((id, t)),
            _ => None,
        })
        .collect();
    let mut covered = vec![false; tiers.len()];
    for t in by_fragment.values() {
        covered[*t] = true;
    }
    let exact_all: Vec<bool> = covered.iter().map(|c| *c || !fast).collect();
    let cap = plan.k.saturating_add(plan.offset);
    let refine = plan.tuning.refine_factor.unwrap_or(1).max(1) as usize;
    let n = cap.saturating_mul(refine);
    let in_index: usize = by_fragment
        .values()
        .map(|t| match &prepared[*t].eligible {
            Some(e) => e.count_set_bits(),
            None => prepared[*t].vectors.len(),
        })
        .sum();
    if n >= in_index {
        return rank(plan, prepared, tiers, &exact_all);
    }
    let others: Vec<bool> = covered.iter().map(|c| !*c && !fast).collect();
    let mut out = rank(plan, prepared, tiers, &others)?;
    let keep = |id: u64| {
        by_fragment
            .get(&(id >> 32))
            .is_some_and(|t| eligible(&prepared[*t], (id & 0xffff_ffff) as usize))
    };
    let mut scan = Scanner::new(plan);
    for (qi, q) in plan.vectors.iter().enumerate() {
        let found = ann.index.candidates(q, &plan.tuning, n, &keep);
        if found.len() < cap.min(in_index) {
            return rank(plan, prepared, tiers, &exact_all);
        }
        let mut rows: HashMap<usize, Vec<usize>> = HashMap::new();
        for id in found {
            if let Some(t) = by_fragment.get(&(id >> 32)) {
                rows.entry(*t)
                    .or_default()
                    .push((id & 0xffff_ffff) as usize);
            }
        }
        let mut top = TopK::new(cap);
        for h in std::mem::take(&mut out[qi]) {
            top.push(h);
        }
        for (t, r) in rows {
            scan.exact(&prepared[t], &tiers[t].row_ids, t as u32, &r, qi, &mut top);
        }
        out[qi] = top.into_sorted();
    }
    Ok(out)
}

/// Per-thread state of a scan: the query vectors and their norms, which
/// one `distances` uses, scratch buffers.
struct Scanner<'a> {
    plan: &'a VectorPlan,
    queries: Vec<(&'a [f32], f32)>,
    current: usize,
    dim: usize,
    isa: Isa,
    rows: Vec<f32>,
    out: Vec<f32>,
    norms: Vec<f32>,
    picked: Vec<usize>,
}

impl<'a> Scanner<'a> {
    fn new(plan: &'a VectorPlan) -> Self {
        let isa = kernels::isa();
        let queries = plan
            .vectors
            .iter()
            .map(|q| {
                let mut n = [0f32];
                kernels::dot(isa, q, q, &mut n);
                // A squared norm f32 cannot hold well (inf, subnormal, zero): NaN, so every cosine
                // distance of this query is computed again in f64 (see `offer`).
                let norm = if n[0].is_normal() {
                    n[0].sqrt()
                } else {
                    f32::NAN
                };
                (q.as_slice(), norm)
            })
            .collect();
        Self {
            plan,
            queries,
            current: 0,
            dim: plan.dim,
            isa,
            rows: Vec::with_capacity(BLOCK * plan.dim),
            out: vec![0f32; BLOCK],
            norms: vec![0f32; BLOCK],
            picked: Vec::with_capacity(BLOCK),
        }
    }

    /// Ranks rows `range` of a tier into `tops` (one per query vector).
    fn range(
        &mut self,
        p: &Prepared,
        ids: &RowIds,
        tier: u32,
        range: Range<usize>,
        tops: &mut [TopK],
    ) -> Result<()> {
        let mut start = range.start;
        while start < range.end {
            let end = (start + BLOCK).min(range.end);
            self.picked.clear();
            match &p.eligible {
                Some(e) => self.picked.extend((start..end).filter(|i| e.value(*i))),
                None => self.picked.extend(start..end),
            }
            if !self.picked.is_empty() {
                let contiguous = self.picked.len() == end - start;
                let gathered = if matches!((self.plan.element, contiguous), (Element::F32, true)) {
                    None
                } else {
                    self.gather(p.vectors);
                    Some(std::mem::take(&mut self.rows))
                };
                let rows = match &gathered {
                    Some(r) => r.as_slice(),
                    None => {
                        let s = p.vectors.values().as_primitive::<Float32Type>().values();
                        let from = p.vectors.value_offset_at(start);
                        &s[from..from + (end - start) * self.dim]
                    }
                };
                for (qi, top) in tops.iter_mut().enumerate() {
                    self.current = qi;
                    self.distances(rows);
                    self.offer(ids, tier, rows, top);
                }
                if let Some(r) = gathered {
                    self.rows = r;
                }
            }
            start = end;
        }
        Ok(())
    }

    /// Ranks the given rows of a tier (eligible ones) for query `qi`.
    fn exact(
        &mut self,
        p: &Prepared,
        ids: &RowIds,
        tier: u32,
        rows: &[usize],
        qi: usize,
        top: &mut TopK,
    ) {
        for chunk in rows.chunks(BLOCK) {
            self.picked.clear();
            self.picked
                .extend(chunk.iter().filter(|i| eligible(p, **i)));
            self.gather(p.vectors);
            let r = std::mem::take(&mut self.rows);
            self.current = qi;
            self.distances(&r);
            self.offer(ids, tier, &r, top);
            self.rows = r;
        }
    }

    /// Offers the picked rows (their vectors `rows`), at the distances in
    /// `self.out`, to `top`. A distance the f32 kernels could not represent
    /// (inf, or NaN from inf / inf) is computed again in f64, so finite
    /// vectors far apart still rank in order.
    fn offer(&self, ids: &RowIds, tier: u32, rows: &[f32], top: &mut TopK) {
        for (j, &row) in self.picked.iter().enumerate() {
            let mut d = f64::from(self.out[j]);
            if !d.is_finite() {
                let (q, _) = self.queries[self.current];
                d = wide_distance(
                    self.plan.distance,
                    q,
                    &rows[j * self.dim..(j + 1) * self.dim],
                );
            }
            // NaN (the cosine of a zero vector) is never returned, as in Lance.
            if d.is_nan() || !self.plan.in_range(d) || top.worst().is_some_and(|w| d > w) {
                continue;
            }
            top.push(Hit {
                dist: d,
                row_id: ids.get(row),
                tier,
                row: row as u32,
            });
        }
    }

    /// Copies the picked rows' vectors into `self.rows` as f32 (a float32
    /// block with every row picked is read in place instead).
    fn gather(&mut self, v: &FixedSizeListArray) {
        let dim = self.dim;
        self.rows.clear();
        let vals = v.values();
        let off = |i: usize| v.value_offset_at(i);
        match self.plan.element {
            Element::F32 => {
                let s = vals.as_primitive::<Float32Type>().values();
                for &i in &self.picked {
                    self.rows.extend_from_slice(&s[off(i)..off(i) + dim]);
                }
            }
            Element::F16 => {
                let s = vals.as_primitive::<Float16Type>().values();
                for &i in &self.picked {
                    self.rows
                        .extend(s[off(i)..off(i) + dim].iter().map(|x| x.to_f32()));
                }
            }
            Element::F64 => {
                let s = vals.as_primitive::<Float64Type>().values();
                for &i in &self.picked {
                    self.rows
                        .extend(s[off(i)..off(i) + dim].iter().map(|x| *x as f32));
                }
            }
            Element::U8 => {
                // A binary vector: its dim / 8 bytes, as bits.
                let s = vals.as_primitive::<UInt8Type>().values();
                for &i in &self.picked {
                    let bytes = &s[off(i)..off(i) + dim / 8];
                    super::plan::unpack_bits(bytes.iter().copied(), &mut self.rows);
                }
            }
        }
    }

    /// Distances of `rows` (the picked rows' vectors) into `self.out`.
    fn distances(&mut self, rows: &[f32]) {
        let n = self.picked.len();
        let out = &mut self.out[..n];
        let (q, q_norm) = self.queries[self.current];
        match self.plan.distance {
            // Hamming: the rows and queries are bits, whose squared L2 distance it is.
            DistanceType::L2 | DistanceType::Hamming => kernels::l2_sq(self.isa, q, rows, out),
            DistanceType::Dot => {
                kernels::dot(self.isa, q, rows, out);
                out.iter_mut().for_each(|d| *d = 1.0 - *d);
            }
            DistanceType::Cosine => {
                kernels::dot(self.isa, q, rows, out);
                for (j, row) in rows.chunks_exact(self.dim).enumerate() {
                    kernels::dot(self.isa, row, row, &mut self.norms[j..j + 1]);
                }
                // A squared norm f32 cannot hold well: NaN, computed again in f64 (see `offer`).
                for (d, n) in out.iter_mut().zip(&self.norms) {
                    *d = if n.is_normal() {
                        1.0 - *d / (q_norm * n.sqrt())
                    } else {
                        f32::NAN
                    };
                }
            }
        }
    }
}

/// The distance of `row` from `q` computed in f64 (never overflows for f32
/// inputs; NaN for a cosine with a zero vector, or for non-finite inputs).
fn wide_distance(distance: DistanceType, q: &[f32], row: &[f32]) -> f64 {
    let pairs = q
        .iter()
        .zip(row)
        .map(|(a, b)| (f64::from(*a), f64::from(*b)));
    match distance {
        DistanceType::L2 | DistanceType::Hamming => pairs.map(|(a, b)| (a - b) * (a - b)).sum(),
        DistanceType::Dot => 1.0 - pairs.map(|(a, b)| a * b).sum::<f64>(),
        DistanceType::Cosine => {
            let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
            for (a, b) in pairs {
                ab += a * b;
                aa += a * a;
                bb += b * b;
            }
            1.0 - ab / (aa.sqrt() * bb.sqrt())
        }
    }
}

/// Applies a postfilter (to the ranked hits), then the offset and `k`.
fn finish(plan: &VectorPlan, tiers: &[Tier], hits: Vec<Hit>) -> Result<Vec<Hit>> {
    let hits = match (&plan.filter, plan.prefilter) {
        (Some(f), false) if !hits.is_empty() => {
            let all: Vec<usize> = (0..tiers[0].batch.num_columns()).collect();
            let cols = gather(tiers, &hits, &all)?;
            let batch = RecordBatch::try_new(tiers[0].batch.schema(), cols)?;
            let m = f.mask(&batch)?;
            hits.into_iter()
                .enumerate()
                .filter(|(i, _)| m.is_valid(*i) && m.value(*i))
                .map(|(_, h)| h)
                .collect()
        }
        _ => hits,
    };
    Ok(hits.into_iter().skip(plan.offset).take(plan.k).collect())
}

/// Columns `cols` of the hits' rows, in hit order.
fn gather(tiers: &[Tier], hits: &[Hit], cols: &[usize]) -> Result<Vec<ArrayRef>> {
    let idx: Vec<(usize, usize)> = hits
        .iter()
        .map(|h| (h.tier as usize, h.row as usize))
        .collect();
    cols.iter()
        .map(|c| {
            let arrays: Vec<&dyn Array> =
                tiers.iter().map(|t| t.batch.column(*c).as_ref()).collect();
            Ok(interleave(&arrays, &idx)?)
        })
        .collect()
}

/// The answer columns for query vector `qi`.
fn assemble(plan: &VectorPlan, tiers: &[Tier], hits: &[Hit], qi: usize) -> Result<Vec<ArrayRef>> {
    let multi = plan.vectors.len() > 1;
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(plan.output.fields().len());
    if multi {
        let qi = i32::try_from(qi).map_err(|_| Error::invalid("too many query vectors"))?;
        cols.push(Arc::new(Int32Array::from_value(qi, hits.len())));
    }
    if hits.is_empty() {
        let first = usize::from(multi);
        cols.extend(
            (first..first + plan.projection.len())
                .map(|j| arrow::array::new_empty_array(plan.output.field(j).data_type())),
        );
    } else {
        cols.extend(gather(tiers, hits, &plan.projection)?);
    }
    cols.push(Arc::new(Float32Array::from_iter_values(
        hits.iter().map(|h| h.dist as f32),
    )));
    if plan.with_row_id {
        cols.push(Arc::new(UInt64Array::from_iter_values(
            hits.iter().map(|h| h.row_id),
        )));
    }
    Ok(cols)
}

/// One batch from the answers of every query vector.
fn concat_columns(plan: &VectorPlan, per_query: Vec<Vec<ArrayRef>>) -> Result<RecordBatch> {
    let batches = per_query
        .into_iter()
        .map(|cols| RecordBatch::try_new(plan.output.clone(), cols))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(arrow::compute::concat_batches(&plan.output, &batches)?)
}
