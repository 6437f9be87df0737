//! Encoding of fragment data files (Arrow IPC file format) and deletion
//! vectors (portable roaring bitmaps), and a loaded fragment in memory.

use std::io::Cursor;
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow_ipc::reader::FileReader;
use arrow_schema::SchemaRef;
use roaring::RoaringBitmap;

use crate::error::{Error, Result};
use crate::storage::Storage;

/// A fragment's rows and the deletions that apply at one version.
#[derive(Debug, Clone)]
pub struct LoadedFragment {
    /// The fragment id.
    pub id: u64,
    /// All physical rows (deleted ones included), as one batch.
    pub batch: RecordBatch,
    /// Offsets of deleted rows.
    pub deleted: Arc<RoaringBitmap>,
}

impl LoadedFragment {
    /// A mask that is true for live rows, or `None` when nothing is deleted.
    pub fn live_mask(&self) -> Option<BooleanArray> {
        if self.deleted.is_empty() {
            return None;
        }
        let n = self.batch.num_rows();
        Some(BooleanArray::from_iter(
            (0..n).map(|i| Some(!self.deleted.contains(i as u32))),
        ))
    }
}

/// A writer that computes the crc32c of what passes through it.
pub struct CrcWriter<'a> {
    inner: &'a mut dyn std::io::Write,
    /// crc32c of the bytes written so far.
    pub crc: u32,
}

impl<'a> CrcWriter<'a> {
    /// Wraps `inner`.
    pub fn new(inner: &'a mut dyn std::io::Write) -> Self {
        Self { inner, crc: 0 }
    }
}

impl std::io::Write for CrcWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A `Corrupt` error when `bytes` do not have the recorded checksum.
fn verify(path: &str, bytes: &[u8], want: Option<u32>) -> Result<()> {
    match want {
        Some(want) if crc32c::crc32c(bytes) != want => Err(Error::Corrupt {
            path: path.to_string(),
            message: format!(
                "checksum mismatch (crc32c {:08x}, the manifest recorded {want:08x}): the file changed on disk after it was written",
                crc32c::crc32c(bytes)
            ),
        }),
        _ => Ok(()),
    }
}

/// Reads a fragment data file back as one batch, checking its crc32c
/// when the manifest recorded one.
pub fn read_data_file(
    storage: &dyn Storage,
    path: &str,
    schema: &SchemaRef,
    crc: Option<u32>,
) -> Result<RecordBatch> {
    let bytes = storage.get(path)?.ok_or_else(|| Error::Corrupt {
        path: path.to_string(),
        message: "data file referenced by the manifest is missing".into(),
    })?;
    verify(path, &bytes, crc)?;
    let corrupt = |e: arrow_schema::ArrowError| Error::Corrupt {
        path: path.to_string(),
        message: e.to_string(),
    };
    let reader = FileReader::try_new(Cursor::new(bytes), None).map_err(corrupt)?;
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(corrupt)?;
    let batch = arrow::compute::concat_batches(schema, &batches).map_err(corrupt)?;
    Ok(batch)
}

/// Checks a loaded data file against the manifest's row count.
pub fn check_rows(path: &str, batch: &RecordBatch, physical_rows: u64) -> Result<()> {
    if batch.num_rows() as u64 != physical_rows {
        return Err(Error::Corrupt {
            path: path.to_string(),
            message: format!(
                "the file holds {} rows where the manifest records {physical_rows}",
                batch.num_rows()
            ),
        });
    }
    Ok(())
}

/// Reads one deletion vector: `len` bytes at `offset` of a deletion file
/// (`len == 0`: the whole file).
pub fn read_deletions(
    storage: &dyn Storage,
    path: &str,
    offset: u64,
    len: u64,
    crc: Option<u32>,
) -> Result<RoaringBitmap> {
    let bytes = storage.get(path)?.ok_or_else(|| Error::Corrupt {
        path: path.to_string(),
        message: "deletion file referenced by the manifest is missing".into(),
    })?;
    let (start, end) = if len == 0 {
        (0, bytes.len())
    } else {
        let end = offset.saturating_add(len);
        (
            usize::try_from(offset).unwrap_or(usize::MAX),
            usize::try_from(end).unwrap_or(usize::MAX),
        )
    };
    let slice = bytes.get(start..end).ok_or_else(|| Error::Corrupt {
        path: path.to_string(),
        message: format!(
            "deletion vector at {offset}+{len} is past the end ({} bytes)",
            bytes.len()
        ),
    })?;
    verify(path, slice, crc)?;
    RoaringBitmap::deserialize_from(slice).map_err(|e| Error::Corrupt {
        path: path.to_string(),
        message: e.to_string(),
    })
}

/// Serialises a deletion vector.
pub fn encode_deletions(bitmap: &RoaringBitmap) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(bitmap.serialized_size());
    bitmap
        .serialize_into(&mut out)
        .map_err(|e| Error::internal(e.to_string()))?;
    Ok(out)
}
