//! Indexes (vector and BTREE) of a native table: building one over a snapshot and
//! recording it in a new version, listing them with their indexed and
//! unindexed row counts, dropping one, and folding unindexed rows in
//! (`optimize`). An index's files are written before the version that
//! names them, so a crash mid-build leaves unreferenced files, never a half
//! index.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Float16Type, Float32Type, Float64Type, UInt8Type};
use serde_json::json;

use super::commit::Change;
use super::{NativeTable, Snapshot};
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::index::btree::{self, BTreeIndex};
use crate::index::fts::TextIndex;
use crate::index::ivf::{self, IvfIndex, Vectors};
use crate::index::{store, IndexInfo, IndexRequest, IndexType};
use crate::manifest::IndexMeta;
use crate::query::DistanceType;
use crate::schema::column_list;
use crate::vector::plan::{unpack_bits, vector_type, width, Element};

/// An index of a snapshot, loaded.
#[derive(Debug, Clone)]
pub struct LoadedIndex {
    /// As the manifest records it.
    pub meta: Arc<IndexMeta>,
    /// The index.
    pub data: IndexData,
    /// The fragments it covers.
    pub fragments: Arc<HashSet<u64>>,
}

/// A loaded index of either kind.
#[derive(Debug, Clone)]
pub enum IndexData {
    /// IVF_FLAT, IVF_PQ, IVF_RQ, IVF_HNSW_SQ.
    Vector(Arc<IvfIndex>),
    /// BTREE.
    Scalar(Arc<BTreeIndex>),
    /// FTS.
    Text(Arc<TextIndex>),
}

impl LoadedIndex {
    /// The vector index, if it is one.
    pub fn vector(&self) -> Option<&IvfIndex> {
        match &self.data {
            IndexData::Vector(v) => Some(v),
            _ => None,
        }
    }

    /// The scalar index, if it is one.
    pub fn scalar(&self) -> Option<&BTreeIndex> {
        match &self.data {
            IndexData::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The FTS index, if it is one.
    pub fn text(&self) -> Option<&TextIndex> {
        match &self.data {
            IndexData::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// The live rows of `fragments` (all when `None`) with a complete vector in
/// column `col`, in index space.
fn vectors_of(
    snap: &Snapshot,
    col: usize,
    distance: DistanceType,
    fragments: Option<&HashSet<u64>>,
) -> Result<Vectors> {
    let mut out = Vectors::default();
    let el = vector_type(snap.manifest.schema.field(col).data_type()).map(|(e, _)| e);
    for f in &snap.fragments {
        if fragments.is_some_and(|s| !s.contains(&f.id)) {
            continue;
        }
        let v = f.batch.column(col).as_fixed_size_list();
        let dim = v.value_length() as usize;
        let vals = v.values();
        for i in 0..v.len() {
            if f.deleted.contains(i as u32) || v.is_null(i) {
                continue;
            }
            let start = v.value_offset_at(i);
            if (start..start + dim).any(|j| vals.is_null(j)) {
                continue;
            }
            out.row_ids.push((f.id << 32) | i as u64);
            match el {
                Some(Element::F32) => out.data.extend_from_slice(
                    &vals.as_primitive::<Float32Type>().values()[start..start + dim],
                ),
                Some(Element::F16) => out.data.extend(
                    vals.as_primitive::<Float16Type>().values()[start..start + dim]
                        .iter()
                        .map(|x| x.to_f32()),
                ),
                Some(Element::F64) => out.data.extend(
                    vals.as_primitive::<Float64Type>().values()[start..start + dim]
                        .iter()
                        .map(|x| *x as f32),
                ),
                Some(Element::U8) => unpack_bits(
                    vals.as_primitive::<UInt8Type>().values()[start..start + dim]
                        .iter()
                        .copied(),
                    &mut out.data,
                ),
                None => return Err(Error::internal("not a vector column")),
            }
        }
    }
    if let Some((_, dim)) = vector_type(snap.manifest.schema.field(col).data_type()) {
        ivf::to_index_space(distance, &mut out.data, dim);
    }
    Ok(out)
}

/// The position of column `name` in `snap`, or an error naming the columns.
pub(crate) fn column_of(snap: &Snapshot, name: &str) -> Result<usize> {
    let schema = &snap.manifest.schema;
    schema.index_of(name).map_err(|_| {
        Error::invalid(format!(
            "cannot index column '{name}': no such column (available: {})",
            column_list(schema)
        ))
    })
}

/// The column `name` of `snap` as `(position, dimension)`, or why it
/// cannot carry a vector index.
fn vector_column(snap: &Snapshot, name: &str) -> Result<(usize, usize)> {
    let i = column_of(snap, name)?;
    let dt = snap.manifest.schema.field(i).data_type();
    match vector_type(dt) {
        // A binary vector is indexed as its bits.
        Some((el, dim)) => Ok((i, width(el, dim))),
        None => Err(Error::invalid(format!(
            "cannot build a vector index on column '{name}' ({dt}): vector indexes (IVF_FLAT, IVF_PQ, IVF_RQ, IVF_HNSW_SQ) need a fixed-size-list float column; use BTREE for a scalar column"
        ))),
    }
}

/// The type of index `req` builds on column `col`: its own, or the
/// column's default (IVF_PQ for vectors, BTREE otherwise), checked against
/// the column.
fn index_type_for(snap: &Snapshot, col: usize, req: &IndexRequest) -> Result<IndexType> {
    let f = snap.manifest.schema.field(col);
    let element = vector_type(f.data_type()).map(|(el, _)| el);
    let vector = element.is_some();
    let t = req.index_type.unwrap_or(match element {
        Some(Element::U8) => IndexType::IvfFlat,
        Some(_) => IndexType::IvfPq,
        None => IndexType::BTree,
    });
    let (name, dt) = (f.name(), f.data_type());
    if t == IndexType::Fts {
        return super::fts::check_column(name, dt)
            .and_then(|_| req.check_scalar())
            .map(|_| t);
    }
    match (t.is_vector(), vector) {
        (true, _) => {
            check_binary(element == Some(Element::U8), t, req, name)?;
            vector_column(snap, name).map(|_| t)
        }
        (false, true) => Err(Error::invalid(format!(
            "cannot build {t} on vector column '{name}' ({dt}); use IVF_PQ, IVF_FLAT, IVF_RQ or IVF_HNSW_SQ"
        ))),
        (false, false) if btree::supported(dt) => req.check_scalar().map(|_| t),
        (false, false) => Err(Error::not_supported(format!(
            "{t} on column '{name}' of type {dt} is not supported by memwal yet (integers, floats, decimals, booleans, strings, binary, dates, times and timestamps are)"
        ))),
    }
}

/// Binary vectors (uint8) take IVF_FLAT with hamming distance (their default); hamming is refused
/// on any other column.
fn check_binary(binary: bool, t: IndexType, req: &IndexRequest, name: &str) -> Result<()> {
    let hamming = req.distance_type == Some(DistanceType::Hamming);
    if binary && t != IndexType::IvfFlat {
        return Err(Error::invalid(format!(
            "column '{name}' holds binary vectors (uint8): index it with IVF_FLAT and hamming distance, not {t}"
        )));
    }
    if binary && req.distance_type.is_some() && !hamming {
        return Err(Error::invalid(format!(
            "column '{name}' holds binary vectors (uint8): index it with hamming distance, not {}",
            req.distance_type.unwrap_or_default()
        )));
    }
    if !binary && hamming {
        return Err(Error::invalid(format!(
            "hamming distance is only for binary vectors (a fixed-size list of uint8); column '{name}' is not one"
        )));
    }
    Ok(())
}

/// The values of column `col` in the live rows of `snap`, with their row ids.
fn scalar_rows(
    snap: &Snapshot,
    col: usize,
    fragments: Option<&HashSet<u64>>,
) -> Result<(arrow::array::ArrayRef, Vec<u64>)> {
    let mut parts = Vec::with_capacity(snap.fragments.len());
    let mut ids = Vec::new();
    for f in &snap.fragments {
        if fragments.is_some_and(|s| !s.contains(&f.id)) {
            continue;
        }
        let c = f.batch.column(col);
        match f.live_mask() {
            Some(m) => {
                parts.push(arrow::compute::filter(c, &m)?);
                ids.extend(
                    (0..m.len())
                        .filter(|i| m.value(*i))
                        .map(|i| (f.id << 32) | i as u64),
                );
            }
            None => {
                parts.push(c.clone());
                ids.extend((0..c.len()).map(|i| (f.id << 32) | i as u64));
            }
        }
    }
    let dt = snap.manifest.schema.field(col).data_type().clone();
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    let values = if refs.is_empty() {
        arrow::array::new_empty_array(&dt)
    } else {
        arrow::compute::concat(&refs)?
    };
    Ok((values, ids))
}

/// An index name: the rule of table names.
fn check_name(name: &str) -> Result<()> {
    crate::name::validate_name("index name", name)
}

/// Live rows of `snap` whose fragment `ix` covers and that it holds (for
/// a BTREE: every live row of a covered fragment, nulls included).
pub(crate) fn indexed_rows(snap: &Snapshot, ix: &LoadedIndex) -> u64 {
    let Some(v) = ix.vector() else {
        return snap
            .manifest
            .fragments
            .iter()
            .filter(|f| ix.fragments.contains(&f.id))
            .map(|f| f.live_rows())
            .sum();
    };
    let live: std::collections::HashMap<u64, &crate::fragment::LoadedFragment> = snap
        .fragments
        .iter()
        .filter(|f| ix.fragments.contains(&f.id))
        .map(|f| (f.id, f))
        .collect();
    v.row_ids
        .iter()
        .filter(|id| {
            live.get(&(*id >> 32))
                .is_some_and(|f| !f.deleted.contains((**id & 0xffff_ffff) as u32))
        })
        .count() as u64
}

/// An index built and written, not yet in a version.
pub(crate) struct Built {
    pub(crate) meta: IndexMeta,
    pub(crate) files: Vec<crate::manifest::IndexFile>,
}

impl NativeTable {
    /// Builds the index `req` asks for over the latest version and commits
    /// a version that records it.
    pub fn create_index_sync(&self, req: &IndexRequest) -> Result<()> {
        self.ensure_writable()?;
        let _building = super::Building::start(&self.inner);
        let name = req.index_name();
        check_name(&name)?;
        let snap = self.snapshot()?;
        let col = column_of(&snap, &req.column)?;
        let t = index_type_for(&snap, col, req)?;
        if !req.replace {
            if let Some(old) = snap
                .manifest
                .indices
                .iter()
                .find(|i| i.name == name || i.columns == [req.column.clone()])
            {
                return Err(Error::invalid(format!(
                    "table '{}' already has the index '{}' on column '{}'; drop it first or pass replace: true",
                    self.table_name(), old.name, req.column
                )));
            }
        }
        let built = match t {
            IndexType::Fts => {
                let params = req.fts.clone().unwrap_or_default();
                let (meta, files) = self.build_fts(&snap, col, name, params)?;
                Built { meta, files }
            }
            t if t.is_vector() => {
                // The type resolved for the column (a binary vector's default is IVF_FLAT).
                let req = IndexRequest {
                    index_type: Some(t),
                    ..req.clone()
                };
                self.build_vector(&snap, col, name, &req)?
            }
            t => self.build_btree(&snap, col, name, t)?,
        };
        let wanted = snap.manifest.schema.field(col).data_type().clone();
        let files = built.files.clone();
        let out = self.publish_index(built.meta, wanted);
        if out.is_err() {
            store::remove(self.inner.storage.as_ref(), self.dir(), &files);
            self.remove_debris();
        }
        out
    }

    /// After a failed build of a table that has gone meanwhile (renamed or
    /// dropped): the folders its files were written into hold nothing else
    /// and would block a later table of this name; they go.
    fn remove_debris(&self) {
        let st = self.inner.storage.as_ref();
        let left = st.list(self.dir()).unwrap_or_default();
        let indices = format!("{}/_indices", self.dir());
        let empty = left.iter().all(|n| n == "_indices")
            && st.list(&indices).map(|l| l.is_empty()).unwrap_or(false);
        if !left.is_empty() && empty {
            // Best effort: the build's own error is what the caller hears.
            let _ = st.delete_dir(self.dir());
        }
    }

    /// Trains and writes a vector index on column `col` of `snap`.
    fn build_vector(
        &self,
        snap: &Snapshot,
        col: usize,
        name: String,
        req: &IndexRequest,
    ) -> Result<Built> {
        let (_, dim) = vector_column(snap, &req.column)?;
        let mut params = req.ivf_params(dim)?;
        let binary = vector_type(snap.manifest.schema.field(col).data_type())
            .is_some_and(|(el, _)| el == Element::U8);
        if binary {
            params.distance = DistanceType::Hamming;
        }
        let v = vectors_of(snap, col, params.distance, None)?;
        let ix = ivf::build(&v, dim, &params)?;
        let files = store::write(self.inner.storage.as_ref(), self.dir(), &ix)?;
        let meta = index_meta(name, req, dim, &params, &ix, files.clone(), snap);
        Ok(Built { meta, files })
    }

    /// Sorts and writes a BTREE (or BITMAP, the same structure) index on column `col` of `snap`.
    fn build_btree(
        &self,
        snap: &Snapshot,
        col: usize,
        name: String,
        kind: IndexType,
    ) -> Result<Built> {
        let (values, ids) = scalar_rows(snap, col, None)?;
        let ix = BTreeIndex::build(&values, ids)?;
        let files = store::write_btree(self.inner.storage.as_ref(), self.dir(), &ix)?;
        let meta = IndexMeta {
            name,
            columns: vec![snap.manifest.schema.field(col).name().clone()],
            index_type: kind.as_str().into(),
            distance_type: None,
            dimension: 0,
            num_sub_vectors: 0,
            num_bits: 0,
            params: BTreeMap::new(),
            files: files.clone(),
            fragment_ids: snap.fragments.iter().map(|f| f.id).collect(),
            created_at_ms: Some(crate::manifest::now_ms()),
        };
        Ok(Built { meta, files })
    }

    /// Commits a version whose index list has `meta` in place of any index
    /// of its name or column, if the column still has type `wanted`.
    fn publish_index(&self, meta: IndexMeta, wanted: arrow_schema::DataType) -> Result<()> {
        let column = meta.columns[0].clone();
        self.write_with_retry(
            Deadline::new(None),
            |now| {
                // A concurrent overwrite may have changed the column.
                let same = now
                    .manifest
                    .schema
                    .field_with_name(&column)
                    .ok()
                    .map(|f| f.data_type() == &wanted);
                if same != Some(true) {
                    return Err(Error::invalid(format!(
                        "column '{column}' changed while its index was being built; build it again"
                    )));
                }
                let mut list: Vec<IndexMeta> = now
                    .manifest
                    .indices
                    .iter()
                    .filter(|i| i.name != meta.name && i.columns != meta.columns)
                    .cloned()
                    .collect();
                list.push(meta.clone());
                Ok((
                    Some(Change {
                        indices: Some(list),
                        operation: "create_index",
                        ..Default::default()
                    }),
                    (),
                ))
            },
            |_, _, _| {},
        )
        .map(|_| ())
    }

    /// The indexes of the version reads see.
    pub fn list_indices_sync(&self) -> Result<Vec<IndexInfo>> {
        let snap = self.snapshot()?;
        snap.indices.iter().map(|ix| self.info(&snap, ix)).collect()
    }

    /// What `listIndices` reports of `ix`: its counts, and its files' sizes as the storage reports them.
    fn info(&self, snap: &Snapshot, ix: &LoadedIndex) -> Result<IndexInfo> {
        let mut size = 0;
        for f in &ix.meta.files {
            let path = format!("{}/{}", self.dir(), f.path);
            size += self
                .inner
                .storage
                .size(&path)?
                .ok_or_else(|| Error::Corrupt {
                    message: format!("a file of index '{}' is missing", ix.meta.name),
                    path,
                })?;
        }
        Ok(IndexInfo {
            size_bytes: Some(size),
            ..info(snap, ix)
        })
    }

    /// One index's statistics (no file sizes: stats do not report them, and `waitForIndex` polls this).
    pub fn index_stats_sync(&self, name: &str) -> Result<IndexInfo> {
        let snap = self.snapshot()?;
        snap.indices
            .iter()
            .find(|i| i.meta.name == name)
            .map(|ix| info(&snap, ix))
            .ok_or_else(|| Error::IndexNotFound {
                table: self.table_name().into(),
                name: name.into(),
            })
    }

    /// Drops an index (a new version without it; older versions keep it).
    pub fn drop_index_sync(&self, name: &str) -> Result<()> {
        let table = self.table_name().to_string();
        self.write_with_retry(
            Deadline::new(None),
            |now| {
                if !now.manifest.indices.iter().any(|i| i.name == name) {
                    return Err(Error::IndexNotFound {
                        table: table.clone(),
                        name: name.into(),
                    });
                }
                let list = now
                    .manifest
                    .indices
                    .iter()
                    .filter(|i| i.name != name)
                    .cloned()
                    .collect();
                Ok((
                    Some(Change {
                        indices: Some(list),
                        operation: "drop_index",
                        ..Default::default()
                    }),
                    (),
                ))
            },
            |_, _, _| {},
        )?;
        Ok(())
    }

    /// Whether an index of the latest version lacks a fragment or names
    /// one that is gone (from the manifest alone: cheap).
    pub fn indices_behind_sync(&self) -> Result<bool> {
        let m = self.manifest()?;
        let all: HashSet<u64> = m.fragments.iter().map(|f| f.id).collect();
        Ok(m.indices.iter().any(|i| {
            let covered: HashSet<u64> = i.fragment_ids.iter().copied().collect();
            covered != all
        }))
    }

    /// Adds every unindexed row to each index (assigned to its partitions
    /// and encoded with its trained quantiser: no retraining) and forgets
    /// rows deleted since; `Ok(None)` when every index is up to date.
    pub fn optimize_indices_sync(&self) -> Result<Option<u64>> {
        let _building = super::Building::start(&self.inner);
        let snap = self.snapshot()?;
        let mut list = Vec::new();
        let mut written = Vec::new();
        let mut built = Vec::new();
        let all: HashSet<u64> = snap.fragments.iter().map(|f| f.id).collect();
        for ix in &snap.indices {
            let fresh: HashSet<u64> = all.difference(&ix.fragments).copied().collect();
            let stale = !ix.meta.fragment_ids.iter().all(|f| all.contains(f));
            if fresh.is_empty() && !stale {
                list.push(ix.meta.as_ref().clone());
                continue;
            }
            let (files, new, data) = self.refresh_index(&snap, ix, &fresh, stale)?;
            written.extend(new);
            let mut meta = ix.meta.as_ref().clone();
            meta.files = files;
            meta.fragment_ids = all.iter().copied().collect();
            meta.fragment_ids.sort_unstable();
            built.extend(data.map(|d| (cache_key(&meta), d)));
            list.push(meta);
        }
        if written.is_empty() {
            return Ok(None);
        }
        let base = snap.manifest.version;
        let out = self.write_with_retry(
            Deadline::new(None),
            |now| {
                // Only on the version we folded: a newer one may have
                // rows or indexes this fold does not know of.
                if now.manifest.version != base {
                    return Ok((None, ()));
                }
                Ok((
                    Some(Change {
                        indices: Some(list.clone()),
                        operation: "optimize_indices",
                        ..Default::default()
                    }),
                    (),
                ))
            },
            |_, _, _| {},
        );
        match out {
            Ok((Some(v), _, _)) => {
                self.remember_indices(built);
                Ok(Some(v))
            }
            other => {
                store::remove(self.inner.storage.as_ref(), self.dir(), &written);
                other.map(|_| None)
            }
        }
    }
}

impl NativeTable {
    /// Writes `ix` again with the rows of `fresh` fragments added and rows
    /// deleted since forgotten: a vector index folds them in with its
    /// trained model (a delta file of the new rows while it can); a BTREE
    /// (or BITMAP) writes the new rows sorted as a delta file (merged in
    /// memory), or is sorted again from the live rows once rows are gone or
    /// [`MAX_INDEX_DELTAS`] deltas exist; an FTS index gets one more segment.
    /// Returns every file, those written, and the index in memory when this
    /// wrote it whole or merged it (an FTS segment: none).
    fn refresh_index(
        &self,
        snap: &Snapshot,
        ix: &LoadedIndex,
        fresh: &HashSet<u64>,
        stale: bool,
    ) -> Result<(
        Vec<crate::manifest::IndexFile>,
        Vec<crate::manifest::IndexFile>,
        Option<IndexData>,
    )> {
        if let IndexData::Text(t) = &ix.data {
            let (all, new) = self.fold_fts(snap, &ix.meta, t, fresh)?;
            return Ok((all, new, None));
        }
        let storage = self.inner.storage.as_ref();
        let files = match &ix.data {
            IndexData::Vector(v) => {
                let (col, _) = vector_column(snap, &ix.meta.columns[0])?;
                let add = vectors_of(snap, col, v.distance, Some(fresh))?;
                if takes_delta(ix, stale) {
                    // Only the new rows, as one more file of the index.
                    let delta = v.encode_delta(&add)?;
                    let (all, new, merged) = add_vector_delta(storage, self.dir(), ix, v, &delta)?;
                    return Ok((all, new, Some(merged)));
                }
                let keep = |id: u64| {
                    snap.fragment(id >> 32)
                        .is_some_and(|f| !f.deleted.contains((id & 0xffff_ffff) as u32))
                };
                let folded = v.with_rows(&keep, &add, &[])?;
                let files = store::write(storage, self.dir(), &folded)?;
                (files, IndexData::Vector(Arc::new(folded)))
            }
            IndexData::Scalar(base) => {
                let col = column_of(snap, &ix.meta.columns[0])?;
                let deltas = ix.meta.files.iter().filter(|f| f.is_delta()).count();
                if !stale && deltas < MAX_INDEX_DELTAS {
                    // Only the new rows, sorted, as one more file; in memory, merged.
                    let (values, ids) = scalar_rows(snap, col, Some(fresh))?;
                    let d = BTreeIndex::build(&values, ids)?;
                    let new = store::write_btree_delta(storage, self.dir(), &d)?;
                    let merged = IndexData::Scalar(Arc::new(base.merged(&d)?));
                    let mut all = ix.meta.files.clone();
                    all.extend(new.iter().cloned());
                    return Ok((all, new, Some(merged)));
                }
                let (values, ids) = scalar_rows(snap, col, None)?;
                let b = BTreeIndex::build(&values, ids)?;
                let files = store::write_btree(storage, self.dir(), &b)?;
                (files, IndexData::Scalar(Arc::new(b)))
            }
            IndexData::Text(_) => return Err(Error::internal("FTS refreshed above")),
        };
        Ok((files.0.clone(), files.0, Some(files.1)))
    }
}

/// Writes `d` as one more delta file of vector index `ix` (loaded as `v`)
/// and merges it in memory here, off the read path, so the next search
/// does not decode the whole index again: every file of the index, the one
/// written, and the merged index (the file is removed if the merge fails).
pub(crate) fn add_vector_delta(
    storage: &dyn crate::storage::Storage,
    dir: &str,
    ix: &LoadedIndex,
    v: &IvfIndex,
    d: &crate::index::ivf::Delta,
) -> Result<(
    Vec<crate::manifest::IndexFile>,
    Vec<crate::manifest::IndexFile>,
    IndexData,
)> {
    let new = store::write_delta(storage, dir, v, d)?;
    let merged = match v.with_delta(d) {
        Ok(m) => m,
        Err(e) => {
            store::remove(storage, dir, &new);
            return Err(e);
        }
    };
    let mut all = ix.meta.files.clone();
    all.extend(new.iter().cloned());
    Ok((all, new, IndexData::Vector(Arc::new(merged))))
}

/// Most delta files an IVF or BTREE index gathers before a fold rewrites it
/// whole (merging them, and dropping deleted rows' entries).
pub const MAX_INDEX_DELTAS: usize = 8;

/// Whether a fold of `ix` writes a delta (the new rows alone) rather than
/// the whole index (for IVF_HNSW_SQ: the graphs relinked): no fragment of it gone from the
/// table (`stale`: its entries are dropped by a rewrite), and fewer than
/// [`MAX_INDEX_DELTAS`] deltas so far.
pub(crate) fn takes_delta(ix: &LoadedIndex, stale: bool) -> bool {
    let deltas = ix.meta.files.iter().filter(|f| f.is_delta()).count();
    !stale && deltas < MAX_INDEX_DELTAS
}

/// The manifest entry of a new index built over `snap`.
fn index_meta(
    name: String,
    req: &IndexRequest,
    dim: usize,
    params: &ivf::IvfParams,
    ix: &IvfIndex,
    files: Vec<crate::manifest::IndexFile>,
    snap: &Snapshot,
) -> IndexMeta {
    let mut used = BTreeMap::new();
    used.insert("num_partitions".into(), json!(ix.num_partitions()));
    used.insert("sample_rate".into(), json!(params.sample_rate));
    used.insert("max_iterations".into(), json!(params.max_iterations));
    if let Some(bits) = params.rq {
        used.insert("num_bits".into(), json!(bits));
    }
    if let Some(h) = params.hnsw {
        used.insert("m".into(), json!(h.m));
        used.insert("ef_construction".into(), json!(h.ef_construction));
    }
    IndexMeta {
        name,
        columns: vec![req.column.clone()],
        index_type: store::kind(ix).into(),
        distance_type: Some(params.distance.as_str().into()),
        dimension: dim as u64,
        num_sub_vectors: params.pq.map_or(0, |(m, _)| m as u64),
        num_bits: params.rq.or(params.pq.map(|(_, b)| b)).unwrap_or(8),
        params: used,
        files,
        fragment_ids: snap.fragments.iter().map(|f| f.id).collect(),
        created_at_ms: Some(crate::manifest::now_ms()),
    }
}

/// What `listIndices` reports of `ix`.
fn info(snap: &Snapshot, ix: &LoadedIndex) -> IndexInfo {
    let indexed = indexed_rows(snap, ix);
    let stems = file_stems(&ix.meta);
    let unindexed = snap
        .manifest
        .fragments
        .iter()
        .filter(|f| !ix.fragments.contains(&f.id))
        .map(|f| f.live_rows())
        .sum();
    IndexInfo {
        name: ix.meta.name.clone(),
        index_type: ix.meta.index_type.clone(),
        columns: ix.meta.columns.clone(),
        distance_type: ix.meta.distance_type.clone(),
        num_indexed_rows: indexed,
        num_unindexed_rows: unindexed,
        uuid: stems.first().map(|s| hyphenated(s)),
        num_segments: stems.len() as u64,
        size_bytes: None,
        created_at_ms: ix.meta.created_at_ms,
        details: serde_json::to_string(&ix.meta.params).ok(),
        index_version: index_version(ix),
    }
}

/// Lance's version of the index's format, where ours answers it (see [`IndexInfo`]).
fn index_version(ix: &LoadedIndex) -> Option<u32> {
    if let Some(text) = ix.text() {
        return Some(text.params.index_version());
    }
    ix.meta.index_type.starts_with("IVF_").then_some(1)
}

/// A file id as Lance writes an index uuid (`8-4-4-4-12`), or as it is when it is not a uuid.
fn hyphenated(stem: &str) -> String {
    uuid::Uuid::try_parse(stem).map_or_else(|_| stem.to_string(), |u| u.hyphenated().to_string())
}

/// The ids (`_indices/<id><suffix>`) the files of `meta` were written under, in file order, each once.
fn file_stems(meta: &IndexMeta) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for f in &meta.files {
        let name = f.path.strip_prefix("_indices/").unwrap_or(&f.path);
        let stem = name
            .get(..32)
            .filter(|s| s.bytes().all(|b| b.is_ascii_hexdigit()))
            .unwrap_or(name);
        if !out.contains(&stem) {
            out.push(stem);
        }
    }
    out
}

/// The key of a loaded index in the cache: its files (an FTS fold keeps the old segment files
/// and adds one, so the first file alone does not name the build).
pub(crate) fn cache_key(meta: &IndexMeta) -> String {
    meta.files
        .iter()
        .map(|f| f.path.as_str())
        .collect::<Vec<_>>()
        .join("|")
}

/// Indexes a commit wrote, in memory, by cache key ([`cache_key`] of their
/// manifest entry), for [`NativeTable::remember_indices`] once it lands.
pub(crate) type BuiltIndexes = Vec<(String, IndexData)>;

impl NativeTable {
    /// Caches indexes a commit of this process has just published (by their
    /// files), so the next read need not read and decode them again.
    pub(crate) fn remember_indices(&self, built: BuiltIndexes) {
        if !built.is_empty() {
            super::lock(&self.inner.state).ann.extend(built);
        }
    }
}
