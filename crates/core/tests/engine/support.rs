use std::sync::Arc;

use arrow::array::{Array, AsArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{Float64Type, Int64Type};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_core::{
    CreateOptions, Data, MergeInsert, MergeInsertParams, NativeDatabase, NativeTable, QueryRequest,
};

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("age", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
    ]))
}

pub fn rows(ids: &[i64], ages: &[Option<i64>], names: &[Option<&str>]) -> Data {
    let b = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.to_vec())),
            Arc::new(Int64Array::from(ages.to_vec())),
            Arc::new(StringArray::from(names.to_vec())),
        ],
    )
    .expect("batch");
    Data::new(schema(), vec![b])
}

/// Rows id -> age (id, age) with name "n{id}".
pub fn people(pairs: &[(i64, i64)]) -> Data {
    let ids: Vec<i64> = pairs.iter().map(|p| p.0).collect();
    let ages: Vec<Option<i64>> = pairs.iter().map(|p| Some(p.1)).collect();
    let names: Vec<String> = pairs.iter().map(|p| format!("n{}", p.0)).collect();
    let names: Vec<Option<&str>> = names.iter().map(|s| Some(s.as_str())).collect();
    rows(&ids, &ages, &names)
}

/// The S3 endpoint the tests use (moto_server on 127.0.0.1): `MEMWAL_TEST_S3_ENDPOINT` when
/// scripts/test.sh started one, otherwise one started here (once per test binary, stopped
/// when it exits) by scripts/moto.sh. A missing moto fails the test: no silent skip.
pub fn s3_endpoint() -> String {
    static EP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EP.get_or_init(|| {
        if let Ok(ep) = std::env::var("MEMWAL_TEST_S3_ENDPOINT") {
            return ep;
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/moto.sh");
        let out = std::process::Command::new("bash")
            .args([script, "0", &std::process::id().to_string()])
            .output()
            .expect("run scripts/moto.sh");
        assert!(
            out.status.success(),
            "moto.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
    .clone()
}

/// Options that reach the test S3 server.
pub fn s3_options() -> memwal_core::storage::StorageOptions {
    [
        ("aws_endpoint", s3_endpoint()),
        ("aws_allow_http", "true".into()),
        ("aws_access_key_id", "testing".into()),
        ("aws_secret_access_key", "testing".into()),
        ("aws_region", "us-east-1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A fresh database URI in the test bucket.
pub fn s3_uri(name: &str) -> String {
    format!("s3://memwal-test/{name}-{}", uuid_like())
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{t}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Opens the database of a test folder: the folder, or with `MEMWAL_ENGINE_ON_S3=1` (the
/// second pass of scripts/test.sh) a prefix of the test bucket named after the folder, so that a
/// test reopening its folder reopens the same tables.
pub fn open_db(path: &str) -> memwal_core::Result<NativeDatabase> {
    if on_s3() {
        let prefix = path.trim_start_matches('/');
        NativeDatabase::open_with(&format!("s3://memwal-test/{prefix}"), &s3_options())
    } else {
        NativeDatabase::open(path)
    }
}

/// The storage `open_db(path)` opens (the folder, or its prefix of the test bucket).
pub fn open_storage(path: &str) -> std::sync::Arc<dyn memwal_core::storage::Storage> {
    if on_s3() {
        let prefix = path.trim_start_matches('/');
        memwal_core::storage::open_uri(&format!("s3://memwal-test/{prefix}"), &s3_options())
            .expect("s3 storage")
    } else {
        std::sync::Arc::new(memwal_core::storage::LocalStorage::new(path).expect("local storage"))
    }
}

/// Whether this pass runs the engine suite on S3 (`MEMWAL_ENGINE_ON_S3=1`).
pub fn on_s3() -> bool {
    std::env::var("MEMWAL_ENGINE_ON_S3").is_ok_and(|v| v == "1")
}

pub fn new_table(dir: &std::path::Path, data: Data) -> (NativeDatabase, NativeTable) {
    let db = crate::support::open_db(dir.to_str().expect("path")).expect("open db");
    let t = db
        .create_table_sync("t", data, CreateOptions::default())
        .expect("create");
    (db, t)
}

/// As [`new_table`], always in the folder: for tests that read or damage its files.
pub fn new_local_table(dir: &std::path::Path, data: Data) -> (NativeDatabase, NativeTable) {
    let db = NativeDatabase::open(dir.to_str().expect("path")).expect("open db");
    let t = db
        .create_table_sync("t", data, CreateOptions::default())
        .expect("create");
    (db, t)
}

/// All rows as (id, age, name) sorted by id.
pub fn dump(t: &NativeTable) -> Vec<(i64, Option<i64>, Option<String>)> {
    let batches = t.query_sync(&QueryRequest::default()).expect("query");
    let mut out = Vec::new();
    for b in batches {
        let id = b
            .column_by_name("id")
            .expect("id")
            .as_primitive::<Int64Type>()
            .clone();
        let age = b
            .column_by_name("age")
            .expect("age")
            .as_primitive::<Int64Type>()
            .clone();
        let name = b
            .column_by_name("name")
            .expect("name")
            .as_string::<i32>()
            .clone();
        for i in 0..b.num_rows() {
            out.push((
                id.value(i),
                age.is_valid(i).then(|| age.value(i)),
                name.is_valid(i).then(|| name.value(i).to_string()),
            ));
        }
    }
    out.sort_by_key(|r| r.0);
    out
}

pub fn ages(t: &NativeTable) -> Vec<(i64, Option<i64>)> {
    dump(t).into_iter().map(|(i, a, _)| (i, a)).collect()
}

#[allow(dead_code)]
pub fn f64_col(b: &RecordBatch, name: &str) -> Vec<f64> {
    b.column_by_name(name)
        .expect("col")
        .as_primitive::<Float64Type>()
        .values()
        .to_vec()
}

#[allow(dead_code)]
pub fn float_batch(ids: Vec<i64>, vals: Vec<f64>) -> RecordBatch {
    let s = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Float64, true),
    ]));
    RecordBatch::try_new(
        s,
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(Float64Array::from(vals)),
        ],
    )
    .expect("batch")
}

/// `p` validated, for a test whose clause set is meant to be valid.
pub fn checked(p: &MergeInsertParams) -> MergeInsert {
    p.clone().validate().expect("a valid clause set")
}
