//! Encoding of fragment data files (Arrow IPC file format) and deletion
//! vectors (portable roaring bitmaps), and a loaded fragment in memory.

use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::buffer::Buffer;
use arrow_ipc::convert::try_fb_to_schema;
use arrow_ipc::reader::{read_footer_length, FileDecoder};
use arrow_ipc::Block;
use arrow_schema::SchemaRef;
use bytes::Bytes;
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
/// when the manifest recorded one. The file is read mapped where the
/// storage maps files, and its columns point into those bytes (no copy):
/// a local table's rows live in the page cache.
pub fn read_data_file(
    storage: &dyn Storage,
    path: &str,
    schema: &SchemaRef,
    crc: Option<u32>,
) -> Result<RecordBatch> {
    let bytes = storage.get_mapped(path)?.ok_or_else(|| Error::Corrupt {
        path: path.to_string(),
        message: "data file referenced by the manifest is missing".into(),
    })?;
    verify(path, &bytes, crc)?;
    let corrupt = |message: String| Error::Corrupt {
        path: path.to_string(),
        message,
    };
    let batches = crate::ipc::catch_quietly(|| file_batches(bytes))
        .unwrap_or_else(|p| Err(crate::ipc::panic_text(p.as_ref()).to_string()))
        .map_err(corrupt)?;
    let batch = match batches.as_slice() {
        [one] => RecordBatch::try_new(schema.clone(), one.columns().to_vec()),
        _ => arrow::compute::concat_batches(schema, &batches),
    };
    batch.map_err(|e| corrupt(e.to_string()))
}

/// The batches of an Arrow IPC file held in `bytes`, decoded in place
/// (a buffer that is not aligned is copied). Every offset is checked
/// against the file's length before it is used.
fn file_batches(bytes: Bytes) -> std::result::Result<Vec<RecordBatch>, String> {
    let len = bytes.len();
    if len < 18 || !bytes.starts_with(b"ARROW1") {
        return Err(format!("not an Arrow IPC file ({len} bytes)"));
    }
    // A damaged length must not ask for an allocation the process cannot make (an abort).
    crate::ipc::check_compressed_lengths(&bytes).map_err(|e| e.to_string())?;
    let mut trailer = [0u8; 10];
    trailer.copy_from_slice(&bytes[len - 10..]);
    let footer_len = read_footer_length(trailer).map_err(|e| e.to_string())?;
    let start = (len - 10)
        .checked_sub(footer_len)
        .ok_or_else(|| format!("footer of {footer_len} bytes in a file of {len}"))?;
    // The footer is copied so that its flatbuffer is aligned.
    let footer_bytes = bytes[start..len - 10].to_vec();
    let footer = arrow_ipc::root_as_footer(&footer_bytes).map_err(|e| e.to_string())?;
    let ipc_schema = footer.schema().ok_or("the footer has no schema")?;
    let file_schema = Arc::new(try_fb_to_schema(ipc_schema).map_err(|e| e.to_string())?);
    let buf = Buffer::from(bytes);
    let mut decoder = FileDecoder::new(file_schema, footer.version());
    for block in footer.dictionaries().iter().flatten() {
        decoder
            .read_dictionary(block, &block_bytes(&buf, block)?)
            .map_err(|e| e.to_string())?;
    }
    let mut out = Vec::new();
    for block in footer.recordBatches().iter().flatten() {
        let b = decoder
            .read_record_batch(block, &block_bytes(&buf, block)?)
            .map_err(|e| e.to_string())?;
        out.extend(b);
    }
    Ok(out)
}

/// The bytes of one IPC block (its message and body), checked in bounds.
fn block_bytes(buf: &Buffer, block: &Block) -> std::result::Result<Buffer, String> {
    let offset = usize::try_from(block.offset()).ok();
    let len = i64::from(block.metaDataLength())
        .checked_add(block.bodyLength())
        .and_then(|l| usize::try_from(l).ok());
    match (offset, len) {
        (Some(o), Some(l)) if o.checked_add(l).is_some_and(|end| end <= buf.len()) => {
            Ok(buf.slice_with_length(o, l))
        }
        _ => Err(format!(
            "a block at {}+{}+{} is outside the file ({} bytes)",
            block.offset(),
            block.metaDataLength(),
            block.bodyLength(),
            buf.len()
        )),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{LocalStorage, MemoryStorage};
    use arrow::array::{DictionaryArray, Float32Array, Int64Array, ListArray, StringArray};
    use arrow::datatypes::{Float32Type, Int32Type};
    use proptest::prelude::*;

    fn sample(n: i64) -> RecordBatch {
        let ids = Int64Array::from_iter_values(0..n);
        let names = StringArray::from_iter((0..n).map(|i| (i % 3 != 0).then(|| format!("n{i}"))));
        let kinds: DictionaryArray<Int32Type> =
            (0..n).map(|i| if i % 2 == 0 { "a" } else { "b" }).collect();
        let vecs = ListArray::from_iter_primitive::<Float32Type, _, _>(
            (0..n).map(|i| Some(vec![Some(i as f32), None, Some(0.5)])),
        );
        let floats = Float32Array::from_iter_values((0..n).map(|i| i as f32 / 7.0));
        RecordBatch::try_from_iter([
            ("id", Arc::new(ids) as arrow::array::ArrayRef),
            ("name", Arc::new(names)),
            ("kind", Arc::new(kinds)),
            ("v", Arc::new(vecs)),
            ("f", Arc::new(floats)),
        ])
        .expect("batch")
    }

    fn file_of(batches: &[RecordBatch]) -> Vec<u8> {
        crate::ipc::encode_file(&batches[0].schema(), batches).expect("encode")
    }

    /// Whether this process maps a file whose path ends with `name`.
    fn mapped(name: &str) -> bool {
        std::fs::read_to_string("/proc/self/maps")
            .expect("maps")
            .lines()
            .any(|l| l.ends_with(name))
    }

    #[test]
    fn a_local_data_file_is_read_mapped_and_equal() {
        let dir = tempfile::tempdir().expect("tmp");
        let storage = LocalStorage::new(dir.path()).expect("local");
        let b = sample(5000);
        storage
            .put("t/data/x-mapped.arrow", &file_of(std::slice::from_ref(&b)))
            .expect("put");
        let read =
            read_data_file(&storage, "t/data/x-mapped.arrow", &b.schema(), None).expect("read");
        assert_eq!(read, b);
        assert!(
            mapped("x-mapped.arrow"),
            "the file is mapped while its rows are held"
        );
        drop(read);
        assert!(!mapped("x-mapped.arrow"), "the mapping goes with the rows");
    }

    #[test]
    fn several_batches_make_one_and_memory_storage_decodes_too() {
        let storage = MemoryStorage::default();
        let (a, b) = (sample(10), sample(7));
        storage
            .put("t/data/y.arrow", &file_of(&[a.clone(), b.clone()]))
            .expect("put");
        let read = read_data_file(&storage, "t/data/y.arrow", &a.schema(), None).expect("read");
        let want = arrow::compute::concat_batches(&a.schema(), &[a, b]).expect("concat");
        assert_eq!(read, want);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// A damaged data file read without a checksum is a `Corrupt` error
        /// or, where the damage is in values, rows; never a panic.
        #[test]
        fn a_damaged_data_file_is_an_error_never_a_panic(
            cut in proptest::option::of(0usize..4000),
            flips in proptest::collection::vec((0usize..4000, any::<u8>()), 0..6),
            patches in proptest::collection::vec(
                (0usize..4000, prop_oneof![Just(1u64 << 31), Just(u64::MAX), Just(1u64 << 62), 0u64..4096]),
                0..3,
            ),
        ) {
            let b = sample(40);
            let mut bytes = file_of(std::slice::from_ref(&b));
            for (at, v) in flips {
                let n = bytes.len();
                bytes[at % n] = v;
            }
            for (at, v) in patches {
                let at = at % (bytes.len() - 8);
                bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            if let Some(c) = cut {
                bytes.truncate(c % (bytes.len() + 1));
            }
            let storage = MemoryStorage::default();
            storage.put("t/d.arrow", &bytes).expect("put");
            match read_data_file(&storage, "t/d.arrow", &b.schema(), None) {
                Ok(r) => prop_assert_eq!(r.num_columns(), 5),
                Err(e) => prop_assert_eq!(e.code(), "Corrupt", "{}", e),
            }
        }
    }
}
