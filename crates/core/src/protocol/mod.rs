//! The LanceDB REST protocol's names and shapes (see shared/PROTOCOL.md),
//! written once for both ends: the client (`memwal-remote`) builds requests
//! and reads answers with these, the server (`memwal-server`) parses
//! requests and writes answers with the same. Parameter names, modes,
//! headers, request bodies and response structs live here and nowhere else.

use serde::{Deserialize, Serialize};

use crate::api::{AddMode, CreateMode, CreateOptions};
use crate::error::{Error, Result};
use crate::merge::{MergeInsertParams, MergeResult};

mod evolve;
mod index;
mod query;
pub use evolve::{
    AddColumnsBody, AlterColumnsBody, AlterationBody, DropColumnsBody, NewColumnBody,
};
pub use index::{
    create_index_body, create_index_request, CreateIndexBody, IndexEntry, IndexListResponse,
    IndexStatsResponse,
};
pub use query::{query_body, ExplainBody, QueryBody, PHALANX_VERSION};

/// Content type of an Arrow IPC stream body.
pub const ARROW_STREAM: &str = "application/vnd.apache.arrow.stream";
/// Content type of an Arrow IPC file body (query answers).
pub const ARROW_FILE: &str = "application/vnd.apache.arrow.file";

/// Header names.
pub mod header {
    /// MemWAL routing (first generation of the protocol).
    pub const MEM_WAL_ENABLED: &str = "x-lancedb-mem-wal-enabled";
    /// MemWAL routing (later generation, one host).
    pub const USE_WAL: &str = "x-use-wal";
    /// A merge's timeout in milliseconds.
    pub const REQUEST_TIMEOUT_MS: &str = "x-request-timeout-ms";
    /// The version a read must reflect at least (read-after-write).
    pub const MIN_VERSION: &str = "x-lancedb-min-version";
    /// The server's protocol level (what clients may send).
    pub const PHALANX_VERSION: &str = "phalanx-version";
}

/// Query parameters of `merge_insert/`.
pub mod merge_param {
    /// A key column (repeated for several).
    pub const ON: &str = "on";
    /// See [`crate::MergeInsertParams::when_matched_update_all`].
    pub const WHEN_MATCHED_UPDATE_ALL: &str = "when_matched_update_all";
    /// Its filter.
    pub const WHEN_MATCHED_UPDATE_ALL_FILT: &str = "when_matched_update_all_filt";
    /// See [`crate::MergeInsertParams::when_not_matched_insert_all`].
    pub const WHEN_NOT_MATCHED_INSERT_ALL: &str = "when_not_matched_insert_all";
    /// See [`crate::MergeInsertParams::when_not_matched_by_source_delete`].
    pub const WHEN_NOT_MATCHED_BY_SOURCE_DELETE: &str = "when_not_matched_by_source_delete";
    /// Its filter.
    pub const WHEN_NOT_MATCHED_BY_SOURCE_DELETE_FILT: &str =
        "when_not_matched_by_source_delete_filt";
    /// Sent only when false.
    pub const USE_INDEX: &str = "use_index";
    /// The official clients' MemWAL switch (`useLsm(true)`).
    pub const USE_LSM: &str = "use_lsm";
}

/// The query parameters of a merge insert, in the official client's order.
pub fn merge_query(p: &MergeInsertParams) -> Vec<(String, String)> {
    use merge_param::*;
    let mut q: Vec<(String, String)> = p.on.iter().map(|o| (ON.into(), o.clone())).collect();
    let mut push = |k: &str, v: String| q.push((k.into(), v));
    push(
        WHEN_MATCHED_UPDATE_ALL,
        p.when_matched_update_all.to_string(),
    );
    if let Some(f) = &p.when_matched_update_all_filt {
        push(WHEN_MATCHED_UPDATE_ALL_FILT, f.clone());
    }
    push(
        WHEN_NOT_MATCHED_INSERT_ALL,
        p.when_not_matched_insert_all.to_string(),
    );
    push(
        WHEN_NOT_MATCHED_BY_SOURCE_DELETE,
        p.when_not_matched_by_source_delete.to_string(),
    );
    if let Some(f) = &p.when_not_matched_by_source_delete_filt {
        push(WHEN_NOT_MATCHED_BY_SOURCE_DELETE_FILT, f.clone());
    }
    if !p.use_index {
        push(USE_INDEX, "false".into());
    }
    if p.mem_wal == Some(false) {
        push(USE_LSM, "false".into());
    }
    q
}

fn flag(name: &str, v: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(Error::invalid(format!(
            "query parameter {name} must be true or false, got {v:?}"
        ))),
    }
}

/// Parses a merge insert's query parameters and headers (`header(name)`
/// gives a header's value). An unknown parameter is an error naming it.
pub fn parse_merge(
    query: &[(String, String)],
    header: impl Fn(&str) -> Option<String>,
) -> Result<MergeInsertParams> {
    use merge_param::*;
    let on: Vec<String> = query
        .iter()
        .filter(|(k, _)| k == ON)
        .map(|(_, v)| v.clone())
        .collect();
    if on.is_empty() {
        return Err(Error::invalid(
            "merge_insert needs the query parameter `on` (the key column)",
        ));
    }
    let mut p = MergeInsertParams::new(on);
    let mut given = std::collections::HashSet::new();
    for (k, v) in query {
        if k != ON && !given.insert(k.as_str()) {
            return Err(Error::invalid(format!(
                "merge_insert: the query parameter {k:?} is given twice"
            )));
        }
        match k.as_str() {
            ON => {}
            WHEN_MATCHED_UPDATE_ALL => p.when_matched_update_all = flag(k, v)?,
            WHEN_MATCHED_UPDATE_ALL_FILT => p.when_matched_update_all_filt = Some(v.clone()),
            WHEN_NOT_MATCHED_INSERT_ALL => p.when_not_matched_insert_all = flag(k, v)?,
            WHEN_NOT_MATCHED_BY_SOURCE_DELETE => p.when_not_matched_by_source_delete = flag(k, v)?,
            WHEN_NOT_MATCHED_BY_SOURCE_DELETE_FILT => {
                p.when_not_matched_by_source_delete_filt = Some(v.clone())
            }
            USE_INDEX => p.use_index = flag(k, v)?,
            USE_LSM => p.mem_wal = Some(flag(k, v)? || p.mem_wal == Some(true)),
            "delimiter" => {}
            other => {
                return Err(Error::invalid(format!(
                    "merge_insert does not know the query parameter {other:?}"
                )))
            }
        }
    }
    if let Some(ms) = header(header::REQUEST_TIMEOUT_MS) {
        let ms: u64 = ms
            .parse()
            .map_err(|_| Error::invalid(format!("bad {} {ms:?}", header::REQUEST_TIMEOUT_MS)))?;
        p.timeout = Some(std::time::Duration::from_millis(ms));
    }
    lone_filters(&p)?;
    let mut yes = false;
    for h in [header::MEM_WAL_ENABLED, header::USE_WAL] {
        if let Some(v) = header(h) {
            yes |= flag(&format!("header {h}"), &v)?;
        }
    }
    if yes {
        if p.mem_wal == Some(false) {
            return Err(Error::invalid(
                "merge_insert: use_lsm=false contradicts the MemWAL headers of the request",
            ));
        }
        p.mem_wal = Some(true);
    }
    Ok(p)
}

/// Refuses a clause's condition without its clause (it would be dropped, and the rows it
/// guards inserted or kept instead).
fn lone_filters(p: &MergeInsertParams) -> Result<()> {
    use merge_param::*;
    let lone = [
        (
            p.when_matched_update_all_filt.is_some() && !p.when_matched_update_all,
            WHEN_MATCHED_UPDATE_ALL_FILT,
            WHEN_MATCHED_UPDATE_ALL,
        ),
        (
            p.when_not_matched_by_source_delete_filt.is_some()
                && !p.when_not_matched_by_source_delete,
            WHEN_NOT_MATCHED_BY_SOURCE_DELETE_FILT,
            WHEN_NOT_MATCHED_BY_SOURCE_DELETE,
        ),
    ];
    match lone.iter().find(|l| l.0) {
        Some((_, filt, clause)) => Err(Error::invalid(format!(
            "merge_insert: {filt} is given without {clause}=true (a condition needs its clause)"
        ))),
        None => Ok(()),
    }
}

/// The `mode` query parameter of `create/` (`None`: a plain create).
pub fn create_mode(opts: CreateOptions) -> Option<&'static str> {
    match (opts.mode, opts.exist_ok) {
        (CreateMode::Overwrite, _) => Some("overwrite"),
        (CreateMode::Create, true) => Some("exist_ok"),
        (CreateMode::Create, false) => None,
    }
}

/// Parses `create/`'s `mode`.
pub fn parse_create_mode(mode: Option<&str>) -> Result<CreateOptions> {
    match mode {
        None | Some("create") => Ok(CreateOptions::default()),
        Some("overwrite") => Ok(CreateOptions {
            mode: CreateMode::Overwrite,
            exist_ok: false,
        }),
        Some("exist_ok") => Ok(CreateOptions {
            mode: CreateMode::Create,
            exist_ok: true,
        }),
        Some(m) => Err(Error::invalid(format!(
            "unknown create mode {m:?} (create, overwrite or exist_ok)"
        ))),
    }
}

/// The `mode` query parameter of `insert/` (an append sends none).
pub fn insert_mode(mode: AddMode) -> Option<&'static str> {
    (mode == AddMode::Overwrite).then_some("overwrite")
}

/// Parses `insert/`'s `mode`.
pub fn parse_insert_mode(mode: Option<&str>) -> Result<AddMode> {
    match mode {
        None | Some("append") => Ok(AddMode::Append),
        Some("overwrite") => Ok(AddMode::Overwrite),
        Some(m) => Err(Error::invalid(format!(
            "unknown insert mode {m:?} (append or overwrite)"
        ))),
    }
}

/// `{"version": N}` (describe, version/list): absent or null is the latest.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionBody {
    /// The version, or the latest.
    pub version: Option<u64>,
}

/// `{"new_table_name": "..."}` (rename).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenameBody {
    /// The table's new name.
    pub new_table_name: Option<String>,
    /// The namespace to move it to (absent: where it is).
    pub new_namespace: Option<Vec<String>>,
}

/// `{"predicate": "...", "version": N}` (count_rows, delete).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredicateBody {
    /// SQL filter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
    /// Version to read.
    pub version: Option<u64>,
}

/// `{"predicate": "...", "updates": [[column, sql], ...]}` (update).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    /// Rows to update (all when absent).
    pub predicate: Option<String>,
    /// `column = SQL` pairs.
    #[serde(default)]
    pub updates: Vec<(String, String)>,
}

/// The answer of `merge_insert/` (an empty body or `{}` reads as zeros).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct MergeInsertResponse {
    /// Version after the merge.
    pub version: u64,
    /// Rows inserted.
    pub num_inserted_rows: u64,
    /// Rows updated.
    pub num_updated_rows: u64,
    /// Rows deleted.
    pub num_deleted_rows: u64,
    /// Commit attempts (optional on the wire).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_attempts: Option<u32>,
    /// Rows written: inserted plus updated (optional on the wire).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_rows: Option<u64>,
}

impl From<&MergeResult> for MergeInsertResponse {
    fn from(r: &MergeResult) -> Self {
        Self {
            version: r.version,
            num_inserted_rows: r.num_inserted_rows,
            num_updated_rows: r.num_updated_rows,
            num_deleted_rows: r.num_deleted_rows,
            num_attempts: Some(r.num_attempts),
            num_rows: Some(r.num_rows),
        }
    }
}

/// The answer of `delete/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct DeleteResponse {
    /// Rows deleted.
    pub num_deleted_rows: u64,
    /// Version after the delete.
    pub version: u64,
}

/// The answer of `update/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct UpdateResponse {
    /// Rows rewritten.
    pub rows_updated: u64,
    /// Version after the update.
    pub version: u64,
}

/// The answer of `create/` and `insert/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct VersionResponse {
    /// The new version.
    pub version: u64,
}

/// The answer of `optimize/` (ours; the official client refuses it on Cloud).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct OptimizeResponse {
    /// Version after compaction.
    pub version: u64,
    /// Fragments replaced.
    pub fragments_removed: u64,
    /// Fragments written.
    pub fragments_added: u64,
    /// Deleted rows dropped from storage.
    pub deleted_rows_purged: u64,
}

/// The body of `cleanup_old_versions/` (ours: the official clients clean up
/// on the server's side, and memwal-server does too, by its retention).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CleanupBody {
    /// Versions committed longer ago than this go (default 7 days).
    pub older_than_ms: Option<u64>,
    /// Also remove files no version names that are newer than that.
    #[serde(default)]
    pub delete_unverified: bool,
}

/// The body of `optimize/` (ours; every field optional: Lance's defaults).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OptimizeBody {
    /// Fragments with fewer rows are compacted (default 1,048,576).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rows_per_fragment: Option<u64>,
    /// Fragments whose deleted share is above this are rewritten (default 0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub materialize_deletions_threshold: Option<f64>,
}

impl OptimizeBody {
    /// The body asking for `o`.
    pub fn of(o: &crate::api::CompactOptions) -> Self {
        Self {
            target_rows_per_fragment: Some(o.target_rows_per_fragment),
            materialize_deletions_threshold: Some(o.materialize_deletions_threshold),
        }
    }
    /// The options asked for, Lance's defaults for what is absent.
    pub fn options(&self) -> crate::api::CompactOptions {
        let d = crate::api::CompactOptions::default();
        crate::api::CompactOptions {
            target_rows_per_fragment: self
                .target_rows_per_fragment
                .unwrap_or(d.target_rows_per_fragment),
            materialize_deletions_threshold: self
                .materialize_deletions_threshold
                .unwrap_or(d.materialize_deletions_threshold),
            ..d
        }
    }
}

/// The answer of `cleanup_old_versions/`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CleanupResponse {
    /// Bytes of the files removed.
    pub bytes_removed: u64,
    /// Versions removed.
    pub old_versions_removed: u64,
}

/// LanceDB's default age of the versions cleanup removes: 7 days.
pub const DEFAULT_CLEANUP_OLDER_THAN_MS: u64 = 7 * 24 * 3600 * 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_query_round_trips() {
        let mut p = MergeInsertParams::new(vec!["a".into(), "b".into()]);
        p.when_matched_update_all = true;
        p.when_matched_update_all_filt = Some("target.x < source.x".into());
        p.when_not_matched_by_source_delete = true;
        p.when_not_matched_by_source_delete_filt = Some("x < 2".into());
        p.use_index = false;
        p.timeout = Some(std::time::Duration::from_millis(250));
        p.mem_wal = Some(true);
        let q = merge_query(&p);
        let got = parse_merge(&q, |h| match h {
            header::REQUEST_TIMEOUT_MS => Some("250".into()),
            header::USE_WAL => Some("true".into()),
            _ => None,
        })
        .expect("parse");
        assert_eq!(got, p);
        let bad = parse_merge(
            &[
                ("on".into(), "a".into()),
                ("when_macthed".into(), "true".into()),
            ],
            |_| None,
        )
        .expect_err("unknown");
        assert!(bad.to_string().contains("when_macthed"), "{bad}");
    }

    #[test]
    fn modes_round_trip() {
        for o in [
            CreateOptions::default(),
            parse_create_mode(Some("overwrite")).expect("o"),
            parse_create_mode(Some("exist_ok")).expect("e"),
        ] {
            let back = parse_create_mode(create_mode(o)).expect("back");
            assert_eq!((back.mode, back.exist_ok), (o.mode, o.exist_ok));
        }
        for m in [AddMode::Append, AddMode::Overwrite] {
            assert_eq!(parse_insert_mode(insert_mode(m)).expect("m"), m);
        }
        assert!(parse_insert_mode(Some("upsert")).is_err());
    }
}
