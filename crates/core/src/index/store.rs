//! An index on disk (IVF or BTREE): Arrow IPC files (readable by pyarrow as they are)
//! next to the table's data, named in the manifest with their crc32c.
//!
//! ```text
//! _indices/{uuid}-centroids.arrow   centroid: FixedSizeList<Float32>[dim], end: UInt64
//!                                   (one row per partition; rows end[p-1]..end[p])
//! _indices/{uuid}-codebook.arrow    IVF_PQ: subcentroid: FixedSizeList<Float32>[dim / m]
//!                                   (m blocks of 2^bits rows)
//! _indices/{uuid}-sq.arrow          IVF_HNSW_SQ: min, step: FixedSizeList<Float32>[dim] (one row)
//! _indices/{uuid}-rotation.arrow    IVF_RQ: signs: FixedSizeBinary[ceil(dim / 8)] (one row per round of
//!                                   the rotation's sign flips, see `rq`)
//! _indices/{uuid}-rows.arrow        row_id: UInt64, then vector: FixedSizeList<Float32>[dim]
//!                                   (IVF_FLAT), code: FixedSizeBinary[m] (IVF_PQ),
//!                                   code: FixedSizeBinary[bits * ceil(dim / 8) + 8] (IVF_RQ: the
//!                                   bit planes, the squared norm and the factor, see `rq`), or
//!                                   code: FixedSizeBinary[dim] and level: UInt8 (IVF_HNSW_SQ)
//! _indices/{uuid}-links.arrow       IVF_HNSW_SQ: links: List<UInt32>, one row per node and
//!                                   level 0..=level, node by node (neighbours within the partition)
//! _indices/{uuid}-btree.arrow       BTREE: value (the column's type, no nulls, sorted), row_id: UInt64
//! _indices/{uuid}-delta.arrow       IVF rows added since the files above were written (a fold's new rows,
//!                                   a compaction's moved ones under their new ids; IVF_HNSW_SQ: rows
//!                                   no graph links yet): row_id: UInt64, part: UInt32, then vector or
//!                                   code as in -rows
//!                                   (any number of them, applied in the manifest's order)
//! ```
//! Reading checks every length, offset, code and link count, so a damaged
//! file is a `Corrupt` error, never an out-of-bounds read.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, FixedSizeBinaryArray, FixedSizeListArray, Float32Array, ListArray,
    RecordBatch, UInt32Array, UInt64Array, UInt8Array,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{Float32Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::btree::BTreeIndex;
use super::hnsw::{Graph, HnswParams, Sq};
use super::ivf::{Delta, IvfIndex, Payload};
use super::pq::Pq;
use super::rq::Rq;
use crate::error::{Error, Result};
use crate::fragment::{read_data_file, CrcWriter};
use crate::manifest::{IndexFile, IndexMeta, DELTA_SUFFIX};
use crate::query::DistanceType;
use crate::storage::Storage;

fn fsl(name: &str, dim: usize) -> Result<Field> {
    let n = i32::try_from(dim).map_err(|_| Error::invalid("vector dimension too large"))?;
    Ok(Field::new(
        name,
        DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), n),
        false,
    ))
}

fn fsb(name: &str, width: usize) -> Result<Field> {
    let n = i32::try_from(width).map_err(|_| Error::invalid("code too wide"))?;
    Ok(Field::new(name, DataType::FixedSizeBinary(n), false))
}

fn schema(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

fn links_field() -> Field {
    Field::new(
        "links",
        DataType::List(Arc::new(Field::new("item", DataType::UInt32, true))),
        false,
    )
}

/// The schema of each file of an index of `kind` over `dim` (`w`: code width).
fn schemas(kind: &str, dim: usize, w: usize) -> Result<Vec<(&'static str, SchemaRef)>> {
    let id = || Field::new("row_id", DataType::UInt64, false);
    let mut out = vec![(
        "-centroids.arrow",
        schema(vec![
            fsl("centroid", dim)?,
            Field::new("end", DataType::UInt64, false),
        ]),
    )];
    match kind {
        "IVF_FLAT" => out.push(("-rows.arrow", schema(vec![id(), fsl("vector", dim)?]))),
        "IVF_PQ" => {
            out.push((
                "-codebook.arrow",
                schema(vec![fsl("subcentroid", dim / w.max(1))?]),
            ));
            out.push(("-rows.arrow", schema(vec![id(), fsb("code", w)?])));
        }
        "IVF_RQ" => {
            out.push((
                "-rotation.arrow",
                schema(vec![fsb("signs", dim.div_ceil(8))?]),
            ));
            out.push(("-rows.arrow", schema(vec![id(), fsb("code", w)?])));
        }
        "IVF_HNSW_SQ" => {
            out.push((
                "-sq.arrow",
                schema(vec![fsl("min", dim)?, fsl("step", dim)?]),
            ));
            out.push((
                "-rows.arrow",
                schema(vec![
                    id(),
                    fsb("code", dim)?,
                    Field::new("level", DataType::UInt8, false),
                ]),
            ));
            out.push(("-links.arrow", schema(vec![links_field()])));
        }
        other => return Err(Error::invalid(format!("no index files for type {other}"))),
    }
    Ok(out)
}

fn vectors(field: &Field, data: Vec<f32>) -> Result<ArrayRef> {
    let DataType::FixedSizeList(item, n) = field.data_type() else {
        return Err(Error::internal("not a vector field"));
    };
    Ok(Arc::new(FixedSizeListArray::try_new(
        item.clone(),
        *n,
        Arc::new(Float32Array::from(data)),
        None,
    )?))
}

fn codes(width: usize, bytes: &[u8]) -> Result<ArrayRef> {
    let w = i32::try_from(width).map_err(|_| Error::invalid("code too wide"))?;
    Ok(Arc::new(FixedSizeBinaryArray::try_new(
        w,
        bytes.to_vec().into(),
        None,
    )?))
}

/// The wire type name of `ix`.
pub fn kind(ix: &IvfIndex) -> &'static str {
    match ix.payload {
        Payload::Flat(_) => "IVF_FLAT",
        Payload::Pq { .. } => "IVF_PQ",
        Payload::Rq { .. } => "IVF_RQ",
        Payload::Hnsw { .. } => "IVF_HNSW_SQ",
    }
}

/// Bytes (codes) or floats (vectors) per row of `ix`'s rows file.
fn row_width(ix: &IvfIndex) -> usize {
    match &ix.payload {
        Payload::Pq { pq, .. } => pq.m,
        Payload::Rq { rq, .. } => rq.code_width(),
        _ => ix.dim,
    }
}

/// The columns of each file of `ix`, in [`schemas`] order.
fn columns(ix: &IvfIndex, s: &[(&str, SchemaRef)]) -> Result<Vec<Vec<ArrayRef>>> {
    let ends = UInt64Array::from_iter_values(ix.offsets[1..].iter().map(|e| *e as u64));
    let mut out = vec![vec![
        vectors(s[0].1.field(0), ix.centroids.clone())?,
        Arc::new(ends) as ArrayRef,
    ]];
    let ids: ArrayRef = Arc::new(UInt64Array::from(ix.row_ids.clone()));
    match &ix.payload {
        Payload::Flat(v) => out.push(vec![ids, vectors(s[1].1.field(1), v.clone())?]),
        Payload::Pq { pq, codes: c } => {
            out.push(vec![vectors(s[1].1.field(0), pq.codebook.clone())?]);
            out.push(vec![ids, codes(pq.m, c)?]);
        }
        Payload::Rq { rq, codes: c } => {
            out.push(vec![codes(rq.dim.div_ceil(8), rq.signs())?]);
            out.push(vec![ids, codes(rq.code_width(), c)?]);
        }
        Payload::Hnsw {
            sq,
            codes: c,
            graphs,
            ..
        } => {
            out.push(vec![
                vectors(s[1].1.field(0), sq.min.clone())?,
                vectors(s[1].1.field(1), sq.step.clone())?,
            ]);
            let nodes = graphs.iter().flat_map(|g| g.links.iter());
            let levels = UInt8Array::from_iter_values(nodes.clone().map(|l| (l.len() - 1) as u8));
            out.push(vec![ids, codes(ix.dim, c)?, Arc::new(levels)]);
            let lists = nodes.flat_map(|l| l.iter());
            let lens: Vec<usize> = lists.clone().map(Vec::len).collect();
            let values = UInt32Array::from_iter_values(lists.flatten().copied());
            let item = Arc::new(Field::new("item", DataType::UInt32, true));
            out.push(vec![Arc::new(ListArray::try_new(
                item,
                OffsetBuffer::from_lengths(lens),
                Arc::new(values),
                None,
            )?)]);
        }
    }
    Ok(out)
}

/// Writes `ix` under `{table}/_indices/` (fsynced, folder too); returns the
/// files as the manifest records them.
pub fn write(storage: &dyn Storage, table: &str, ix: &IvfIndex) -> Result<Vec<IndexFile>> {
    let s = schemas(kind(ix), ix.dim, row_width(ix))?;
    let cols = columns(ix, &s)?;
    let mut batches = Vec::new();
    for ((suffix, sc), c) in s.iter().zip(cols) {
        batches.push((*suffix, RecordBatch::try_new(sc.clone(), c)?));
    }
    write_files(storage, table, &batches)
}

/// The schema of a delta file of an index of `kind` over `dim` (`w`: code width).
fn delta_schema(kind: &str, dim: usize, w: usize) -> Result<SchemaRef> {
    let id = Field::new("row_id", DataType::UInt64, false);
    let part = Field::new("part", DataType::UInt32, false);
    match kind {
        "IVF_FLAT" => Ok(schema(vec![id, part, fsl("vector", dim)?])),
        "IVF_PQ" | "IVF_RQ" | "IVF_HNSW_SQ" => Ok(schema(vec![id, part, fsb("code", w)?])),
        other => Err(Error::invalid(format!("no delta files for type {other}"))),
    }
}

/// Writes the rows `d` adds to `ix` as one delta file (fsynced, folder
/// too); returns it as the manifest records it (after the index's files).
pub fn write_delta(
    storage: &dyn Storage,
    table: &str,
    ix: &IvfIndex,
    d: &Delta,
) -> Result<Vec<IndexFile>> {
    let (w, payload): (usize, ArrayRef) = match (&ix.payload, &d.payload) {
        (Payload::Flat(_), Payload::Flat(v)) => {
            let sc = delta_schema("IVF_FLAT", ix.dim, ix.dim)?;
            (ix.dim, vectors(sc.field(2), v.clone())?)
        }
        (Payload::Pq { pq, .. }, Payload::Pq { codes: c, .. }) => (pq.m, codes(pq.m, c)?),
        (Payload::Rq { rq, .. }, Payload::Rq { codes: c, .. }) => {
            (rq.code_width(), codes(rq.code_width(), c)?)
        }
        (Payload::Hnsw { .. }, Payload::Hnsw { codes: c, .. }) => (ix.dim, codes(ix.dim, c)?),
        _ => {
            return Err(Error::internal(
                "a delta of another payload than its index's",
            ))
        }
    };
    let sc = delta_schema(kind(ix), ix.dim, w)?;
    let batch = RecordBatch::try_new(
        sc,
        vec![
            Arc::new(UInt64Array::from(d.row_ids.clone())),
            Arc::new(UInt32Array::from(d.parts.clone())),
            payload,
        ],
    )?;
    write_files(storage, table, &[(DELTA_SUFFIX, batch)])
}

/// `ix` with the delta files of `meta` applied, in order (each checked:
/// partitions in range, codes within the quantiser's range). The deltas are
/// gathered and merged into the index in one pass: each merge copies the
/// whole index, so applying them one by one would cost one copy per delta.
fn apply_deltas(
    storage: &dyn Storage,
    table: &str,
    meta: &IndexMeta,
    ix: IvfIndex,
) -> Result<IvfIndex> {
    let w = row_width(&ix);
    let mut all: Option<Delta> = None;
    for f in meta.files.iter().filter(|f| f.is_delta()) {
        let path = format!("{table}/{}", f.path);
        let corrupt = |message: String| Error::Corrupt {
            path: path.clone(),
            message: format!("index {:?}: {message}", meta.name),
        };
        let sc = delta_schema(&meta.index_type, ix.dim, w).map_err(|e| corrupt(e.to_string()))?;
        let b = read_data_file(storage, &path, &sc, Some(f.crc32c))?;
        let row_ids = b.column(0).as_primitive::<UInt64Type>().values().to_vec();
        let parts = b.column(1).as_primitive::<UInt32Type>().values().to_vec();
        let nlist = ix.num_partitions();
        if parts.iter().any(|p| *p as usize >= nlist) {
            return Err(corrupt(format!("a delta row's partition is past {nlist}")));
        }
        let payload = match &ix.payload {
            Payload::Flat(_) => {
                Payload::Flat(floats(b.column(2)).ok_or_else(|| corrupt("delta vectors".into()))?)
            }
            Payload::Pq { pq, .. } => {
                let c = b.column(2).as_fixed_size_binary().value_data().to_vec();
                if c.len() != row_ids.len() * pq.m || c.iter().any(|x| usize::from(*x) >= pq.k()) {
                    return Err(corrupt("a delta code is out of range".into()));
                }
                Payload::Pq {
                    pq: pq.clone(),
                    codes: c,
                }
            }
            Payload::Rq { rq, .. } => {
                let c = b.column(2).as_fixed_size_binary().value_data().to_vec();
                if c.len() != row_ids.len() * w || !rq.codes_valid(&c) {
                    return Err(corrupt("a delta's RaBitQ codes are damaged".into()));
                }
                Payload::Rq {
                    rq: rq.clone(),
                    codes: c,
                }
            }
            Payload::Hnsw { sq, params, .. } => {
                // Any byte is a scalar-quantiser code; only the size is checked.
                let c = b.column(2).as_fixed_size_binary().value_data().to_vec();
                if c.len() != row_ids.len() * ix.dim {
                    return Err(corrupt("a delta's codes are not one per dimension".into()));
                }
                Payload::Hnsw {
                    sq: sq.clone(),
                    codes: c,
                    graphs: Vec::new(),
                    params: *params,
                }
            }
        };
        let d = Delta {
            row_ids,
            parts,
            payload,
        };
        all = Some(match all {
            None => d,
            Some(a) => a.then(d).map_err(|e| corrupt(e.to_string()))?,
        });
    }
    match all {
        Some(d) => ix.with_delta(&d),
        None => Ok(ix),
    }
}

/// The schema of a BTREE index file over a column of type `dt`.
fn btree_schema(dt: &DataType) -> SchemaRef {
    schema(vec![
        Field::new("value", dt.clone(), false),
        Field::new("row_id", DataType::UInt64, false),
    ])
}

/// Writes a BTREE index as `{table}/_indices/{uuid}-btree.arrow`.
pub fn write_btree(storage: &dyn Storage, table: &str, ix: &BTreeIndex) -> Result<Vec<IndexFile>> {
    let sc = btree_schema(ix.values.data_type());
    let ids: ArrayRef = Arc::new(UInt64Array::from(ix.row_ids.clone()));
    let batch = RecordBatch::try_new(sc, vec![ix.values.clone(), ids])?;
    write_files(storage, table, &[("-btree.arrow", batch)])
}

/// A fresh folder for the files of one index write, relative to the table
/// folder: `_indices/{uuid}`, as Lance lays out `_indices/{uuid}/index.idx`
/// (so each index, and each delta of one, is one entry of `_indices`).
/// Tables written before this layout name `_indices/{uuid}{suffix}` files
/// directly; the manifest names every file, so both are read alike.
pub fn new_folder() -> String {
    format!("_indices/{}", uuid::Uuid::new_v4().simple())
}

/// Writes one Arrow IPC file per batch, named `index{suffix}` in a
/// [`new_folder`], then syncs the folder; on failure removes what it wrote.
fn write_files(
    storage: &dyn Storage,
    table: &str,
    batches: &[(&str, RecordBatch)],
) -> Result<Vec<IndexFile>> {
    let stem = new_folder();
    let mut files = Vec::new();
    for (suffix, batch) in batches {
        let rel = format!("{stem}/index{suffix}");
        let mut crc = 0;
        let put = storage.put_with(&format!("{table}/{rel}"), &mut |w| {
            let mut w = CrcWriter::new(w);
            crate::ipc::write_file(&mut w, &batch.schema(), std::slice::from_ref(batch))?;
            crc = w.crc;
            Ok(())
        });
        if let Err(e) = put {
            remove(storage, table, &files);
            return Err(e);
        }
        files.push(IndexFile {
            path: rel,
            crc32c: crc,
        });
    }
    if let Err(e) = storage.sync(&format!("{table}/{stem}")) {
        remove(storage, table, &files);
        return Err(e);
    }
    Ok(files)
}

/// Writes the rows a fold adds to a BTREE (or BITMAP) index as one more file
/// of it, a delta (the BTREE's columns, sorted), read back merged with it.
pub fn write_btree_delta(
    storage: &dyn Storage,
    table: &str,
    ix: &BTreeIndex,
) -> Result<Vec<IndexFile>> {
    let sc = btree_schema(ix.values.data_type());
    let ids: ArrayRef = Arc::new(UInt64Array::from(ix.row_ids.clone()));
    let batch = RecordBatch::try_new(sc, vec![ix.values.clone(), ids])?;
    write_files(storage, table, &[(DELTA_SUFFIX, batch)])
}

/// Reads the BTREE index `meta` describes over a column of type `dt`: its
/// file, merged with each delta file in the manifest's order.
pub fn read_btree(
    storage: &dyn Storage,
    table: &str,
    meta: &IndexMeta,
    dt: &DataType,
) -> Result<BTreeIndex> {
    let f = meta
        .files
        .iter()
        .find(|f| f.path.ends_with("-btree.arrow"))
        .ok_or_else(|| Error::Corrupt {
            path: table.to_string(),
            message: format!("index {:?}: no -btree.arrow file", meta.name),
        })?;
    let mut ix = read_btree_file(storage, table, meta, f, dt)?;
    for d in meta.files.iter().filter(|f| f.is_delta()) {
        ix = ix.merged(&read_btree_file(storage, table, meta, d, dt)?)?;
    }
    Ok(ix)
}

/// One file of a BTREE index, checked.
fn read_btree_file(
    storage: &dyn Storage,
    table: &str,
    meta: &IndexMeta,
    f: &IndexFile,
    dt: &DataType,
) -> Result<BTreeIndex> {
    let path = format!("{table}/{}", f.path);
    let b = read_data_file(storage, &path, &btree_schema(dt), Some(f.crc32c))?;
    let ids = b.column(1).as_primitive::<UInt64Type>().values().to_vec();
    BTreeIndex::from_parts(b.column(0).clone(), ids).map_err(|message| Error::Corrupt {
        path,
        message: format!("index {:?}: {message}", meta.name),
    })
}

/// Deletes the files of an index that never made it into a version.
pub fn remove(storage: &dyn Storage, table: &str, files: &[IndexFile]) {
    for f in files {
        let _ = storage.delete(&format!("{table}/{}", f.path));
        // The folder of a [`new_folder`] write goes with its files.
        if let Some((folder, _)) = f.path.rsplit_once('/') {
            if folder.starts_with("_indices/") {
                let _ = storage.delete_dir(&format!("{table}/{folder}"));
            }
        }
    }
}

/// Reads the index `meta` describes.
pub fn read(storage: &dyn Storage, table: &str, meta: &IndexMeta) -> Result<IvfIndex> {
    let corrupt = |message: String| Error::Corrupt {
        path: format!(
            "{table}/{}",
            meta.files.first().map_or("", |f| f.path.as_str())
        ),
        message: format!("index {:?}: {message}", meta.name),
    };
    let dim = usize::try_from(meta.dimension).map_err(|_| corrupt("dimension".into()))?;
    let m = usize::try_from(meta.num_sub_vectors).map_err(|_| corrupt("sub-vectors".into()))?;
    if dim == 0 || (meta.index_type == "IVF_PQ" && (m == 0 || !dim.is_multiple_of(m))) {
        return Err(corrupt(format!("{m} sub-vectors for dimension {dim}")));
    }
    // The rows file's code width: PQ's sub-vectors, RaBitQ's planes and factors.
    let w = match meta.index_type.as_str() {
        "IVF_RQ" => super::rq::code_width(dim, meta.num_bits),
        _ => m,
    };
    let distance: DistanceType = meta
        .distance_type
        .as_deref()
        .unwrap_or("l2")
        .parse()
        .map_err(|e: Error| corrupt(e.to_string()))?;
    let mut batches = Vec::new();
    for (suffix, sc) in schemas(&meta.index_type, dim, w).map_err(|e| corrupt(e.to_string()))? {
        let f = meta
            .files
            .iter()
            .find(|f| f.path.ends_with(suffix))
            .ok_or_else(|| corrupt(format!("no {suffix} file")))?;
        let path = format!("{table}/{}", f.path);
        batches.push(read_data_file(storage, &path, &sc, Some(f.crc32c))?);
    }
    let c = &batches[0];
    let centroids = floats(c.column(0)).ok_or_else(|| corrupt("centroids".into()))?;
    let mut offsets = vec![0usize];
    offsets.extend(
        c.column(1)
            .as_primitive::<UInt64Type>()
            .values()
            .iter()
            .map(|e| *e as usize),
    );
    let rows = batches
        .iter()
        .find(|b| b.schema().field(0).name() == "row_id");
    let rows = rows.ok_or_else(|| corrupt("no rows".into()))?;
    let row_ids = rows
        .column(0)
        .as_primitive::<UInt64Type>()
        .values()
        .to_vec();
    let payload = payload(meta, &batches, rows, &offsets, dim, m).map_err(corrupt)?;
    let ix = IvfIndex::from_parts(distance, dim, centroids, offsets, row_ids, payload)
        .map_err(corrupt)?;
    apply_deltas(storage, table, meta, ix)
}

/// The payload of an index of `meta`'s type from its files (`rows`: the one with row ids).
fn payload(
    meta: &IndexMeta,
    batches: &[RecordBatch],
    rows: &RecordBatch,
    offsets: &[usize],
    dim: usize,
    m: usize,
) -> std::result::Result<Payload, String> {
    let bytes = |b: &RecordBatch| b.column(1).as_fixed_size_binary().value_data().to_vec();
    Ok(match meta.index_type.as_str() {
        "IVF_FLAT" => Payload::Flat(floats(rows.column(1)).ok_or("vectors")?),
        "IVF_PQ" => {
            let book = floats(batches[1].column(0)).ok_or("codebook")?;
            Payload::Pq {
                pq: Pq::from_codebook(dim, m, meta.num_bits, book).map_err(|e| e.to_string())?,
                codes: bytes(rows),
            }
        }
        "IVF_RQ" => {
            let signs = batches[1].column(0).as_fixed_size_binary();
            if signs.null_count() > 0 {
                return Err("null rotation signs".into());
            }
            let signs = signs.value_data().to_vec();
            Payload::Rq {
                rq: Rq::from_signs(dim, meta.num_bits, signs).map_err(|e| e.to_string())?,
                codes: bytes(rows),
            }
        }
        _ => hnsw_payload(meta, batches, offsets)?,
    })
}

/// The HNSW payload from its files (sq, rows, links).
fn hnsw_payload(
    meta: &IndexMeta,
    b: &[RecordBatch],
    offsets: &[usize],
) -> std::result::Result<Payload, String> {
    let sq = Sq {
        min: floats(b[1].column(0)).ok_or("sq bounds")?,
        step: floats(b[1].column(1)).ok_or("sq steps")?,
    };
    if b[1].num_rows() != 1 {
        return Err("the sq file must hold one row".into());
    }
    let codes = b[2].column(1).as_fixed_size_binary().value_data().to_vec();
    let levels = b[2].column(2).as_primitive::<UInt8Type>().values();
    let lists = b[3].column(0).as_list::<i32>();
    let want: usize = levels.iter().map(|l| *l as usize + 1).sum();
    if lists.len() != want || levels.len() != offsets.last().copied().unwrap_or(0) {
        return Err(format!("{} link lists for {want} node levels", lists.len()));
    }
    let param = |k: &str, d: usize| {
        meta.params
            .get(k)
            .and_then(|v| v.as_u64())
            .map_or(d, |v| v as usize)
    };
    let params = HnswParams {
        m: param("m", 20),
        ef_construction: param("ef_construction", 300),
    };
    let mut graphs = Vec::with_capacity(offsets.len() - 1);
    let mut at = 0usize;
    for w in offsets.windows(2) {
        let mut links = Vec::with_capacity(w[1] - w[0]);
        for node in w[0]..w[1] {
            let mut per = Vec::with_capacity(levels[node] as usize + 1);
            for _ in 0..=levels[node] {
                let l = lists.value(at);
                at += 1;
                let l = l.as_primitive::<UInt32Type>();
                if l.null_count() > 0 || l.values().iter().any(|x| *x as usize >= w[1] - w[0]) {
                    return Err(format!("node {node} links outside its partition"));
                }
                per.push(l.values().to_vec());
            }
            links.push(per);
        }
        graphs.push(Graph::from_links(links));
    }
    Ok(Payload::Hnsw {
        sq,
        codes,
        graphs,
        params,
    })
}

/// The floats of a vector column with no nulls.
fn floats(a: &ArrayRef) -> Option<Vec<f32>> {
    let l = a.as_fixed_size_list_opt()?;
    if l.null_count() > 0 || l.values().null_count() > 0 {
        return None;
    }
    let v = l.values().as_primitive_opt::<Float32Type>()?;
    let start = l.value_offset_at(0);
    let end = l.value_offset_at(l.len());
    Some(v.values()[start..end].to_vec())
}
