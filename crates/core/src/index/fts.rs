//! The FTS index of a column: the `memwal-fts` segments it is made of, each a file
//! `_indices/{uuid}-fts.seg` (the segment codec's bytes: versioned header, crc32c), and its
//! parameters, kept in the manifest entry's `params` (Lance's names). A build writes one segment;
//! `optimize` adds one for the new fragments' rows, so nothing is tokenized twice; a compaction
//! rewrites them with moved row ids. Talks to the storage and to `memwal-fts`.

use std::collections::BTreeMap;
use std::sync::Arc;

use memwal_fts::{codec, Analyzer, FtsParams, Segment};

use crate::error::{Error, Result};
use crate::manifest::{IndexFile, IndexMeta};
use crate::storage::Storage;

/// The file suffix of a segment.
pub const SEGMENT_SUFFIX: &str = "-fts.seg";

/// A loaded FTS index.
#[derive(Debug)]
pub struct TextIndex {
    /// Its parameters.
    pub params: FtsParams,
    /// The analyzer they describe.
    pub analyzer: Analyzer,
    /// Its segments (together: the rows of the fragments the index covers, deleted ones included
    /// until a compaction drops them).
    pub segments: Vec<Arc<Segment>>,
}

impl From<memwal_fts::FtsError> for Error {
    fn from(e: memwal_fts::FtsError) -> Self {
        match e {
            memwal_fts::FtsError::Corrupt(m) => Error::Corrupt {
                path: "FTS index".into(),
                message: m,
            },
            memwal_fts::FtsError::DuplicateRow { .. } => Error::internal(e.to_string()),
            other => Error::invalid(other.to_string()),
        }
    }
}

/// The parameters as the manifest records them (every field, Lance's names).
pub fn params_map(p: &FtsParams) -> Result<BTreeMap<String, serde_json::Value>> {
    match serde_json::to_value(p).map_err(|e| Error::internal(e.to_string()))? {
        serde_json::Value::Object(m) => Ok(m.into_iter().collect()),
        _ => Err(Error::internal("FTS parameters are not an object")),
    }
}

/// Writes `seg` as one index file and syncs the folder.
pub fn write_segment(storage: &dyn Storage, table: &str, seg: &Segment) -> Result<IndexFile> {
    let folder = super::store::new_folder();
    let rel = format!("{folder}/segment{SEGMENT_SUFFIX}");
    let bytes = codec::encode(seg);
    storage.put(&format!("{table}/{rel}"), &bytes)?;
    let file = IndexFile {
        path: rel,
        crc32c: crc32c::crc32c(&bytes),
    };
    if let Err(e) = storage.sync(&format!("{table}/{folder}")) {
        super::store::remove(storage, table, std::slice::from_ref(&file));
        return Err(e);
    }
    Ok(file)
}

/// Reads the index `meta` describes: its parameters and every segment file, verified.
pub fn read(storage: &dyn Storage, table: &str, meta: &IndexMeta) -> Result<TextIndex> {
    let corrupt = |path: &str, message: String| Error::Corrupt {
        path: format!("{table}/{path}"),
        message: format!("index {:?}: {message}", meta.name),
    };
    let body = serde_json::Value::Object(meta.params.clone().into_iter().collect());
    let params = FtsParams::from_json(&body).map_err(|e| corrupt("", e.to_string()))?;
    let analyzer = Analyzer::new(&params).map_err(|e| corrupt("", e.to_string()))?;
    let mut segments = Vec::new();
    for f in meta
        .files
        .iter()
        .filter(|f| f.path.ends_with(SEGMENT_SUFFIX))
    {
        let bytes = storage
            .get(&format!("{table}/{}", f.path))?
            .ok_or_else(|| corrupt(&f.path, "segment file missing".into()))?;
        if crc32c::crc32c(&bytes) != f.crc32c {
            return Err(corrupt(&f.path, "checksum mismatch".into()));
        }
        let seg = codec::decode(&bytes).map_err(|e| corrupt(&f.path, e.to_string()))?;
        // Made here, off the query path (an index is loaded without the table's lock).
        seg.prepare_blocks(params.block_size as usize);
        segments.push(Arc::new(seg));
    }
    Ok(TextIndex {
        params,
        analyzer,
        segments,
    })
}
