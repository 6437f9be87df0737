//! An IVF index on disk: Arrow IPC files (readable by pyarrow as they are)
//! next to the table's data, named in the manifest with their crc32c.
//!
//! ```text
//! _indices/{uuid}-centroids.arrow   centroid: FixedSizeList<Float32>[dim], end: UInt64
//!                                   (one row per partition; rows end[p-1]..end[p])
//! _indices/{uuid}-codebook.arrow    subcentroid: FixedSizeList<Float32>[dim / m]
//!                                   (IVF_PQ: m blocks of 2^bits rows)
//! _indices/{uuid}-rows.arrow        row_id: UInt64, then code: FixedSizeBinary[m]
//!                                   (IVF_PQ) or vector: FixedSizeList<Float32>[dim]
//! ```
//! Reading checks every length, offset and code, so a damaged file is a
//! `Corrupt` error, never an out-of-bounds read.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, FixedSizeBinaryArray, FixedSizeListArray, Float32Array, RecordBatch,
    UInt64Array,
};
use arrow::datatypes::{Float32Type, UInt64Type};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::ivf::{IvfIndex, Payload};
use super::pq::Pq;
use crate::error::{Error, Result};
use crate::fragment::{read_data_file, CrcWriter};
use crate::manifest::{IndexFile, IndexMeta};
use crate::storage::Storage;
use crate::vector::DistanceType;

fn fsl(name: &str, dim: usize) -> Result<Field> {
    let n = i32::try_from(dim).map_err(|_| Error::invalid("vector dimension too large"))?;
    Ok(Field::new(
        name,
        DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), n),
        false,
    ))
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

fn centroid_schema(dim: usize) -> Result<SchemaRef> {
    Ok(Arc::new(Schema::new(vec![
        fsl("centroid", dim)?,
        Field::new("end", DataType::UInt64, false),
    ])))
}

fn codebook_schema(dsub: usize) -> Result<SchemaRef> {
    Ok(Arc::new(Schema::new(vec![fsl("subcentroid", dsub)?])))
}

fn rows_schema(ix: &IvfIndex) -> Result<SchemaRef> {
    let payload = match &ix.payload {
        Payload::Flat(_) => fsl("vector", ix.dim)?,
        Payload::Pq { pq, .. } => Field::new(
            "code",
            DataType::FixedSizeBinary(
                i32::try_from(pq.m).map_err(|_| Error::invalid("too many sub-vectors"))?,
            ),
            false,
        ),
    };
    Ok(Arc::new(Schema::new(vec![
        Field::new("row_id", DataType::UInt64, false),
        payload,
    ])))
}

/// Writes `ix` under `{table}/_indices/` (fsynced, folder too); returns the
/// files as the manifest records them.
pub fn write(storage: &dyn Storage, table: &str, ix: &IvfIndex) -> Result<Vec<IndexFile>> {
    let stem = format!("_indices/{}", uuid::Uuid::new_v4().simple());
    let mut files = Vec::new();
    let cs = centroid_schema(ix.dim)?;
    let ends = UInt64Array::from_iter_values(ix.offsets[1..].iter().map(|e| *e as u64));
    let cb = RecordBatch::try_new(
        cs.clone(),
        vec![vectors(cs.field(0), ix.centroids.clone())?, Arc::new(ends)],
    )?;
    let mut out = vec![(format!("{stem}-centroids.arrow"), cb)];
    if let Payload::Pq { pq, .. } = &ix.payload {
        let s = codebook_schema(pq.dsub)?;
        let b = RecordBatch::try_new(s.clone(), vec![vectors(s.field(0), pq.codebook.clone())?])?;
        out.push((format!("{stem}-codebook.arrow"), b));
    }
    let rs = rows_schema(ix)?;
    let payload: ArrayRef = match &ix.payload {
        Payload::Flat(v) => vectors(rs.field(1), v.clone())?,
        Payload::Pq { pq, codes } => Arc::new(FixedSizeBinaryArray::try_new(
            pq.m as i32,
            codes.clone().into(),
            None,
        )?),
    };
    let ids = Arc::new(UInt64Array::from(ix.row_ids.clone()));
    out.push((
        format!("{stem}-rows.arrow"),
        RecordBatch::try_new(rs, vec![ids, payload])?,
    ));
    for (rel, batch) in out {
        let mut crc = 0;
        let path = format!("{table}/{rel}");
        let put = storage.put_with(&path, &mut |w| {
            let mut w = CrcWriter::new(w);
            crate::ipc::write_file(&mut w, &batch.schema(), std::slice::from_ref(&batch))?;
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
    if let Err(e) = storage.sync(&format!("{table}/_indices")) {
        remove(storage, table, &files);
        return Err(e);
    }
    Ok(files)
}

/// Deletes the files of an index that never made it into a version.
pub fn remove(storage: &dyn Storage, table: &str, files: &[IndexFile]) {
    for f in files {
        let _ = storage.delete(&format!("{table}/{}", f.path));
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
    let distance: DistanceType = meta
        .distance_type
        .as_deref()
        .unwrap_or("l2")
        .parse()
        .map_err(|e: Error| corrupt(e.to_string()))?;
    let file = |suffix: &str, schema: SchemaRef| -> Result<RecordBatch> {
        let f = meta
            .files
            .iter()
            .find(|f| f.path.ends_with(suffix))
            .ok_or_else(|| corrupt(format!("no {suffix} file")))?;
        read_data_file(
            storage,
            &format!("{table}/{}", f.path),
            &schema,
            Some(f.crc32c),
        )
    };
    let c = file("-centroids.arrow", centroid_schema(dim)?)?;
    let centroids = floats(c.column(0)).ok_or_else(|| corrupt("centroids".into()))?;
    let mut offsets = vec![0usize];
    offsets.extend(
        c.column(1)
            .as_primitive::<UInt64Type>()
            .values()
            .iter()
            .map(|e| *e as usize),
    );
    let payload = if meta.num_sub_vectors == 0 {
        let r = file("-rows.arrow", rows_schema_flat(dim)?)?;
        (
            r.clone(),
            Payload::Flat(floats(r.column(1)).ok_or_else(|| corrupt("vectors".into()))?),
        )
    } else {
        let m =
            usize::try_from(meta.num_sub_vectors).map_err(|_| corrupt("num_sub_vectors".into()))?;
        if m == 0 || !dim.is_multiple_of(m) {
            return Err(corrupt(format!("{m} sub-vectors for dimension {dim}")));
        }
        let cb = file("-codebook.arrow", codebook_schema(dim / m)?)?;
        let book = floats(cb.column(0)).ok_or_else(|| corrupt("codebook".into()))?;
        let pq =
            Pq::from_codebook(dim, m, meta.num_bits, book).map_err(|e| corrupt(e.to_string()))?;
        let rs = Arc::new(Schema::new(vec![
            Field::new("row_id", DataType::UInt64, false),
            Field::new("code", DataType::FixedSizeBinary(m as i32), false),
        ]));
        let r = file("-rows.arrow", rs)?;
        let codes = r.column(1).as_fixed_size_binary().value_data().to_vec();
        (r.clone(), Payload::Pq { pq, codes })
    };
    let (rows, payload) = payload;
    let row_ids = rows
        .column(0)
        .as_primitive::<UInt64Type>()
        .values()
        .to_vec();
    IvfIndex::from_parts(distance, dim, centroids, offsets, row_ids, payload).map_err(corrupt)
}

fn rows_schema_flat(dim: usize) -> Result<SchemaRef> {
    Ok(Arc::new(Schema::new(vec![
        Field::new("row_id", DataType::UInt64, false),
        fsl("vector", dim)?,
    ])))
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
