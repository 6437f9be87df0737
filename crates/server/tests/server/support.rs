use std::sync::Arc;

use arrow::array::{AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::Int64Type;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_core::ipc;
use serde_json::Value;

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
    ]))
}

pub fn ipc_rows(rows: &[(i64, i64)]) -> Vec<u8> {
    let b = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| format!("s{}", r.0)).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("batch");
    ipc::encode_stream(&schema(), &[b]).expect("ipc")
}

pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    pub key: String,
}

impl Client {
    pub fn new(base: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: base.to_string(),
            key: "k".into(),
        }
    }
    pub async fn post(
        &self,
        path: &str,
        ct: &str,
        body: Vec<u8>,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let mut r = self
            .http
            .post(format!("{}{path}", self.base))
            .header("x-api-key", &self.key)
            .header("content-type", ct)
            .body(body);
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        let resp = r.send().await.expect("send");
        let status = resp.status().as_u16();
        (status, resp.text().await.expect("text"))
    }
    pub async fn create(&self, name: &str, rows: &[(i64, i64)]) {
        let (s, b) = self
            .post(
                &format!("/v1/table/{name}/create/"),
                "application/vnd.apache.arrow.stream",
                ipc_rows(rows),
                &[],
            )
            .await;
        assert_eq!(s, 200, "{b}");
    }
    pub async fn upsert(&self, name: &str, rows: &[(i64, i64)], memwal: bool) -> Value {
        let path = format!("/v1/table/{name}/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true&when_not_matched_by_source_delete=false");
        let headers: &[(&str, &str)] = if memwal {
            &[("x-lancedb-mem-wal-enabled", "true"), ("x-use-wal", "true")]
        } else {
            &[]
        };
        let (s, b) = self
            .post(
                &path,
                "application/vnd.apache.arrow.stream",
                ipc_rows(rows),
                headers,
            )
            .await;
        assert_eq!(s, 200, "{b}");
        serde_json::from_str(&b).expect("json")
    }
    pub async fn count(&self, name: &str, predicate: Option<&str>) -> u64 {
        let body = match predicate {
            Some(p) => serde_json::json!({ "predicate": p }).to_string(),
            None => "{}".into(),
        };
        let (s, b) = self
            .post(
                &format!("/v1/table/{name}/count_rows/"),
                "application/json",
                body.into_bytes(),
                &[],
            )
            .await;
        assert_eq!(s, 200, "{b}");
        b.trim().parse().expect("number")
    }
    /// The status and, on 200, the Arrow batches of a `query/` with `body`.
    pub async fn query_batches(
        &self,
        name: &str,
        body: serde_json::Value,
    ) -> (u16, Vec<arrow::array::RecordBatch>, String) {
        let resp = self
            .http
            .post(format!("{}/v1/table/{name}/query/", self.base))
            .header("x-api-key", &self.key)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("send");
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.expect("bytes");
        if status != 200 {
            return (
                status,
                Vec::new(),
                String::from_utf8_lossy(&bytes).into_owned(),
            );
        }
        (
            status,
            ipc::decode(&bytes).expect("arrow").batches,
            String::new(),
        )
    }

    /// id -> v of every row.
    pub async fn rows(&self, name: &str, filter: Option<&str>) -> Vec<(i64, i64)> {
        let body = serde_json::json!({ "filter": filter }).to_string();
        let resp = self
            .http
            .post(format!("{}/v1/table/{name}/query/", self.base))
            .header("x-api-key", &self.key)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status().as_u16(), 200);
        let bytes = resp.bytes().await.expect("bytes");
        let data = ipc::decode(&bytes).expect("arrow");
        let mut out = Vec::new();
        for b in data.batches {
            let col = |n: &str| b.column_by_name(n).expect("column").clone();
            let (id, v) = (col("id"), col("v"));
            let (id, v) = (
                id.as_primitive::<Int64Type>(),
                v.as_primitive::<Int64Type>(),
            );
            for i in 0..b.num_rows() {
                out.push((id.value(i), v.value(i)));
            }
        }
        out.sort();
        out
    }
}

pub fn config(dir: &std::path::Path) -> memwal_server::ServerConfig {
    let mut c = memwal_server::ServerConfig::new(dir);
    c.api_key = Some("k".into());
    c
}

/// The S3 test server (moto_server on 127.0.0.1): `MEMWAL_TEST_S3_ENDPOINT` when scripts/test.sh
/// started one, otherwise started here by scripts/moto.sh once per test binary (stopped when it
/// exits). A missing moto fails the test: no silent skip.
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

/// The environment a server needs to reach the S3 test server (as an operator gives it:
/// `MEMWAL_STORAGE_*` variables, the secret never on the command line).
pub fn s3_env() -> Vec<(String, String)> {
    [
        ("MEMWAL_STORAGE_AWS_ENDPOINT", s3_endpoint()),
        ("MEMWAL_STORAGE_AWS_ALLOW_HTTP", "true".into()),
        ("MEMWAL_STORAGE_AWS_REGION", "us-east-1".into()),
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Storage options that reach the S3 test server (for a server started in
/// this process).
pub fn s3_options() -> memwal_core::storage::StorageOptions {
    [
        ("aws_endpoint", s3_endpoint()),
        ("allow_http", "true".into()),
        ("aws_region", "us-east-1".into()),
        ("aws_access_key_id", "testing".into()),
        ("aws_secret_access_key", "testing".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A fresh prefix in the test bucket.
pub fn s3_uri(name: &str) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("s3://memwal-test/{name}-{}-{t}", std::process::id())
}
