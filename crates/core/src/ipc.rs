//! Arrow IPC at the edges (JS buffers, HTTP bodies, WAL records): decoding
//! either IPC format (stream or file, lz4-compressed or not) with errors
//! that say what is wrong, and encoding streams and files.

use std::io::Cursor;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow_ipc::reader::{FileReader, StreamDecoder, StreamReader};
use arrow_ipc::writer::{FileWriter, StreamWriter};
use arrow_schema::Schema;

use crate::error::{Error, Result};
use crate::traits::Data;

const FILE_MAGIC: &[u8] = b"ARROW1";

/// Decodes an Arrow IPC stream or file.
pub fn decode(bytes: &[u8]) -> Result<Data> {
    if bytes.is_empty() {
        return Err(Error::invalid(
            "the Arrow IPC data is empty (expected an IPC stream or file with at least a schema)",
        ));
    }
    let bad =
        |e: arrow_schema::ArrowError| Error::invalid(format!("malformed Arrow IPC data: {e}"));
    if bytes.starts_with(FILE_MAGIC) {
        let r = FileReader::try_new(Cursor::new(bytes), None).map_err(bad)?;
        let schema = r.schema();
        let batches = r.collect::<std::result::Result<Vec<_>, _>>().map_err(bad)?;
        return Ok(Data::new(schema, batches));
    }
    let r = StreamReader::try_new(Cursor::new(bytes), None).map_err(bad)?;
    let schema = r.schema();
    let batches = r.collect::<std::result::Result<Vec<_>, _>>().map_err(bad)?;
    Ok(Data::new(schema, batches))
}

/// Decodes an Arrow IPC stream held in `bytes` without copying its
/// buffers: the batches point into `bytes` (buffers that are not aligned
/// are copied to be), and [`Data::ipc`] keeps `bytes`. A file falls back
/// to [`decode`].
pub fn decode_bytes(bytes: bytes::Bytes) -> Result<Data> {
    if bytes.is_empty() || bytes.starts_with(FILE_MAGIC) {
        return decode(&bytes);
    }
    let source = bytes.clone();
    let bad =
        |e: arrow_schema::ArrowError| Error::invalid(format!("malformed Arrow IPC data: {e}"));
    let mut buf = arrow::buffer::Buffer::from(bytes);
    let mut decoder = StreamDecoder::new();
    let mut batches = Vec::new();
    while !buf.is_empty() {
        match decoder.decode(&mut buf).map_err(bad)? {
            Some(b) => batches.push(b),
            None if buf.is_empty() => break,
            None => {}
        }
    }
    decoder.finish().map_err(bad)?;
    let schema = decoder
        .schema()
        .ok_or_else(|| Error::invalid("malformed Arrow IPC data: the stream has no schema"))?;
    let mut data = Data::new(schema, batches);
    data.ipc = Some(source);
    Ok(data)
}

/// Encodes as an Arrow IPC stream.
pub fn encode_stream(schema: &Schema, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    {
        let mut w = StreamWriter::try_new(&mut buf, schema)?;
        for b in batches {
            w.write(b)?;
        }
        w.finish()?;
    }
    Ok(buf)
}

/// Encodes as an Arrow IPC file.
pub fn encode_file(schema: &Schema, batches: &[RecordBatch]) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    write_file(&mut buf, schema, batches)?;
    Ok(buf)
}

/// Writes an Arrow IPC file to `out`.
pub fn write_file(
    out: &mut dyn std::io::Write,
    schema: &Schema,
    batches: &[RecordBatch],
) -> Result<()> {
    let mut w = FileWriter::try_new(out, schema)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()?;
    Ok(())
}

/// A schema only (no batches), as a stream.
pub fn encode_schema(schema: &Schema) -> Result<Vec<u8>> {
    encode_stream(schema, &[])
}

/// Wraps a schema for [`Data`].
pub fn schema_ref(schema: Schema) -> arrow_schema::SchemaRef {
    Arc::new(schema)
}
