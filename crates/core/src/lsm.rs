//! What a table records for LanceDB 0.39's LSM write path: its unenforced
//! primary key (Lance's field metadata on one non-nullable key column) and
//! its LSM write spec (a manifest metadata entry), each checked as 0.39
//! checks it, and how a merge insert is routed once they are recorded
//! ([`route`]): with a spec, an upsert goes through the MemWAL unless it
//! asks `use_lsm(false)`, and any other merge form is refused.

use std::collections::BTreeMap;

use arrow_schema::{DataType, Field, Schema};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::merge::MergeInsert;

/// Lance's field metadata key marking the unenforced primary key (its
/// value is the 1-based position in the key).
pub const PK_META: &str = "lance-schema:unenforced-primary-key:position";

/// Lance's older marker of a primary key field (read, never written).
const PK_META_LEGACY: &str = "lance-schema:unenforced-primary-key";

/// Manifest metadata key of the LSM write spec (JSON; empty: none).
pub const SPEC_KEY: &str = "lance.lsm_write_spec";

/// Most buckets a bucket spec may have, as Lance allows.
pub const MAX_BUCKETS: u32 = 1024;

/// Writer configuration defaults memwal honours (its MemWAL always
/// persists a record before it acknowledges, so `durable_write` is
/// recorded and at least met); any other key is refused by name.
const WRITER_CONFIG_KEYS: [&str; 1] = ["durable_write"];

/// How rows are routed to the MemWAL's shards, as LanceDB's wire names it
/// (tagged on `mode`). memwal's MemWAL is one shard per table, so every
/// spec routes every row to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Sharding {
    /// One shard.
    Unsharded,
    /// Rows hashed on `column` into `num_buckets` shards.
    Bucket {
        /// The routing column.
        column: String,
        /// Shards, 1 to [`MAX_BUCKETS`].
        num_buckets: u32,
    },
    /// One shard per value of `column`.
    Identity {
        /// The routing column.
        column: String,
    },
}

/// An LSM write spec, in the shape of LanceDB's `set_lsm_write_spec` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LsmWriteSpec {
    /// How rows are routed.
    pub sharding: Sharding,
    /// Indexes the MemWAL keeps current (`None` when setting: every index
    /// of the table now; recorded resolved).
    #[serde(default)]
    pub maintained_indexes: Option<Vec<String>>,
    /// Defaults for the MemWAL's writers (only keys memwal honours).
    #[serde(default)]
    pub writer_config_defaults: BTreeMap<String, String>,
}

/// The unenforced primary key column of `schema`, if one is recorded.
pub fn primary_key(schema: &Schema) -> Option<&str> {
    schema
        .fields()
        .iter()
        .find(|f| is_key_field(f))
        .map(|f| f.name().as_str())
}

fn is_key_field(f: &Field) -> bool {
    let m = f.metadata();
    m.get(PK_META).is_some_and(|p| p != "0") || m.get(PK_META_LEGACY).is_some_and(|v| v == "true")
}

/// `schema` with `column` recorded as its unenforced primary key, checked
/// as LanceDB 0.39 checks it (one column, present, of a key type, not
/// nullable, and no key recorded yet: a key cannot change).
pub fn with_primary_key(schema: &Schema, columns: &[String]) -> Result<Schema> {
    if columns.len() > 1 {
        return Err(Error::invalid(format!(
            "set_unenforced_primary_key: compound primary keys are not supported, got {} columns",
            columns.len()
        )));
    }
    let column = columns
        .first()
        .ok_or_else(|| Error::invalid("set_unenforced_primary_key: a column is required"))?;
    if primary_key(schema).is_some() {
        return Err(Error::invalid(
            "set_unenforced_primary_key: an unenforced primary key is already set on this table; changing it is not supported",
        ));
    }
    let (at, field) = schema.column_with_name(column).ok_or_else(|| {
        Error::invalid(format!(
            "set_unenforced_primary_key: column '{column}' not found on table"
        ))
    })?;
    if !is_key_type(field.data_type()) {
        return Err(Error::invalid(format!(
            "set_unenforced_primary_key: column '{column}' has type {}, which is not supported as a primary key. Supported: Int32, Int64, Utf8, LargeUtf8, Binary, LargeBinary, FixedSizeBinary",
            field.data_type()
        )));
    }
    if field.is_nullable() {
        return Err(Error::invalid(format!(
            "set_unenforced_primary_key: primary key column '{column}' must not be nullable"
        )));
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut meta = field.metadata().clone();
    meta.remove(PK_META_LEGACY);
    meta.insert(PK_META.to_string(), "1".to_string());
    fields[at] = field.clone().with_metadata(meta);
    Ok(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn is_key_type(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int32
            | DataType::Int64
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::FixedSizeBinary(_)
    )
}

/// Refuses a schema change that would break the recorded key: dropping the
/// key column, making it nullable or giving it a type no key may have
/// (`new` is the schema after the change).
pub fn check_key_kept(old: &Schema, new: &Schema) -> Result<()> {
    let Some(key) = old.fields().iter().find(|f| is_key_field(f)) else {
        return Ok(());
    };
    match new.fields().iter().find(|f| is_key_field(f)) {
        None => Err(Error::invalid(format!(
            "column '{}' is the table's unenforced primary key and cannot be dropped",
            key.name()
        ))),
        Some(f) if f.is_nullable() => Err(Error::invalid(format!(
            "column '{}' is the table's unenforced primary key and cannot be made nullable",
            f.name()
        ))),
        Some(f) if !is_key_type(f.data_type()) => Err(Error::invalid(format!(
            "column '{}' is the table's unenforced primary key and cannot take type {}",
            f.name(),
            f.data_type()
        ))),
        Some(_) => Ok(()),
    }
}

/// The spec recorded in a version's metadata, if any.
pub fn recorded_spec(metadata: &BTreeMap<String, String>) -> Result<Option<LsmWriteSpec>> {
    match metadata.get(SPEC_KEY).map(String::as_str) {
        None | Some("") => Ok(None),
        Some(json) => serde_json::from_str(json).map(Some).map_err(|e| {
            Error::internal(format!("the recorded LSM write spec cannot be read: {e}"))
        }),
    }
}

/// The metadata entry that records `spec` (`None`: removes it).
pub fn spec_entry(spec: Option<&LsmWriteSpec>) -> Result<(String, String)> {
    let value = match spec {
        None => String::new(),
        Some(s) => serde_json::to_string(s)
            .map_err(|e| Error::internal(format!("an LSM write spec as JSON: {e}")))?,
    };
    Ok((SPEC_KEY.to_string(), value))
}

/// Checks `spec` against the table as LanceDB 0.39 does (none recorded
/// yet, a primary key recorded, the routing column present, 1 to 1024
/// buckets, maintained indexes that exist; `indexes` are the table's index
/// names) and returns it as recorded (maintained indexes resolved).
pub fn check_spec(
    spec: LsmWriteSpec,
    schema: &Schema,
    current: Option<&LsmWriteSpec>,
    indexes: &[String],
) -> Result<LsmWriteSpec> {
    if current.is_some() {
        return Err(Error::invalid(
            "set_lsm_write_spec: an LSM write spec is already set on this table; mutation is not supported",
        ));
    }
    if primary_key(schema).is_none() {
        return Err(Error::invalid(
            "set_lsm_write_spec: the table has no unenforced primary key; set one with set_unenforced_primary_key first",
        ));
    }
    match &spec.sharding {
        Sharding::Unsharded => {}
        Sharding::Bucket {
            column,
            num_buckets,
        } => {
            if !(1..=MAX_BUCKETS).contains(num_buckets) {
                return Err(Error::invalid(format!(
                    "bucket_sharding: num_buckets must be in [1, {MAX_BUCKETS}], got {num_buckets}"
                )));
            }
            routing_column(schema, "bucket", column)?;
        }
        Sharding::Identity { column } => routing_column(schema, "identity", column)?,
    }
    for key in spec.writer_config_defaults.keys() {
        if !WRITER_CONFIG_KEYS.contains(&key.as_str()) {
            return Err(Error::not_supported(format!(
                "writer_config_defaults key {key:?} is not supported by memwal (its MemWAL is tuned by the server's flags); supported: {}",
                WRITER_CONFIG_KEYS.join(", ")
            )));
        }
    }
    let maintained = match spec.maintained_indexes {
        None => indexes.to_vec(),
        Some(names) => {
            if let Some(missing) = names.iter().find(|n| !indexes.contains(n)) {
                return Err(Error::invalid(format!(
                    "maintained index '{missing}' does not exist on this table; it has {}",
                    name_list(indexes)
                )));
            }
            names
        }
    };
    Ok(LsmWriteSpec {
        maintained_indexes: Some(maintained),
        ..spec
    })
}

fn routing_column(schema: &Schema, kind: &str, column: &str) -> Result<()> {
    if schema.column_with_name(column).is_none() {
        return Err(Error::invalid(format!(
            "{kind}_sharding: column '{column}' not found on the dataset"
        )));
    }
    Ok(())
}

fn name_list(names: &[String]) -> String {
    if names.is_empty() {
        return "no indexes".to_string();
    }
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    format!("[{}]", sorted.join(", "))
}

/// Where a merge insert goes on a table recording `spec` and `schema`:
/// unchanged without a spec or with `use_lsm(false)`; otherwise it must be
/// the upsert form on the primary key, and it is routed to the MemWAL.
pub fn route(m: MergeInsert, spec: Option<&LsmWriteSpec>, schema: &Schema) -> Result<MergeInsert> {
    if spec.is_none() || m.mem_wal == Some(false) {
        return Ok(m);
    }
    let pk = primary_key(schema).ok_or_else(|| {
        Error::internal("merge_insert: table has an LSM write spec but no unenforced primary key")
    })?;
    if m.on.len() != 1 || m.on[0] != pk {
        return Err(Error::invalid(format!(
            "merge_insert: `on` columns {:?} must match the table's unenforced primary key [{pk:?}] when an LSM write spec is set; call use_lsm(false) to use the standard merge_insert path",
            m.on
        )));
    }
    let upsert = m.when_matched_update_all
        && m.when_matched_update_all_filt.is_none()
        && m.when_not_matched_insert_all
        && !m.when_not_matched_by_source_delete
        && m.when_not_matched_by_source_delete_filt.is_none();
    if !upsert {
        return Err(Error::invalid(
            "merge_insert: when an LSM write spec is set, only the upsert form (when_matched_update_all without a filter + when_not_matched_insert_all, no by-source delete) is supported; call use_lsm(false) to use the standard merge_insert path",
        ));
    }
    let mut p = m.into_params();
    p.mem_wal = Some(true);
    p.validate()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::MergeInsertParams;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("f", DataType::Float32, false),
        ])
    }

    #[test]
    fn a_key_is_checked_and_recorded_once() {
        let s = schema();
        assert_eq!(primary_key(&s), None);
        let k = with_primary_key(&s, &["id".into()]).expect("key");
        assert_eq!(primary_key(&k), Some("id"));
        let again = with_primary_key(&k, &["id".into()]).expect_err("twice");
        assert!(again.to_string().contains("already set"), "{again}");
        for (cols, want) in [
            (vec![], "a column is required"),
            (vec!["id".into(), "name".into()], "compound"),
            (vec!["nope".into()], "not found"),
            (vec!["name".into()], "must not be nullable"),
            (vec!["f".into()], "not supported as a primary key"),
        ] {
            let e = with_primary_key(&s, &cols).expect_err("refused");
            assert!(e.to_string().contains(want), "{cols:?}: {e}");
        }
        assert!(check_key_kept(&k, &s).is_err(), "dropping the key");
        assert!(check_key_kept(&k, &k).is_ok());
    }

    #[test]
    fn specs_are_checked_and_round_trip_through_metadata() {
        let k = with_primary_key(&schema(), &["id".into()]).expect("key");
        let bucket = |n| LsmWriteSpec {
            sharding: Sharding::Bucket {
                column: "id".into(),
                num_buckets: n,
            },
            maintained_indexes: None,
            writer_config_defaults: BTreeMap::new(),
        };
        assert!(
            check_spec(bucket(4), &schema(), None, &[]).is_err(),
            "no key"
        );
        for n in [0, MAX_BUCKETS + 1] {
            assert!(check_spec(bucket(n), &k, None, &[]).is_err(), "{n} buckets");
        }
        let idx = vec!["id_idx".to_string()];
        let got = check_spec(bucket(4), &k, None, &idx).expect("spec");
        assert_eq!(got.maintained_indexes, Some(idx.clone()));
        assert!(
            check_spec(bucket(4), &k, Some(&got), &idx).is_err(),
            "already set"
        );
        let mut bad = bucket(4);
        bad.maintained_indexes = Some(vec!["nope".into()]);
        assert!(check_spec(bad, &k, None, &idx).is_err());
        let mut cfg = bucket(4);
        cfg.writer_config_defaults
            .insert("max_memtable_rows".into(), "10".into());
        assert!(
            check_spec(cfg, &k, None, &idx).is_err(),
            "unknown config key"
        );
        let meta: BTreeMap<_, _> = [spec_entry(Some(&got)).expect("entry")].into();
        assert_eq!(recorded_spec(&meta).expect("read"), Some(got));
        let gone: BTreeMap<_, _> = [spec_entry(None).expect("entry")].into();
        assert_eq!(recorded_spec(&gone).expect("read"), None);
    }

    #[test]
    fn a_spec_routes_upserts_and_refuses_other_merges() {
        let k = with_primary_key(&schema(), &["id".into()]).expect("key");
        let spec = LsmWriteSpec {
            sharding: Sharding::Unsharded,
            maintained_indexes: Some(vec![]),
            writer_config_defaults: BTreeMap::new(),
        };
        let merge = |on: &str, upsert: bool, lsm: Option<bool>| {
            let mut p = MergeInsertParams::new(vec![on.into()]);
            p.when_matched_update_all = upsert;
            p.when_not_matched_insert_all = true;
            p.mem_wal = lsm;
            p.validate().expect("valid")
        };
        let r = route(merge("id", true, None), Some(&spec), &k).expect("routed");
        assert_eq!(r.mem_wal, Some(true));
        assert_eq!(
            route(merge("id", true, None), None, &k)
                .expect("plain")
                .mem_wal,
            None
        );
        assert!(route(merge("id", false, None), Some(&spec), &k).is_err());
        assert!(route(merge("name", true, None), Some(&spec), &k).is_err());
        let off = route(merge("id", false, Some(false)), Some(&spec), &k).expect("off");
        assert_eq!(off.mem_wal, Some(false));
    }
}
