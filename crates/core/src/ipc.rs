//! Arrow IPC at the edges (JS buffers, HTTP bodies, WAL records): decoding
//! either IPC format (stream or file, lz4-compressed or not) with errors
//! that say what is wrong, and encoding streams and files.

use std::io::Cursor;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow_ipc::reader::{FileReader, StreamDecoder, StreamReader};
use arrow_ipc::writer::{FileWriter, StreamWriter};
use arrow_schema::Schema;

use crate::data::Data;
use crate::error::{Error, Result};

const FILE_MAGIC: &[u8] = b"ARROW1";

thread_local! {
    /// Set while this thread decodes foreign bytes under [`catch_quietly`].
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs, once, a panic hook that stays silent for panics
/// [`catch_quietly`] catches and hands every other panic to the hook it
/// replaced.
fn install_quiet_hook() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
}

/// `catch_unwind` for decoders of foreign or stored bytes (arrow-ipc
/// panics on some damaged input): the panic becomes the `Err` and prints
/// nothing, so hostile bodies cannot fill a server's log (or a user's
/// terminal) with panic messages; any other panic is reported as before.
pub(crate) fn catch_quietly<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    install_quiet_hook();
    let was = QUIET.with(|q| q.replace(true));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    out
}

/// Runs a decode of foreign bytes so that a panic inside arrow-ipc (a
/// length field past the buffer, say) becomes InvalidInput instead of
/// killing the server or the user's Node process; then refuses what no
/// table can take (no columns, two columns of one name).
fn guarded(f: impl FnOnce() -> Result<Data>) -> Result<Data> {
    let data = catch_quietly(f).unwrap_or_else(|p| {
        let why = panic_text(p.as_ref());
        Err(Error::invalid(format!("malformed Arrow IPC data: {why}")))
    })?;
    check_columns(&data.schema)?;
    Ok(data)
}

/// What a caught panic from a decoder said.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> &str {
    p.downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| p.downcast_ref::<&str>().copied())
        .unwrap_or("a length or offset outside the data")
}

/// Largest ratio of a compressed buffer's declared uncompressed length to
/// its compressed length (LZ4 and ZSTD top out near 255:1).
const MAX_COMPRESSION_RATIO: u64 = 300;

fn bad(what: &str) -> Error {
    Error::invalid(format!("malformed Arrow IPC data: {what}"))
}

/// Checks the declared uncompressed length of every compressed buffer
/// before arrow-ipc allocates it: a patched length asks for an allocation
/// the process cannot make, which aborts (no panic to catch).
pub(crate) fn check_compressed_lengths(bytes: &[u8]) -> Result<()> {
    if bytes.starts_with(FILE_MAGIC) {
        check_file(bytes)
    } else {
        check_stream(bytes)
    }
}

/// One message: its record batch's compressed buffers against their body.
fn check_message(meta: &[u8], body: &[u8]) -> Result<()> {
    let msg = arrow_ipc::root_as_message(meta).map_err(|_| bad("a message header is not valid"))?;
    let rb = match (
        msg.header_as_record_batch(),
        msg.header_as_dictionary_batch(),
    ) {
        (Some(rb), _) => rb,
        (None, Some(d)) => match d.data() {
            Some(rb) => rb,
            None => return Ok(()),
        },
        _ => return Ok(()),
    };
    if rb.compression().is_none() {
        return Ok(());
    }
    for b in rb.buffers().into_iter().flatten() {
        let (off, len) = (b.offset(), b.length());
        if len < 8 {
            continue;
        }
        let start = usize::try_from(off).map_err(|_| bad("a buffer offset is negative"))?;
        let head = body
            .get(start..start.saturating_add(8))
            .ok_or_else(|| bad("a buffer lies outside the message body"))?;
        let declared = i64::from_le_bytes(head.try_into().unwrap_or([0; 8]));
        if declared > 0 && declared as u64 > MAX_COMPRESSION_RATIO * len as u64 + 4096 {
            return Err(bad(&format!(
                "a compressed buffer of {len} bytes declares {declared} bytes uncompressed"
            )));
        }
    }
    Ok(())
}

/// (metadata start, metadata length) of the message at `pos`; `None` at
/// the end-of-stream marker.
fn message_at(bytes: &[u8], pos: usize) -> Result<Option<(usize, usize)>> {
    let word = |p: usize| -> Result<i32> {
        let w = bytes
            .get(p..p.saturating_add(4))
            .ok_or_else(|| bad("the data ends inside a message"))?;
        Ok(i32::from_le_bytes([w[0], w[1], w[2], w[3]]))
    };
    let (start, len) = match word(pos)? {
        -1 => (pos + 8, word(pos + 4)?),
        n => (pos + 4, n),
    };
    if len == 0 {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| bad("a message length is negative"))?;
    Ok(Some((start, len)))
}

/// The metadata at `start..start + len` and the body that follows at `body_at`.
fn message(bytes: &[u8], start: usize, len: usize, body_at: usize) -> Result<(&[u8], &[u8])> {
    let meta = bytes
        .get(start..start.saturating_add(len))
        .ok_or_else(|| bad("the data ends inside a message"))?;
    let msg = arrow_ipc::root_as_message(meta).map_err(|_| bad("a message header is not valid"))?;
    let n = usize::try_from(msg.bodyLength()).map_err(|_| bad("a body length is negative"))?;
    let body = bytes
        .get(body_at..body_at.saturating_add(n))
        .ok_or_else(|| bad("a message body runs past the end of the data"))?;
    Ok((meta, body))
}

fn check_stream(bytes: &[u8]) -> Result<()> {
    let mut pos = 0;
    while pos < bytes.len() {
        let Some((start, len)) = message_at(bytes, pos)? else {
            break;
        };
        let (meta, body) = message(bytes, start, len, start + len)?;
        check_message(meta, body)?;
        pos = start + len + body.len();
    }
    Ok(())
}

fn check_file(bytes: &[u8]) -> Result<()> {
    let n = bytes.len();
    let flen = bytes
        .get(n.saturating_sub(10)..n.saturating_sub(6))
        .map(|w| i32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .ok_or_else(|| bad("the file has no footer"))?;
    let flen = usize::try_from(flen).map_err(|_| bad("the footer length is negative"))?;
    let footer = bytes
        .get(n.saturating_sub(10 + flen)..n.saturating_sub(10))
        .ok_or_else(|| bad("the footer lies outside the file"))?;
    let footer = arrow_ipc::root_as_footer(footer).map_err(|_| bad("the footer is not valid"))?;
    let blocks = footer.recordBatches().into_iter().flatten();
    for b in blocks.chain(footer.dictionaries().into_iter().flatten()) {
        let pos = usize::try_from(b.offset()).map_err(|_| bad("a block offset is negative"))?;
        let Some((start, len)) = message_at(bytes, pos)? else {
            continue;
        };
        let body_at = pos.saturating_add(b.metaDataLength().max(0) as usize);
        let (meta, body) = message(bytes, start, len, body_at)?;
        check_message(meta, body)?;
    }
    Ok(())
}

/// A schema a table can hold: at least one column, no name twice.
pub fn check_columns(schema: &Schema) -> Result<()> {
    if schema.fields().is_empty() {
        return Err(Error::invalid(
            "the Arrow data has no columns (a batch needs at least one column)",
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for f in schema.fields() {
        if !seen.insert(f.name().as_str()) {
            return Err(Error::invalid(format!(
                "the Arrow data has two columns named '{}' (column names must be unique)",
                f.name()
            )));
        }
    }
    Ok(())
}

/// Decodes an Arrow IPC stream or file.
pub fn decode(bytes: &[u8]) -> Result<Data> {
    guarded(|| {
        check_compressed_lengths(bytes)?;
        decode_unguarded(bytes)
    })
}

fn decode_unguarded(bytes: &[u8]) -> Result<Data> {
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
    guarded(|| {
        check_compressed_lengths(&bytes)?;
        decode_stream_bytes(bytes)
    })
}

fn decode_stream_bytes(bytes: bytes::Bytes) -> Result<Data> {
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

/// `data` as an Arrow IPC stream: the bytes it was decoded from when it
/// kept them (a remote table sends those as they are), or encoded now.
pub fn stream_of(data: &Data) -> Result<bytes::Bytes> {
    match &data.ipc {
        Some(b) => Ok(b.clone()),
        None => Ok(encode_stream(&data.schema, &data.batches)?.into()),
    }
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
    // An I/O failure while writing (a full disk) is the system's, not bad input.
    let io = |e: arrow_schema::ArrowError| match e {
        arrow_schema::ArrowError::IoError(m, e) => Error::io(m, e),
        other => Error::Arrow(other),
    };
    let mut w = FileWriter::try_new(out, schema).map_err(io)?;
    // A file holds one dictionary per field: batches whose dictionaries
    // differ (a served table's stored and buffered rows) become one batch.
    let merged;
    let batches = if batches.len() > 1
        && schema
            .fields()
            .iter()
            .any(|f| has_dictionary(f.data_type()))
    {
        merged = [arrow::compute::concat_batches(
            &schema_ref(schema.clone()),
            batches,
        )?];
        &merged[..]
    } else {
        batches
    };
    for b in batches {
        w.write(b).map_err(io)?;
    }
    w.finish().map_err(io)?;
    Ok(())
}

/// Whether `dt` is, or holds, a dictionary.
fn has_dictionary(dt: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType as D;
    match dt {
        D::Dictionary(..) => true,
        D::List(f) | D::LargeList(f) | D::FixedSizeList(f, _) | D::Map(f, _) => {
            has_dictionary(f.data_type())
        }
        D::Struct(fs) => fs.iter().any(|f| has_dictionary(f.data_type())),
        _ => false,
    }
}

/// A schema only (no batches), as a stream.
pub fn encode_schema(schema: &Schema) -> Result<Vec<u8>> {
    encode_stream(schema, &[])
}

/// Wraps a schema for [`Data`].
pub fn schema_ref(schema: Schema) -> arrow_schema::SchemaRef {
    Arc::new(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, DictionaryArray, RecordBatch};
    use arrow::datatypes::Int32Type;

    /// Run by [`a_caught_decoder_panic_prints_nothing_and_others_still_do`]
    /// in a child process (its stderr is what the test reads).
    #[test]
    fn panics_for_the_quiet_hook_test() {
        if std::env::var_os("MEMWAL_QUIET_HOOK_CHILD").is_none() {
            return;
        }
        let quiet = catch_quietly(|| panic!("quiet-marker"));
        assert!(quiet.is_err());
        let nested = catch_quietly(|| catch_quietly(|| panic!("quiet-marker")).is_err());
        assert_eq!(nested.ok(), Some(true));
        let loud = std::panic::catch_unwind(|| panic!("loud-marker"));
        assert!(loud.is_err());
    }

    #[test]
    fn a_caught_decoder_panic_prints_nothing_and_others_still_do() {
        let exe = std::env::current_exe().expect("test binary");
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "ipc::tests::panics_for_the_quiet_hook_test",
                "--nocapture",
            ])
            .env("MEMWAL_QUIET_HOOK_CHILD", "1")
            .output()
            .expect("child");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(
            !err.contains("quiet-marker"),
            "a caught decoder panic was printed: {err}"
        );
        assert!(
            err.contains("loud-marker"),
            "another panic must still be reported: {err}"
        );
    }

    #[test]
    fn batches_with_different_dictionaries_make_one_file() {
        let a: DictionaryArray<Int32Type> = vec!["x", "y"].into_iter().collect();
        let b: DictionaryArray<Int32Type> = vec!["z"].into_iter().collect();
        let schema = Arc::new(Schema::new(vec![arrow_schema::Field::new(
            "d",
            a.data_type().clone(),
            true,
        )]));
        let batches = [
            RecordBatch::try_new(schema.clone(), vec![Arc::new(a)]).expect("a"),
            RecordBatch::try_new(schema.clone(), vec![Arc::new(b)]).expect("b"),
        ];
        let bytes = encode_file(&schema, &batches).expect("one file");
        assert_eq!(decode(&bytes).expect("read").num_rows(), 3);
    }
}
