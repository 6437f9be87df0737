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

/// The endpoint a test emulator serves: `var` when scripts/test.sh started one, otherwise one
/// started here by `script` (once per test binary, stopped when it exits). A missing emulator
/// fails the test: no silent skip.
fn emulator(var: &str, script: &str) -> String {
    if let Ok(ep) = std::env::var(var) {
        return ep;
    }
    let out = std::process::Command::new("bash")
        .args([script, "0", &std::process::id().to_string()])
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The S3 endpoint the tests use (moto_server on 127.0.0.1, `MEMWAL_TEST_S3_ENDPOINT` or
/// started by scripts/moto.sh).
pub fn s3_endpoint() -> String {
    static EP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EP.get_or_init(|| {
        emulator(
            "MEMWAL_TEST_S3_ENDPOINT",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/moto.sh"),
        )
    })
    .clone()
}

/// The Azure blob endpoint the tests use (Azurite on 127.0.0.1, `MEMWAL_TEST_AZURE_ENDPOINT`
/// or started by scripts/azurite.sh; its container `memwal-test`).
pub fn azure_endpoint() -> String {
    static EP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EP.get_or_init(|| {
        emulator(
            "MEMWAL_TEST_AZURE_ENDPOINT",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/azurite.sh"),
        )
    })
    .clone()
}

/// Options that reach the test Azure server: the emulator's published development account.
pub fn azure_options() -> memwal_core::storage::StorageOptions {
    [
        ("azure_storage_endpoint", azure_endpoint()),
        ("azure_allow_http", "true".into()),
        ("azure_storage_account_name", "devstoreaccount1".into()),
        (
            "azure_storage_account_key",
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
                .into(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
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

/// Whether this is the Azure pass (`MEMWAL_ENGINE_ON_AZURE=1`).
pub fn on_azure() -> bool {
    std::env::var("MEMWAL_ENGINE_ON_AZURE").is_ok_and(|v| v == "1")
}

/// A fresh database URI and its options on the object store of the racing and upkeep tests:
/// Azure (Azurite) on the Azure pass, S3 (moto) otherwise.
pub fn shared_store(name: &str) -> (String, memwal_core::storage::StorageOptions) {
    if on_azure() {
        (
            format!("az://memwal-test/{name}-{}", uuid_like()),
            azure_options(),
        )
    } else {
        (s3_uri(name), s3_options())
    }
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

/// The object store this pass puts every table on, as (URI of the test bucket or container,
/// options): S3 with `MEMWAL_ENGINE_ON_S3=1`, Azure with `MEMWAL_ENGINE_ON_AZURE=1` (the later
/// passes of scripts/test.sh); `None`: the local folder.
fn pass_store() -> Option<(&'static str, memwal_core::storage::StorageOptions)> {
    let set = |v: &str| std::env::var(v).is_ok_and(|v| v == "1");
    if set("MEMWAL_ENGINE_ON_S3") {
        Some(("s3://memwal-test", s3_options()))
    } else if set("MEMWAL_ENGINE_ON_AZURE") {
        Some(("az://memwal-test", azure_options()))
    } else {
        None
    }
}

/// What a child process of this pass needs in its environment to reach the same object store
/// server (none on the local pass).
pub fn pass_env() -> Vec<(&'static str, String)> {
    let set = |v: &str| std::env::var(v).is_ok_and(|v| v == "1");
    if set("MEMWAL_ENGINE_ON_S3") {
        vec![("MEMWAL_TEST_S3_ENDPOINT", s3_endpoint())]
    } else if set("MEMWAL_ENGINE_ON_AZURE") {
        vec![("MEMWAL_TEST_AZURE_ENDPOINT", azure_endpoint())]
    } else {
        Vec::new()
    }
}

/// Opens the database of a test folder: the folder, or on an object-store pass a prefix of the
/// test bucket named after the folder, so that a test reopening its folder reopens the same tables.
pub fn open_db(path: &str) -> memwal_core::Result<NativeDatabase> {
    match pass_store() {
        Some((root, options)) => {
            let prefix = path.trim_start_matches('/');
            NativeDatabase::open_with(&format!("{root}/{prefix}"), &options)
        }
        None => NativeDatabase::open(path),
    }
}

/// The storage `open_db(path)` opens (the folder, or its prefix of the test bucket).
pub fn open_storage(path: &str) -> std::sync::Arc<dyn memwal_core::storage::Storage> {
    match pass_store() {
        Some((root, options)) => {
            let prefix = path.trim_start_matches('/');
            memwal_core::storage::open_uri(&format!("{root}/{prefix}"), &options)
                .expect("object storage")
        }
        None => std::sync::Arc::new(
            memwal_core::storage::LocalStorage::new(path).expect("local storage"),
        ),
    }
}

/// Whether this pass puts the engine suite's tables on an object store (S3 or Azure).
pub fn on_object_store() -> bool {
    pass_store().is_some()
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

/// The index files under a local table folder's `_indices/`: each index
/// write is one folder there (`_indices/{uuid}/`), as Lance lays them out.
pub fn index_files(table_dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(folders) = std::fs::read_dir(table_dir.join("_indices")) else {
        return out;
    };
    for f in folders.filter_map(|e| e.ok()) {
        let inside = std::fs::read_dir(f.path()).expect("an index folder");
        out.extend(inside.filter_map(|e| e.ok()).map(|e| e.path()));
    }
    out.sort();
    out
}
