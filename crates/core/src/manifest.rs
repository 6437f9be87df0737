//! The on-disk layout of one table and its manifests.
//!
//! ```text
//! {table}/
//!   data/{uuid}.arrow                  Arrow IPC *file* (one fragment, immutable)
//!   _deletions/{version}-{uuid}.bin    roaring bitmaps of deleted row offsets, one
//!                                      per fragment the commit changed, back to back
//!   _versions/{version:020}.manifest   JSON manifest, published create-new
//!   _indices/{uuid}-*.arrow            the files of one index build (Arrow IPC)
//! ```
//! A version exists exactly when its manifest file exists; a commit writes
//! its data and deletion files first and publishes the manifest last, so a
//! crash leaves at worst unreferenced files and the previous version intact.

use std::collections::BTreeMap;

use arrow_schema::Schema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::storage::{PutNew, Storage};

/// The newest manifest format this build reads (and writes when needed).
pub const FORMAT_VERSION: u32 = 2;

/// The format a manifest with `indices` is written in: 2 when an index
/// names a delta file (a build that cannot apply deltas must refuse the
/// version, not answer from an index missing those rows), else 1, which
/// every build reads.
pub fn format_for(indices: &[IndexMeta]) -> u32 {
    let delta = |ix: &IndexMeta| ix.files.iter().any(IndexFile::is_delta);
    if indices.iter().any(delta) {
        2
    } else {
        1
    }
}

/// One immutable data file plus the rows deleted from it as of a version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FragmentMeta {
    /// Unique within the table, never reused.
    pub id: u64,
    /// Path of the Arrow IPC file, relative to the table folder.
    pub file: String,
    /// Rows in the file.
    pub physical_rows: u64,
    /// Deletion vector file, relative to the table folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_file: Option<String>,
    /// Byte range of this fragment's bitmap in `deletion_file` (one file
    /// per commit holds the bitmaps of every fragment it changed); a zero
    /// length means the whole file.
    #[serde(default)]
    pub deletion_offset: u64,
    /// See `deletion_offset`.
    #[serde(default)]
    pub deletion_len: u64,
    /// Rows marked deleted in `deletion_file`.
    #[serde(default)]
    pub num_deleted: u64,
    /// crc32c of the data file, checked when it is first loaded (absent in
    /// manifests written before checksums: not checked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<u32>,
    /// crc32c of this fragment's deletion vector bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_crc32c: Option<u32>,
}

impl FragmentMeta {
    /// A fragment of a new file of `rows` rows, none deleted.
    pub fn new_file(id: u64, file: String, rows: u64, crc32c: u32) -> Self {
        FragmentMeta {
            id,
            file,
            physical_rows: rows,
            deletion_file: None,
            deletion_offset: 0,
            deletion_len: 0,
            num_deleted: 0,
            crc32c: Some(crc32c),
            deletion_crc32c: None,
        }
    }

    /// Rows of this fragment still visible.
    pub fn live_rows(&self) -> u64 {
        self.physical_rows - self.num_deleted
    }
}

/// One file of an index.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IndexFile {
    /// Path relative to the table folder, inside `_indices/`.
    pub path: String,
    /// crc32c of its bytes.
    pub crc32c: u32,
}

/// How the name of an index's delta file ends (`_indices/{uuid}-delta.arrow`).
pub const DELTA_SUFFIX: &str = "-delta.arrow";

impl IndexFile {
    /// Whether this is a delta file (rows added to an IVF index since its build).
    pub fn is_delta(&self) -> bool {
        self.path.ends_with(DELTA_SUFFIX)
    }
}

/// An index recorded in a version: what it is, its files, and the
/// fragments whose rows it holds (rows of other fragments are unindexed).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IndexMeta {
    /// Unique within the version.
    pub name: String,
    /// The indexed columns.
    pub columns: Vec<String>,
    /// Wire type name (`IVF_FLAT`, `IVF_PQ`).
    pub index_type: String,
    /// Distance of a vector index (`l2`, `cosine`, `dot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance_type: Option<String>,
    /// Vector dimension.
    pub dimension: u64,
    /// PQ sub-vectors (0: no PQ).
    #[serde(default)]
    pub num_sub_vectors: u64,
    /// PQ bits per code.
    #[serde(default)]
    pub num_bits: u8,
    /// The build parameters as used, for reporting.
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    /// Its files.
    pub files: Vec<IndexFile>,
    /// Fragments it covers.
    pub fragment_ids: Vec<u64>,
    /// When it was built, in ms since the Unix epoch (absent in versions written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at_ms: Option<u64>,
}

/// Everything that defines one version of a table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// The format it is written in ([`format_for`]; at most [`FORMAT_VERSION`]).
    pub format: u32,
    /// The version number, from 1.
    pub version: u64,
    /// Milliseconds since the Unix epoch at commit.
    pub timestamp_ms: u64,
    /// What produced this version (`create`, `append`, `merge_insert`, ...).
    pub operation: String,
    /// The table schema.
    pub schema: Schema,
    /// Data files, in row order.
    pub fragments: Vec<FragmentMeta>,
    /// Next fragment id to hand out.
    pub next_fragment_id: u64,
    /// Free-form key/values committed with the version (e.g. the MemWAL
    /// flushed sequence number, recorded atomically with the data).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Indexes of this version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indices: Vec<IndexMeta>,
}

impl Manifest {
    /// Live rows over all fragments.
    pub fn num_rows(&self) -> u64 {
        self.fragments.iter().map(FragmentMeta::live_rows).sum()
    }
}

/// Path of the manifest of `version` under `table`.
pub fn manifest_path(table: &str, version: u64) -> String {
    format!("{table}/_versions/{version:020}.manifest")
}

/// Reads the manifest of `version`, `Ok(None)` if there is none.
pub fn read_manifest(storage: &dyn Storage, table: &str, version: u64) -> Result<Option<Manifest>> {
    let path = manifest_path(table, version);
    let Some(bytes) = storage.get(&path)? else {
        return Ok(None);
    };
    let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if m.format > FORMAT_VERSION {
        return Err(Error::Corrupt {
            path,
            message: format!(
                "manifest format {} is newer than this build ({FORMAT_VERSION})",
                m.format
            ),
        });
    }
    check_manifest(&m, version).map_err(|message| Error::Corrupt { path, message })?;
    Ok(Some(m))
}

/// A manifest read back must describe its own version and name only files
/// inside its table's `data/`, `_deletions/` and `_indices/` folders.
fn check_manifest(m: &Manifest, version: u64) -> std::result::Result<(), String> {
    if m.version != version {
        return Err(format!(
            "the manifest of version {version} says version {}",
            m.version
        ));
    }
    let inside = |p: &str, dir: &str| {
        p.strip_prefix(dir)
            .is_some_and(|rest| !rest.is_empty() && !rest.contains('/') && !rest.contains(".."))
    };
    for f in &m.fragments {
        if !inside(&f.file, "data/") {
            return Err(format!(
                "fragment {} names the file {:?}, outside data/",
                f.id, f.file
            ));
        }
        if let Some(d) = &f.deletion_file {
            if !inside(d, "_deletions/") {
                return Err(format!(
                    "fragment {} names the deletion file {d:?}, outside _deletions/",
                    f.id
                ));
            }
        }
        if f.deletion_offset.checked_add(f.deletion_len).is_none() {
            return Err(format!("fragment {} has a deletion range past 2^64", f.id));
        }
    }
    // An index file is `_indices/{name}` (older tables) or one folder down,
    // `_indices/{uuid}/{name}`.
    let index_file = |p: &str| {
        p.strip_prefix("_indices/").is_some_and(|rest| {
            let parts: Vec<&str> = rest.split('/').collect();
            parts.len() <= 2 && parts.iter().all(|c| !c.is_empty() && !c.contains(".."))
        })
    };
    for i in &m.indices {
        if let Some(f) = i.files.iter().find(|f| !index_file(&f.path)) {
            return Err(format!(
                "index {:?} names the file {:?}, outside _indices/",
                i.name, f.path
            ));
        }
    }
    Ok(())
}

/// Publishes `m` as its version once the files `pending` (written deferred,
/// named by `m`) are durable; `Ok(false)` if that version exists already
/// (another writer won the race).
pub fn publish_manifest(
    storage: &dyn Storage,
    table: &str,
    m: &Manifest,
    pending: &[String],
) -> Result<bool> {
    let bytes = serde_json::to_vec(m).map_err(|e| Error::internal(e.to_string()))?;
    let path = manifest_path(table, m.version);
    Ok(storage.put_new_after(&path, &bytes, pending)? == PutNew::Created)
}

/// All versions with a manifest, ascending.
pub fn list_versions(storage: &dyn Storage, table: &str) -> Result<Vec<u64>> {
    let mut out: Vec<u64> = storage
        .list(&format!("{table}/_versions"))?
        .iter()
        .filter_map(|n| n.strip_suffix(".manifest"))
        .filter_map(|n| n.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// The newest version at or after `hint` (probing forward one file at a
/// time, so this is cheap when the caller's cached version is recent).
pub fn latest_version(storage: &dyn Storage, table: &str, hint: u64) -> Result<Option<u64>> {
    if hint == 0 || !storage.exists(&manifest_path(table, hint))? {
        return Ok(list_versions(storage, table)?.last().copied());
    }
    let mut v = hint;
    while storage.exists(&manifest_path(table, v + 1))? {
        v += 1;
    }
    Ok(Some(v))
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
