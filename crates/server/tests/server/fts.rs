//! Full-text search on a served table over HTTP: an FTS index built from an official client's
//! `create_index` body, rows upserted through the MemWAL found by the next query (and the text
//! they superseded not found), deletes honoured, both `full_text_query` shapes, the answer's
//! layout.

use std::sync::Arc;

use arrow::array::{AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::Int64Type;
use arrow_schema::{DataType, Field, Schema};
use memwal_core::ipc;
use serde_json::{json, Value};

use crate::support::*;

const STREAM: &str = "application/vnd.apache.arrow.stream";
const MEMWAL: &[(&str, &str)] = &[("x-lancedb-mem-wal-enabled", "true"), ("x-use-wal", "true")];

fn rows(rows: &[(i64, &str)]) -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        ],
    )
    .expect("batch");
    ipc::encode_stream(&schema, &[b]).expect("ipc")
}

fn structured(terms: &str) -> Value {
    json!({"vector": [], "k": 10, "prefilter": true, "columns": ["id"], "with_row_id": true,
        "full_text_query": {"query": {"match": {"column": "name", "terms": terms, "boost": 1.0,
            "fuzziness": 0, "max_expansions": 50, "operator": "Or", "prefix_length": 0}}}})
}

async fn ids(c: &Client, body: Value) -> Vec<i64> {
    let (status, batches, text) = c.query_batches("t", body).await;
    assert_eq!(status, 200, "{text}");
    let mut out = Vec::new();
    for b in &batches {
        let names: Vec<&str> = b
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, vec!["id", "_score", "_rowid"]);
        out.extend(
            b.column(0)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied(),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memwal_rows_are_found_by_the_next_full_text_query() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    let start = rows(&[(1, "lazy dog"), (2, "lazy cat"), (3, "river bank")]);
    let (s, b) = c.post("/v1/table/t/create/", STREAM, start, &[]).await;
    assert_eq!(s, 200, "{b}");
    // As @lancedb/lancedb 0.39 sends it: every parameter, some we do not know.
    let index = json!({"column": "name", "index_type": "FTS", "with_position": true,
        "base_tokenizer": "simple", "language": "English", "max_token_length": 40, "lower_case": true,
        "stem": true, "remove_stop_words": true, "ascii_folding": true, "custom_stop_words": null,
        "min_ngram_length": 3, "max_ngram_length": 3, "prefix_only": false, "block_size": 128});
    let (s, b) = c
        .post(
            "/v1/table/t/create_index/",
            "application/json",
            index.to_string().into_bytes(),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let merge = "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true";
    let upsert = rows(&[(2, "quick brown fox"), (9, "brown cow")]);
    let (s, b) = c.post(merge, STREAM, upsert, MEMWAL).await;
    assert_eq!(s, 200, "{b}");
    let mut brown = ids(&c, structured("brown")).await;
    brown.sort();
    assert_eq!(brown, vec![2, 9], "buffered rows found at once");
    assert_eq!(
        ids(&c, structured("lazy")).await,
        vec![1],
        "the superseded text is not"
    );
    let legacy = json!({"vector": [], "k": 10, "columns": ["id"], "with_row_id": true,
        "full_text_query": {"columns": ["name"], "query": "\"quick brown\""}});
    assert_eq!(
        ids(&c, legacy).await,
        vec![2],
        "a quoted legacy query is a phrase"
    );
    let (s, b) = c
        .post(
            "/v1/table/t/delete/",
            "application/json",
            json!({"predicate": "id = 9"}).to_string().into_bytes(),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&c, structured("cow")).await, Vec::<i64>::new());
    let (s, _, text) = c.query_batches("t", json!({"vector": [], "full_text_query": {"query": {"match": {"column": "name", "terms": "a", "fuzziness": 100}}}})).await;
    assert_eq!(s, 400, "{text}");
    assert!(text.contains("fuzziness"), "{text}");
    h.close().await;
}
