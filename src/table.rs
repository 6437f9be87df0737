//! `Table`: reads, writes and merge insert on any table (native or remote).

use std::collections::HashMap;
use std::sync::Arc;

use memwal_core::protocol::CreateIndexBody;
use memwal_core::table::scan::answer_schema;
use memwal_core::IndexTuning;
use memwal_core::{ipc, AddMode, DistanceType, QueryRequest, Table as CoreTable, VectorQuery};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use crate::data::decode;
use crate::error;
use crate::merge::{MergeInsertOptions, MergeInsertPlan};

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// One version of a table.
#[napi(object)]
pub struct Version {
    pub version: i64,
    /// Commit time in ms since the Unix epoch.
    pub timestamp: i64,
    pub operation: String,
    pub metadata: HashMap<String, String>,
}

/// One column of `select({alias: sql})`.
#[napi(object)]
pub struct SqlProjection {
    pub alias: String,
    pub sql: String,
}

/// One sort key of `orderBy`.
#[napi(object)]
pub struct ColumnOrdering {
    pub column_name: String,
    pub ascending: bool,
    pub nulls_first: bool,
}

/// A column to add: its name and the SQL computing it from each row.
#[napi(object)]
pub struct AddColumnsSql {
    pub name: String,
    pub value_sql: String,
}

/// One change to a column (`alterColumns`).
#[napi(object)]
pub struct ColumnAlteration {
    pub path: String,
    pub rename: Option<String>,
    pub nullable: Option<bool>,
    /// The new type in its schema JSON form (`{"type": "int64"}`).
    pub data_type_json: Option<String>,
    /// Or as an Arrow IPC stream of a schema whose one field has the type.
    pub data_type_ipc: Option<Buffer>,
}

impl ColumnAlteration {
    fn into_core(self) -> napi::Result<memwal_core::ColumnAlteration> {
        let data_type = match (self.data_type_json, self.data_type_ipc) {
            (Some(j), _) => {
                let v: serde_json::Value = serde_json::from_str(&j)
                    .map_err(|e| error::invalid(format!("dataType of '{}': {e}", self.path)))?;
                Some(memwal_core::json_schema::parse_type(&v).map_err(error::core)?)
            }
            (None, Some(b)) => {
                let d = decode(&b)?;
                let f = d.schema.fields().first().ok_or_else(|| {
                    error::invalid(format!("dataType of '{}' is missing", self.path))
                })?;
                Some(f.data_type().clone())
            }
            (None, None) => None,
        };
        Ok(memwal_core::ColumnAlteration {
            path: self.path,
            rename: self.rename,
            nullable: self.nullable,
            data_type,
        })
    }
}

/// Live rows per fragment: min, max, mean and nearest-rank percentiles.
#[napi(object)]
pub struct FragmentSummaryStats {
    pub min: i64,
    pub max: i64,
    pub mean: i64,
    pub p25: i64,
    pub p50: i64,
    pub p75: i64,
    pub p99: i64,
}

/// Fragments of a table.
#[napi(object)]
pub struct FragmentStatistics {
    pub num_fragments: i64,
    /// Fragments with fewer than 100,000 live rows.
    pub num_small_fragments: i64,
    pub lengths: FragmentSummaryStats,
}

/// Result of `stats`.
#[napi(object)]
pub struct TableStatistics {
    pub total_bytes: i64,
    pub num_rows: i64,
    pub num_indices: i64,
    pub fragment_stats: FragmentStatistics,
}

impl From<memwal_core::TableStats> for TableStatistics {
    fn from(s: memwal_core::TableStats) -> Self {
        let f = s.fragment_stats;
        let l = f.lengths;
        TableStatistics {
            total_bytes: to_i64(s.total_bytes),
            num_rows: to_i64(s.num_rows),
            num_indices: to_i64(s.num_indices),
            fragment_stats: FragmentStatistics {
                num_fragments: to_i64(f.num_fragments),
                num_small_fragments: to_i64(f.num_small_fragments),
                lengths: FragmentSummaryStats {
                    min: to_i64(l.min),
                    max: to_i64(l.max),
                    mean: to_i64(l.mean),
                    p25: to_i64(l.p25),
                    p50: to_i64(l.p50),
                    p75: to_i64(l.p75),
                    p99: to_i64(l.p99),
                },
            },
        }
    }
}

/// One memtable of a served table's MemWAL.
#[napi(object)]
pub struct MemtableStats {
    pub generation: i64,
    pub rows: i64,
    pub bytes: i64,
    pub batches: i64,
    pub indexes: Vec<String>,
}

/// A sealed generation on disk (memwal has none: a flush merges into the table).
#[napi(object)]
pub struct GenerationStats {
    pub generation: i64,
    pub bytes: i64,
    pub rows: Option<i64>,
}

/// One bucket of a MemWAL (memwal has one).
#[napi(object)]
pub struct BucketStats {
    pub shard_id: String,
    pub status: String,
    pub writer_epoch: i64,
    pub manifest_version: i64,
    pub current_generation: i64,
    pub replay_after_wal_entry_position: i64,
    pub wal_entry_position_last_seen: i64,
    pub generations: Vec<GenerationStats>,
    pub compacting: bool,
    pub memtables: Option<Vec<MemtableStats>>,
}

/// Result of `getLsmStats`.
#[napi(object)]
pub struct LsmStats {
    pub buckets: Vec<BucketStats>,
}

impl From<memwal_core::LsmStats> for LsmStats {
    fn from(s: memwal_core::LsmStats) -> Self {
        let bucket = |b: memwal_core::stats::BucketStats| BucketStats {
            shard_id: b.shard_id,
            status: b.status,
            writer_epoch: to_i64(b.writer_epoch),
            manifest_version: to_i64(b.manifest_version),
            current_generation: to_i64(b.current_generation),
            replay_after_wal_entry_position: to_i64(b.replay_after_wal_entry_position),
            wal_entry_position_last_seen: to_i64(b.wal_entry_position_last_seen),
            generations: b
                .generations
                .into_iter()
                .map(|g| GenerationStats {
                    generation: to_i64(g.generation),
                    bytes: to_i64(g.bytes),
                    rows: g.rows.map(to_i64),
                })
                .collect(),
            compacting: b.compacting,
            memtables: b.memtables.map(|ms| {
                ms.into_iter()
                    .map(|m| MemtableStats {
                        generation: to_i64(m.generation),
                        rows: to_i64(m.rows),
                        bytes: to_i64(m.bytes),
                        batches: to_i64(m.batches),
                        indexes: m.indexes,
                    })
                    .collect()
            }),
        };
        LsmStats {
            buckets: s.buckets.into_iter().map(bucket).collect(),
        }
    }
}

/// What a tag records.
#[napi(object)]
pub struct TagContents {
    pub version: i64,
    pub manifest_size: i64,
}

/// Result of `delete`.
#[napi(object)]
pub struct DeleteResult {
    pub version: i64,
    pub num_deleted_rows: i64,
}

/// Result of `update`.
#[napi(object)]
pub struct UpdateResult {
    pub version: i64,
    pub rows_updated: i64,
}

/// What `optimize` compacts (Lance's defaults for what is absent).
#[napi(object)]
#[derive(Default)]
pub struct OptimizeOptions {
    /// Fragments with fewer rows are compacted (default 1,048,576).
    pub target_rows_per_fragment: Option<i64>,
    /// Fragments whose deleted share is above this are rewritten (default 0.1).
    pub materialize_deletions_threshold: Option<f64>,
}

/// Result of `optimize`.
#[napi(object)]
pub struct OptimizeStats {
    pub version: i64,
    pub fragments_removed: i64,
    pub fragments_added: i64,
    pub deleted_rows_purged: i64,
}

/// Result of `cleanupOldVersions` (0.39's `prune` stats).
#[napi(object)]
pub struct PruneStats {
    pub bytes_removed: i64,
    pub old_versions_removed: i64,
}

/// A scan request, or a vector search when `vectors` is set.
#[napi(object)]
pub struct QueryOptions {
    pub filter: Option<String>,
    pub columns: Option<Vec<String>>,
    /// SQL projections, in order (instead of `columns`).
    pub projections: Option<Vec<SqlProjection>>,
    /// Sort keys of a plain query.
    pub order_by: Option<Vec<ColumnOrdering>>,
    pub limit: Option<i64>,
    pub offset: Option<i64>,
    pub with_row_id: Option<bool>,
    /// Query vectors (one or several).
    pub vectors: Option<Vec<Vec<f64>>>,
    pub column: Option<String>,
    pub distance_type: Option<String>,
    /// false: filter after ranking.
    pub prefilter: Option<bool>,
    pub lower_bound: Option<f64>,
    pub upper_bound: Option<f64>,
    pub nprobes: Option<u32>,
    pub minimum_nprobes: Option<u32>,
    pub maximum_nprobes: Option<u32>,
    pub ef: Option<u32>,
    pub refine_factor: Option<u32>,
    pub bypass_vector_index: Option<bool>,
    pub fast_search: Option<bool>,
    /// A full-text query as the wire's `full_text_query` body (JSON text):
    /// `{"query": "text" | {"match": ...}, "columns": [...]}`.
    pub full_text: Option<String>,
    /// The base table only, skipping a served table's MemWAL rows
    /// (0.39's `useLsm(false)`).
    pub base_only: Option<bool>,
}

fn f32_of(what: &str, x: f64) -> napi::Result<f32> {
    let v = x as f32;
    if x.is_finite() && !v.is_finite() {
        return Err(error::invalid(format!(
            "{what} {x} is outside the float32 range"
        )));
    }
    Ok(v)
}

impl QueryOptions {
    /// The core request (vector values checked by the core's plan).
    fn into_request(self) -> napi::Result<QueryRequest> {
        let full_text = match self.full_text.as_deref() {
            Some(json) => Some(memwal_core::TextSearch {
                query: full_text_query(json)?,
                prefilter: self.prefilter.unwrap_or(true),
                fast_search: self.fast_search.unwrap_or(false),
            }),
            None => None,
        };
        let nearest = match self.vectors {
            None => None,
            Some(vs) => {
                let vectors = vs
                    .iter()
                    .map(|v| v.iter().map(|x| f32_of("query vector value", *x)).collect())
                    .collect::<napi::Result<Vec<Vec<f32>>>>()?;
                Some(VectorQuery {
                    vectors,
                    column: self.column,
                    distance_type: self
                        .distance_type
                        .as_deref()
                        .map(str::parse::<DistanceType>)
                        .transpose()
                        .map_err(error::core)?,
                    prefilter: self.prefilter.unwrap_or(true),
                    lower_bound: self
                        .lower_bound
                        .map(|x| f32_of("distanceRange lower bound", x))
                        .transpose()?,
                    upper_bound: self
                        .upper_bound
                        .map(|x| f32_of("distanceRange upper bound", x))
                        .transpose()?,
                    tuning: IndexTuning {
                        nprobes: self.nprobes,
                        minimum_nprobes: self.minimum_nprobes,
                        maximum_nprobes: self.maximum_nprobes,
                        ef: self.ef,
                        refine_factor: self.refine_factor,
                        bypass_vector_index: self.bypass_vector_index.unwrap_or(false),
                        fast_search: self.fast_search.unwrap_or(false),
                    },
                })
            }
        };
        Ok(QueryRequest {
            filter: self.filter,
            columns: self.columns,
            projections: self
                .projections
                .map(|p| p.into_iter().map(|p| (p.alias, p.sql)).collect()),
            order_by: self
                .order_by
                .unwrap_or_default()
                .into_iter()
                .map(|o| memwal_core::OrderBy {
                    column: o.column_name,
                    ascending: o.ascending,
                    nulls_first: o.nulls_first,
                })
                .collect(),
            limit: non_negative(self.limit, "limit")?,
            offset: non_negative(self.offset, "offset")?,
            with_row_id: self.with_row_id.unwrap_or(false),
            nearest,
            full_text,
            base_only: self.base_only.unwrap_or(false),
        })
    }
}

/// Reads a full-text query, in the wire's `full_text_query` shape (the
/// server's reader: a string query is a match, or a phrase in double quotes).
fn full_text_query(json: &str) -> napi::Result<memwal_fts::FtsQuery> {
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| error::invalid(format!("full-text query is not JSON: {e}")))?;
    memwal_fts::parse_full_text_query(&v)
        .map_err(|e| error::invalid(format!("full-text query: {e}")))
}

/// `createIndex` options: the index config (type and parameters, with the
/// wire names' camelCase) plus `name` and `replace`.
#[napi(object)]
pub struct IndexOptions {
    pub index_type: Option<String>,
    pub distance_type: Option<String>,
    pub num_partitions: Option<u32>,
    pub target_partition_size: Option<u32>,
    pub num_sub_vectors: Option<u32>,
    pub num_bits: Option<u32>,
    pub sample_rate: Option<u32>,
    pub max_iterations: Option<u32>,
    pub m: Option<u32>,
    pub ef_construction: Option<u32>,
    /// An FTS index's parameters with the wire names (JSON object text).
    pub fts_params: Option<String>,
    pub name: Option<String>,
    pub replace: Option<bool>,
}

/// An index and its row counts (`listIndices`, `indexStats`).
#[napi(object)]
pub struct IndexInfo {
    pub name: String,
    pub index_type: String,
    pub columns: Vec<String>,
    pub distance_type: Option<String>,
    pub num_indexed_rows: i64,
    pub num_unindexed_rows: i64,
    pub index_uuid: Option<String>,
    pub num_segments: i64,
    pub size_bytes: Option<i64>,
    /// ms since the Unix epoch.
    pub created_at_ms: Option<f64>,
    /// The build parameters, as JSON text.
    pub index_details: Option<String>,
    /// Lance's format version of the index, where memwal's answers it.
    pub index_version: Option<u32>,
}

impl From<memwal_core::IndexInfo> for IndexInfo {
    fn from(i: memwal_core::IndexInfo) -> Self {
        Self {
            name: i.name,
            index_type: i.index_type,
            columns: i.columns,
            distance_type: i.distance_type,
            num_indexed_rows: to_i64(i.num_indexed_rows),
            num_unindexed_rows: to_i64(i.num_unindexed_rows),
            index_uuid: i.uuid,
            num_segments: to_i64(i.num_segments),
            size_bytes: i.size_bytes.map(to_i64),
            created_at_ms: i.created_at_ms.map(|ms| ms as f64),
            index_details: i.details,
            index_version: i.index_version,
        }
    }
}

impl IndexOptions {
    /// The core request, checked by the same code as the server's
    /// `create_index/` body.
    fn into_request(self, column: String) -> napi::Result<memwal_core::IndexRequest> {
        if let Some(t) = self.index_type.as_deref() {
            if t.eq_ignore_ascii_case("FTS") || t.eq_ignore_ascii_case("INVERTED") {
                // The server's reader of an FTS `create_index/` body: the same checks.
                let mut body = match self.fts_params.as_deref() {
                    None => serde_json::Map::new(),
                    Some(p) => match serde_json::from_str(p) {
                        Ok(serde_json::Value::Object(m)) => m,
                        _ => return Err(error::invalid("FTS index parameters must be an object")),
                    },
                };
                body.insert("column".into(), column.into());
                body.insert("index_type".into(), "FTS".into());
                if let Some(n) = self.name {
                    body.insert("name".into(), n.into());
                }
                if let Some(r) = self.replace {
                    body.insert("replace".into(), r.into());
                }
                return memwal_core::protocol::create_index_request(&serde_json::Value::Object(
                    body,
                ))
                .map_err(error::core);
            }
        }
        CreateIndexBody {
            column,
            index_type: self.index_type,
            metric_type: self.distance_type,
            name: self.name,
            replace: self.replace,
            num_partitions: self.num_partitions,
            target_partition_size: self.target_partition_size,
            sample_rate: self.sample_rate,
            max_iterations: self.max_iterations,
            num_sub_vectors: self.num_sub_vectors,
            num_bits: self.num_bits,
            m: self.m,
            ef_construction: self.ef_construction,
        }
        .to_request()
        .map_err(error::core)
    }
}

/// A table handle.
#[napi]
pub struct Table {
    inner: Arc<dyn CoreTable>,
}

impl Table {
    pub fn new(inner: Arc<dyn CoreTable>) -> Self {
        Self { inner }
    }
}

fn non_negative(v: Option<i64>, what: &str) -> napi::Result<Option<usize>> {
    v.map(|v| {
        usize::try_from(v)
            .map_err(|_| error::invalid(format!("{what} must be a non-negative integer, got {v}")))
    })
    .transpose()
}

#[napi]
impl Table {
    /// The table name.
    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    /// The schema, as an Arrow IPC stream with no batches.
    #[napi(catch_unwind)]
    pub async fn schema(&self) -> napi::Result<Buffer> {
        let s = self.inner.schema().await.map_err(error::core)?;
        Ok(ipc::encode_schema(&s).map_err(error::core)?.into())
    }

    /// The current version.
    #[napi(catch_unwind)]
    pub async fn version(&self) -> napi::Result<i64> {
        Ok(to_i64(self.inner.version().await.map_err(error::core)?))
    }

    /// Every version, oldest first.
    #[napi(catch_unwind)]
    pub async fn list_versions(&self) -> napi::Result<Vec<Version>> {
        let v = self.inner.list_versions().await.map_err(error::core)?;
        Ok(v.into_iter()
            .map(|v| Version {
                version: to_i64(v.version),
                timestamp: to_i64(v.timestamp_ms),
                operation: v.operation,
                metadata: v.metadata.into_iter().collect(),
            })
            .collect())
    }

    /// A new latest version equal to `version` (omitted: the version this
    /// handle is checked out at); returns the new version.
    #[napi(catch_unwind)]
    pub async fn restore(&self, version: Option<i64>) -> napi::Result<i64> {
        let v = version
            .map(|v| {
                u64::try_from(v)
                    .map_err(|_| error::invalid(format!("version must be positive, got {v}")))
            })
            .transpose()?;
        Ok(to_i64(self.inner.restore(v).await.map_err(error::core)?))
    }

    /// The MemWAL's state (`null` for a table without one).
    #[napi(catch_unwind)]
    pub async fn get_lsm_stats(
        &self,
        include_generation_rows: Option<bool>,
    ) -> napi::Result<Option<LsmStats>> {
        let s = self
            .inner
            .lsm_stats(include_generation_rows.unwrap_or(false))
            .await
            .map_err(error::core)?;
        Ok(s.map(Into::into))
    }

    /// Tags by name.
    #[napi(catch_unwind)]
    pub async fn tags_list(&self) -> napi::Result<HashMap<String, TagContents>> {
        let tags = self.inner.tags().await.map_err(error::core)?;
        Ok(tags
            .into_iter()
            .map(|(k, t)| {
                let c = TagContents {
                    version: to_i64(t.version),
                    manifest_size: to_i64(t.manifest_size),
                };
                (k, c)
            })
            .collect())
    }

    /// Names `version` `tag` (`replace`: update an existing tag, else create).
    #[napi(catch_unwind)]
    pub async fn tag_set(&self, tag: String, version: i64, replace: bool) -> napi::Result<()> {
        let v = u64::try_from(version)
            .map_err(|_| error::invalid(format!("version must be positive, got {version}")))?;
        self.inner
            .set_tag(&tag, v, replace)
            .await
            .map_err(error::core)
    }

    /// Removes a tag.
    #[napi(catch_unwind)]
    pub async fn tag_delete(&self, tag: String) -> napi::Result<()> {
        self.inner.delete_tag(&tag).await.map_err(error::core)
    }

    /// The version a tag names.
    #[napi(catch_unwind)]
    pub async fn tag_version(&self, tag: String) -> napi::Result<i64> {
        Ok(to_i64(
            self.inner.tag_version(&tag).await.map_err(error::core)?,
        ))
    }

    /// Records the table's unenforced primary key (one column).
    #[napi(catch_unwind)]
    pub async fn set_unenforced_primary_key(&self, columns: Vec<String>) -> napi::Result<()> {
        self.inner
            .set_unenforced_primary_key(columns)
            .await
            .map_err(error::core)
    }

    /// Records an LSM write spec given as LanceDB's wire JSON (`null`:
    /// removes the recorded one).
    #[napi(catch_unwind)]
    pub async fn set_lsm_write_spec(&self, spec_json: Option<String>) -> napi::Result<()> {
        let spec = match spec_json {
            None => None,
            Some(j) => Some(serde_json::from_str(&j).map_err(|e| {
                error::core(memwal_core::Error::invalid(format!(
                    "malformed LSM write spec: {e}"
                )))
            })?),
        };
        self.inner
            .set_lsm_write_spec(spec)
            .await
            .map_err(error::core)
    }

    /// The recorded LSM write spec as LanceDB's wire JSON, if any.
    #[napi(catch_unwind)]
    pub async fn lsm_write_spec(&self) -> napi::Result<Option<String>> {
        let spec = self.inner.lsm_write_spec().await.map_err(error::core)?;
        spec.map(|s| {
            serde_json::to_string(&s).map_err(|e| {
                error::core(memwal_core::Error::internal(format!(
                    "an LSM write spec as JSON: {e}"
                )))
            })
        })
        .transpose()
    }

    /// Sets `upsert`'s entries of the table's config and removes the
    /// `delete_keys`, in one version (Lance's `update_config`).
    #[napi(catch_unwind)]
    pub async fn update_config(
        &self,
        upsert: HashMap<String, String>,
        delete_keys: Vec<String>,
    ) -> napi::Result<()> {
        self.inner
            .update_config(upsert.into_iter().collect(), delete_keys)
            .await
            .map_err(error::core)
    }

    /// The table's config (Lance's `config()`).
    #[napi(catch_unwind)]
    pub async fn config(&self) -> napi::Result<HashMap<String, String>> {
        let c = self.inner.config().await.map_err(error::core)?;
        Ok(c.into_iter().collect())
    }

    /// Merges every buffered MemWAL row into the table.
    #[napi(catch_unwind)]
    pub async fn flush_lsm(&self) -> napi::Result<()> {
        self.inner.flush_lsm().await.map_err(error::core)
    }

    /// Adds columns computed by SQL from each row; returns the new version.
    #[napi(catch_unwind)]
    pub async fn add_columns_sql(&self, columns: Vec<AddColumnsSql>) -> napi::Result<i64> {
        let cols = columns.into_iter().map(|c| (c.name, c.value_sql)).collect();
        let v = self
            .inner
            .add_columns(memwal_core::NewColumns::Sql(cols))
            .await
            .map_err(error::core)?;
        Ok(to_i64(v))
    }

    /// Adds all-null columns: the fields of an Arrow IPC stream's schema.
    #[napi(catch_unwind)]
    pub async fn add_null_columns(&self, schema: Buffer) -> napi::Result<i64> {
        let d = decode(&schema)?;
        let fields = d
            .schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let v = self
            .inner
            .add_columns(memwal_core::NewColumns::Nulls(fields))
            .await
            .map_err(error::core)?;
        Ok(to_i64(v))
    }

    /// Renames columns, changes their nullability or type.
    #[napi(catch_unwind)]
    pub async fn alter_columns(&self, alterations: Vec<ColumnAlteration>) -> napi::Result<i64> {
        let alts = alterations
            .into_iter()
            .map(ColumnAlteration::into_core)
            .collect::<napi::Result<Vec<_>>>()?;
        let v = self.inner.alter_columns(alts).await.map_err(error::core)?;
        Ok(to_i64(v))
    }

    /// Drops columns.
    #[napi(catch_unwind)]
    pub async fn drop_columns(&self, columns: Vec<String>) -> napi::Result<i64> {
        let v = self
            .inner
            .drop_columns(columns)
            .await
            .map_err(error::core)?;
        Ok(to_i64(v))
    }

    /// Sizes and fragment layout.
    #[napi(catch_unwind)]
    pub async fn stats(&self) -> napi::Result<TableStatistics> {
        Ok(self.inner.stats().await.map_err(error::core)?.into())
    }

    /// A read-only view of `version` (omitted: the latest, writable table).
    #[napi(catch_unwind)]
    pub async fn checkout(&self, version: Option<i64>) -> napi::Result<Table> {
        let v = version
            .map(|v| {
                u64::try_from(v)
                    .map_err(|_| error::invalid(format!("version must be positive, got {v}")))
            })
            .transpose()?;
        Ok(Table::new(
            self.inner.checkout(v).await.map_err(error::core)?,
        ))
    }

    /// Rows, optionally only those matching `filter`.
    #[napi(catch_unwind)]
    pub async fn count_rows(&self, filter: Option<String>) -> napi::Result<i64> {
        Ok(to_i64(
            self.inner.count_rows(filter).await.map_err(error::core)?,
        ))
    }

    /// Adds rows (Arrow IPC bytes); returns the new version.
    #[napi(catch_unwind)]
    pub async fn add(&self, data: Buffer, mode: Option<String>) -> napi::Result<i64> {
        let mode = match mode.as_deref() {
            None | Some("append") => AddMode::Append,
            Some("overwrite") => AddMode::Overwrite,
            Some(other) => {
                return Err(error::invalid(format!(
                    "unknown add mode {other:?}: use \"append\" or \"overwrite\""
                )))
            }
        };
        let data = decode(&data)?;
        Ok(to_i64(
            self.inner.add(data, mode).await.map_err(error::core)?,
        ))
    }

    /// Deletes rows matching `predicate`.
    #[napi(catch_unwind)]
    pub async fn delete(&self, predicate: String) -> napi::Result<DeleteResult> {
        let r = self.inner.delete(&predicate).await.map_err(error::core)?;
        Ok(DeleteResult {
            version: to_i64(r.version),
            num_deleted_rows: to_i64(r.num_deleted_rows),
        })
    }

    /// Sets columns to SQL expressions on rows matching `where`.
    #[napi(catch_unwind)]
    pub async fn update(
        &self,
        filter: Option<String>,
        values_sql: HashMap<String, String>,
    ) -> napi::Result<UpdateResult> {
        let mut values: Vec<(String, String)> = values_sql.into_iter().collect();
        values.sort();
        let r = self
            .inner
            .update(filter, values)
            .await
            .map_err(error::core)?;
        Ok(UpdateResult {
            version: to_i64(r.version),
            rows_updated: to_i64(r.rows_updated),
        })
    }

    /// Scans rows or searches vectors; returns an Arrow IPC stream.
    #[napi(catch_unwind)]
    pub async fn query(&self, options: QueryOptions) -> napi::Result<Buffer> {
        let req = options.into_request()?;
        let batches = self.inner.query(req.clone()).await.map_err(error::core)?;
        let schema = match batches.first() {
            Some(b) => b.schema(),
            None => {
                // No batch: still return the answer's schema.
                let s = self.inner.schema().await.map_err(error::core)?;
                answer_schema(&s, &req).map_err(error::core)?
            }
        };
        Ok(ipc::encode_stream(&schema, &batches)
            .map_err(error::core)?
            .into())
    }

    /// How the query would run, as text.
    #[napi(catch_unwind)]
    pub async fn explain_plan(
        &self,
        options: QueryOptions,
        verbose: Option<bool>,
    ) -> napi::Result<String> {
        let req = options.into_request()?;
        self.inner
            .explain_plan(req, verbose.unwrap_or(false))
            .await
            .map_err(error::core)
    }

    /// Runs the query and reports its plan with rows and time.
    #[napi(catch_unwind)]
    pub async fn analyze_plan(&self, options: QueryOptions) -> napi::Result<String> {
        let req = options.into_request()?;
        self.inner.analyze_plan(req).await.map_err(error::core)
    }

    /// Compacts the small fragments and those with many deleted rows, then
    /// folds unindexed rows into the indexes.
    #[napi(catch_unwind)]
    pub async fn optimize(&self, options: Option<OptimizeOptions>) -> napi::Result<OptimizeStats> {
        let o = options.unwrap_or_default();
        let mut c = memwal_core::CompactOptions::default();
        if let Some(n) = non_negative(o.target_rows_per_fragment, "targetRowsPerFragment")? {
            c.target_rows_per_fragment = n as u64;
        }
        if let Some(t) = o.materialize_deletions_threshold {
            c.materialize_deletions_threshold = t;
        }
        let s = self.inner.optimize(c).await.map_err(error::core)?;
        Ok(OptimizeStats {
            version: to_i64(s.version),
            fragments_removed: to_i64(s.fragments_removed),
            fragments_added: to_i64(s.fragments_added),
            deleted_rows_purged: to_i64(s.deleted_rows_purged),
        })
    }

    /// Removes versions older than `older_than_ms` (never the latest or a
    /// tagged one) and the files only they named.
    #[napi(catch_unwind)]
    pub async fn cleanup_old_versions(
        &self,
        older_than_ms: f64,
        delete_unverified: bool,
    ) -> napi::Result<PruneStats> {
        if !(older_than_ms.is_finite() && older_than_ms >= 0.0) {
            return Err(error::core(memwal_core::Error::invalid(format!(
                "cleanupOlderThan must be a time in the past, got {older_than_ms} ms ago"
            ))));
        }
        let older = std::time::Duration::from_millis(older_than_ms as u64);
        let s = self
            .inner
            .cleanup_old_versions(older, delete_unverified)
            .await
            .map_err(error::core)?;
        Ok(PruneStats {
            bytes_removed: to_i64(s.bytes_removed),
            old_versions_removed: to_i64(s.old_versions_removed),
        })
    }

    /// Checks a merge insert's clause set and binds it to this table; the
    /// plan's `execute` runs it (nothing is converted or sent if invalid).
    #[napi(catch_unwind)]
    pub fn prepare_merge_insert(
        &self,
        options: MergeInsertOptions,
    ) -> napi::Result<MergeInsertPlan> {
        MergeInsertPlan::prepare(self.inner.clone(), options)
    }

    /// Builds an index on `column` and commits a version recording it.
    #[napi(catch_unwind)]
    pub async fn create_index(&self, column: String, options: IndexOptions) -> napi::Result<()> {
        let req = options.into_request(column)?;
        self.inner.create_index(req).await.map_err(error::core)
    }

    /// The indexes with their row counts.
    #[napi(catch_unwind)]
    pub async fn list_indices(&self) -> napi::Result<Vec<IndexInfo>> {
        let l = self.inner.list_indices().await.map_err(error::core)?;
        Ok(l.into_iter().map(IndexInfo::from).collect())
    }

    /// One index (`null` when there is none of that name).
    #[napi(catch_unwind)]
    pub async fn index_stats(&self, name: String) -> napi::Result<Option<IndexInfo>> {
        match self.inner.index_stats(&name).await {
            Ok(i) => Ok(Some(i.into())),
            Err(memwal_core::Error::IndexNotFound { .. }) => Ok(None),
            Err(e) => Err(error::core(e)),
        }
    }

    /// Drops an index.
    #[napi(catch_unwind)]
    pub async fn drop_index(&self, name: String) -> napi::Result<()> {
        self.inner.drop_index(&name).await.map_err(error::core)
    }
}
