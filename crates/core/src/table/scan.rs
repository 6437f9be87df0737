//! Reads: counting and scanning live rows with a filter, projection and
//! paging (and `_rowid` when asked), narrowed by a BTREE index where one
//! answers the filter, and vector search over a snapshot's fragments.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, BooleanBufferBuilder, RecordBatch, UInt32Array};
use arrow::compute::{and, filter_record_batch, take_record_batch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{NativeTable, Snapshot};
use crate::error::Result;
use crate::filter::{Predicate, Resolve};
use crate::fragment::LoadedFragment;
use crate::query::QueryRequest;
use crate::schema::projection;
use crate::vector::{self, Ann, RowIds, Tier, VectorPlan, ROW_ID_COLUMN};

/// A filter bound to one snapshot, with the rows a BTREE index narrows it
/// to in the fragments that index covers (other rows, and fragments it does
/// not cover, are evaluated in full).
pub struct RowFilter {
    pred: Predicate,
    narrowed: Option<Narrowed>,
}

/// The fragments a BTREE index covers, and its candidate rows (offsets by
/// fragment).
type Narrowed = (Arc<HashSet<u64>>, HashMap<u64, Vec<u32>>);

impl RowFilter {
    /// `filter` bound to `snap` (`None` for no filter or a blank one).
    pub fn new(snap: &Snapshot, filter: Option<&str>) -> Result<Option<Self>> {
        let Some(pred) = predicate(snap, filter)? else {
            return Ok(None);
        };
        Self::bound(snap, pred).map(Some)
    }

    /// A predicate already bound to `snap`'s schema, narrowed where it can be.
    pub fn bound(snap: &Snapshot, pred: Predicate) -> Result<Self> {
        let narrowed = narrow(snap, &pred)?;
        Ok(Self { pred, narrowed })
    }

    /// Whether a BTREE index narrows this filter (for plans and tests).
    pub fn narrowed(&self) -> bool {
        self.narrowed.is_some()
    }

    /// `t` with only the rows that pass the filter in its mask.
    pub fn narrow_tier(&self, t: &Tier) -> Result<Tier> {
        let frag = match t.row_ids {
            RowIds::Fragment(id) => Some(id),
            RowIds::Given(_) => None,
        };
        Ok(Tier {
            batch: t.batch.clone(),
            mask: Some(self.mask(&t.batch, t.mask.as_ref(), frag)?),
            row_ids: t.row_ids.clone(),
        })
    }

    /// The rows of `batch` (perhaps a snapshot's fragment `frag`) that are
    /// in `base` (all when `None`) and pass the filter.
    pub fn mask(
        &self,
        batch: &RecordBatch,
        base: Option<&BooleanArray>,
        frag: Option<u64>,
    ) -> Result<BooleanArray> {
        let cands = self.narrowed.as_ref().and_then(|(covered, rows)| {
            let f = frag.filter(|f| covered.contains(f))?;
            Some(rows.get(&f).map_or(&[][..], Vec::as_slice))
        });
        let Some(cands) = cands else {
            let m = self.pred.mask(batch)?;
            return Ok(match base {
                Some(b) => and(b, &m)?,
                None => m,
            });
        };
        let n = batch.num_rows();
        let offs: Vec<u32> = cands
            .iter()
            .copied()
            .filter(|o| (*o as usize) < n && base.is_none_or(|b| b.value(*o as usize)))
            .collect();
        let mut out = BooleanBufferBuilder::new(n);
        out.append_n(n, false);
        if !offs.is_empty() {
            let m = self
                .pred
                .mask(&take_record_batch(batch, &UInt32Array::from(offs.clone()))?)?;
            for (i, o) in offs.iter().enumerate() {
                if m.value(i) {
                    out.set_bit(*o as usize, true);
                }
            }
        }
        Ok(BooleanArray::new(out.finish(), None))
    }
}

/// A BTREE narrows a filter when at most 1 / this of its values qualify ...
const NARROW_FRACTION: usize = 8;
/// ... or at most this many (small tables: always).
const NARROW_ALWAYS: usize = 4096;

/// The candidate rows of the BTREE index that narrows `pred` the most,
/// by fragment.
fn narrow(snap: &Snapshot, pred: &Predicate) -> Result<Option<Narrowed>> {
    let schema = &snap.manifest.schema;
    let mut best: Option<(&Arc<HashSet<u64>>, Vec<u64>)> = None;
    for ix in &snap.indices {
        let Some(bt) = ix.scalar() else { continue };
        let Some(col) = ix
            .meta
            .columns
            .first()
            .and_then(|c| schema.index_of(c).ok())
        else {
            continue;
        };
        let Some(s) = pred.sarg(col, schema.field(col).data_type()) else {
            continue;
        };
        // Narrowing pays when it leaves few rows to evaluate.
        let limit = (bt.row_ids.len() / NARROW_FRACTION).max(NARROW_ALWAYS);
        if let Some(ids) = bt.lookup(&s, limit)? {
            if best.as_ref().is_none_or(|(_, b)| ids.len() < b.len()) {
                best = Some((&ix.fragments, ids));
            }
        }
    }
    Ok(best.map(|(covered, ids)| {
        let mut rows: HashMap<u64, Vec<u32>> = HashMap::new();
        for id in ids {
            rows.entry(id >> 32)
                .or_default()
                .push((id & 0xffff_ffff) as u32);
        }
        (covered.clone(), rows)
    }))
}

/// The live rows of `f` that pass `filter`, as a mask (`None`: all rows).
pub(crate) fn row_mask(
    f: &LoadedFragment,
    filter: Option<&RowFilter>,
) -> Result<Option<BooleanArray>> {
    let live = f.live_mask();
    let Some(filter) = filter else {
        return Ok(live);
    };
    filter.mask(&f.batch, live.as_ref(), Some(f.id)).map(Some)
}

/// Applies an optional mask.
pub(crate) fn apply(batch: &RecordBatch, mask: Option<&BooleanArray>) -> Result<RecordBatch> {
    Ok(match mask {
        Some(m) => filter_record_batch(batch, m)?,
        None => batch.clone(),
    })
}

/// Binds a filter against the snapshot's schema.
pub(crate) fn predicate(snap: &Snapshot, filter: Option<&str>) -> Result<Option<Predicate>> {
    filter
        .filter(|f| !f.trim().is_empty())
        .map(|f| Predicate::parse(f, &snap.manifest.schema, Resolve::Plain))
        .transpose()
}

/// Applies offset, limit and projection to matching rows as they stream by.
pub struct Pager {
    skip: usize,
    remaining: usize,
    projection: Option<Vec<usize>>,
    out: Vec<RecordBatch>,
}

impl Pager {
    /// A pager for `req` over `schema`. With `req.with_row_id`, every batch
    /// pushed carries a `_rowid` column after the table's (see
    /// [`with_row_ids`]) and the pager keeps it last.
    pub fn new(schema: &Schema, req: &QueryRequest) -> Result<Self> {
        let mut projection = projection(schema, req.columns.as_deref())?;
        if req.with_row_id {
            let mut p = projection.unwrap_or_else(|| (0..schema.fields().len()).collect());
            p.push(schema.fields().len());
            projection = Some(p);
        }
        Ok(Self {
            skip: req.offset.unwrap_or(0),
            remaining: req.limit.unwrap_or(usize::MAX),
            projection,
            out: Vec::new(),
        })
    }

    /// Whether the limit is reached.
    pub fn full(&self) -> bool {
        self.remaining == 0
    }

    /// `mask` over a batch of `rows` rows (`None`: every row) cut to the
    /// first rows this pager still takes (the offset's included), so that
    /// a scan with a limit materialises those rows only. `None` when every
    /// row is taken.
    pub fn cut_mask(&self, mask: Option<&BooleanArray>, rows: usize) -> Option<BooleanArray> {
        let wanted = self.skip.saturating_add(self.remaining);
        let Some(m) = mask else {
            if wanted >= rows {
                return None;
            }
            let mut b = BooleanBufferBuilder::new(rows);
            b.append_n(wanted, true);
            b.append_n(rows - wanted, false);
            return Some(BooleanArray::new(b.finish(), None));
        };
        let m = match arrow::array::Array::null_count(m) {
            0 => m.clone(),
            _ => arrow::compute::prep_null_mask_filter(m),
        };
        let Some(last) = m.values().set_indices().nth(wanted) else {
            return Some(m); // no more rows match than are wanted
        };
        let mut b = BooleanBufferBuilder::new(rows);
        b.append_buffer(&m.values().slice(0, last));
        b.append_n(rows - last, false);
        Some(BooleanArray::new(b.finish(), None))
    }

    /// Takes what is wanted of `b` (rows that matched).
    pub fn push(&mut self, mut b: RecordBatch) -> Result<()> {
        if self.skip > 0 {
            let s = self.skip.min(b.num_rows());
            b = b.slice(s, b.num_rows() - s);
            self.skip -= s;
        }
        if b.num_rows() > self.remaining {
            b = b.slice(0, self.remaining);
        }
        self.remaining -= b.num_rows();
        if let Some(p) = &self.projection {
            b = b.project(p)?;
        }
        if b.num_rows() > 0 {
            self.out.push(b);
        }
        Ok(())
    }

    /// The batches taken.
    pub fn finish(self) -> Vec<RecordBatch> {
        self.out
    }
}

/// The schema of the answer to `req` over a table of `schema` (for an
/// answer with no batch to carry it).
pub fn answer_schema(schema: &Schema, req: &QueryRequest) -> Result<SchemaRef> {
    if super::finish::needed(req) {
        return super::finish::answer_schema(req, |r| answer_schema(schema, r));
    }
    if req.full_text.is_some() {
        return super::text_search::answer_schema(schema, req);
    }
    if req.nearest.is_some() {
        return Ok(VectorPlan::new(schema, req)?.output);
    }
    let mut fields: Vec<Field> = match projection(schema, req.columns.as_deref())? {
        Some(idx) => idx.iter().map(|i| schema.field(*i).clone()).collect(),
        None => schema.fields().iter().map(|f| f.as_ref().clone()).collect(),
    };
    if req.with_row_id {
        fields.push(Field::new(ROW_ID_COLUMN, DataType::UInt64, true));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// `batch` with a `_rowid` column appended.
pub fn with_row_ids(batch: &RecordBatch, ids: ArrayRef) -> Result<RecordBatch> {
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(ROW_ID_COLUMN, DataType::UInt64, true));
    let mut cols = batch.columns().to_vec();
    cols.push(ids);
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// Scans rows of a snapshot (or searches it, for a vector query).
pub fn scan_snapshot(snap: &Snapshot, req: &QueryRequest) -> Result<Vec<RecordBatch>> {
    if req.full_text.is_some() {
        return text_search_snapshot(snap, req).map(|b| vec![b]);
    }
    if req.nearest.is_some() {
        return search_snapshot(snap, req).map(|b| vec![b]);
    }
    let filter = RowFilter::new(snap, req.filter.as_deref())?;
    let mut pager = Pager::new(&snap.manifest.schema, req)?;
    for f in &snap.fragments {
        if pager.full() {
            break;
        }
        let mask = row_mask(f, filter.as_ref())?;
        let mask = pager.cut_mask(mask.as_ref(), f.batch.num_rows());
        let mut b = apply(&f.batch, mask.as_ref())?;
        if req.with_row_id {
            let ids = RowIds::Fragment(f.id).masked(f.batch.num_rows(), mask.as_ref())?;
            b = with_row_ids(&b, ids)?;
        }
        pager.push(b)?;
    }
    Ok(pager.finish())
}

/// Vector search over a snapshot's live rows.
pub fn search_snapshot(snap: &Snapshot, req: &QueryRequest) -> Result<RecordBatch> {
    let tiers: Vec<Tier> = snap
        .fragments
        .iter()
        .map(|f| Tier {
            batch: f.batch.clone(),
            mask: f.live_mask(),
            row_ids: RowIds::Fragment(f.id),
        })
        .collect();
    search_tiers(snap, req, &tiers)
}

/// Full-text search over a snapshot's live rows.
pub fn text_search_snapshot(snap: &Snapshot, req: &QueryRequest) -> Result<RecordBatch> {
    let tiers: Vec<Tier> = snap
        .fragments
        .iter()
        .map(|f| Tier {
            batch: f.batch.clone(),
            mask: f.live_mask(),
            row_ids: RowIds::Fragment(f.id),
        })
        .collect();
    text_search_tiers(snap, req, &tiers, None)
}

/// Full-text search over `tiers` (live rows in their masks), the filter (BTREE-narrowed where
/// it can be) deciding only which rows may be answered.
pub fn text_search_tiers(
    snap: &Snapshot,
    req: &QueryRequest,
    tiers: &[Tier],
    memo: Option<&super::text_search::TierSegments>,
) -> Result<RecordBatch> {
    let filter = RowFilter::new(snap, req.filter.as_deref())?;
    let allowed = match &filter {
        Some(f) => Some(
            tiers
                .iter()
                .map(|t| f.narrow_tier(t))
                .collect::<Result<Vec<_>>>()?,
        ),
        None => None,
    };
    super::text_search::search(snap, req, tiers, allowed.as_deref(), memo)
}

/// Vector search over `tiers` (a snapshot's fragments, perhaps masked,
/// and rows newer than it), through the snapshot's index on the queried
/// column when there is one for the query's distance. A query that names
/// no distance uses the index's.
pub fn search_tiers(snap: &Snapshot, req: &QueryRequest, tiers: &[Tier]) -> Result<RecordBatch> {
    let mut plan = VectorPlan::new(&snap.manifest.schema, req)?;
    let column = snap.manifest.schema.field(plan.column).name().clone();
    let ix = snap.indices.iter().find_map(|i| {
        let v = i.vector()?;
        (i.meta.columns == [column.clone()]
            && (!plan.distance_given || v.distance == plan.distance))
            .then_some((i, v))
    });
    if let Some((_, v)) = ix {
        plan.distance = v.distance;
    }
    let ann = ix.map(|(i, v)| Ann {
        index: v,
        fragments: &i.fragments,
    });
    // A prefilter a BTREE narrows goes into the tiers' masks (evaluated on
    // the candidates only), and the plan no longer evaluates it per row.
    let prefilter = if plan.prefilter {
        plan.filter.take()
    } else {
        None
    };
    if let Some(pred) = prefilter {
        let f = RowFilter::bound(snap, pred)?;
        if f.narrowed() {
            let narrowed = tiers
                .iter()
                .map(|t| f.narrow_tier(t))
                .collect::<Result<Vec<_>>>()?;
            return vector::search(&plan, &narrowed, ann);
        }
        plan.filter = Some(f.pred);
    }
    vector::search(&plan, tiers, ann)
}

impl NativeTable {
    /// Rows, optionally only those matching `filter`.
    pub fn count_rows_sync(&self, filter: Option<&str>) -> Result<u64> {
        if filter.is_none_or(|f| f.trim().is_empty()) {
            let m = self.manifest()?;
            return Ok(m.num_rows());
        }
        let snap = self.snapshot()?;
        let filter = RowFilter::new(&snap, filter)?;
        let mut n = 0u64;
        for f in &snap.fragments {
            n += match row_mask(f, filter.as_ref())? {
                Some(m) => m.true_count() as u64,
                None => f.batch.num_rows() as u64,
            };
        }
        Ok(n)
    }

    /// Scans rows (or searches them), ordered and projected as asked.
    pub fn query_sync(&self, req: &QueryRequest) -> Result<Vec<RecordBatch>> {
        let snap = self.snapshot()?;
        super::finish::run(
            req,
            |r| scan_snapshot(&snap, r),
            |r| answer_schema(&snap.manifest.schema, r),
        )
    }
}
