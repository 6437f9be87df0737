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
    // A large edit distance is accepted, as Lance accepts it (its cost per term does not grow).
    let (s, _, text) = c.query_batches("t", json!({"vector": [], "full_text_query": {"query": {"match": {"column": "name", "terms": "a", "fuzziness": 100}}}})).await;
    assert_eq!(s, 200, "{text}");
    h.close().await;
}

async fn served_with_index(
    dir: &std::path::Path,
    start: &[(i64, &str)],
) -> (memwal_server::ServerHandle, Client) {
    let h = memwal_server::start(config(dir)).await.expect("start");
    let c = Client::new(&h.url());
    let (s, b) = c
        .post("/v1/table/t/create/", STREAM, rows(start), &[])
        .await;
    assert_eq!(s, 200, "{b}");
    let index = json!({"column": "name", "index_type": "FTS", "with_position": true});
    let (s, b) = c
        .post(
            "/v1/table/t/create_index/",
            "application/json",
            index.to_string().into_bytes(),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    (h, c)
}

/// `(id, score)` of a full-text `query/` body, in the answer's order.
async fn scored(c: &Client, body: Value) -> Vec<(i64, f32)> {
    let (status, batches, text) = c.query_batches("t", body).await;
    assert_eq!(status, 200, "{text}");
    let mut out = Vec::new();
    for b in &batches {
        let ids = b.column(0).as_primitive::<Int64Type>();
        let scores = b
            .column_by_name("_score")
            .expect("_score")
            .as_primitive::<arrow::datatypes::Float32Type>();
        out.extend(
            ids.values()
                .iter()
                .copied()
                .zip(scores.values().iter().copied()),
        );
    }
    out
}

fn match_body(terms: &str, extra: Value) -> Value {
    let mut b = json!({"vector": [], "k": 10, "columns": ["id"],
        "full_text_query": {"query": {"match": {"column": "name", "terms": terms}}}});
    if let (Some(b), Some(e)) = (b.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_search_skips_buffered_rows_and_a_postfilter_filters_the_top_rows() {
    let dir = tempfile::tempdir().expect("tmp");
    let start: Vec<(i64, String)> = (1..=12)
        .map(|i| (i, format!("brown {}", "fox ".repeat(i as usize % 4))))
        .collect();
    let start: Vec<(i64, &str)> = start.iter().map(|(i, s)| (*i, s.as_str())).collect();
    let (h, c) = served_with_index(dir.path(), &start).await;
    let merge = "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true";
    // Buffered in the MemWAL: a new row, and row 2's text replaced.
    let (s, b) = c
        .post(
            merge,
            STREAM,
            rows(&[(20, "brown fox fox fox"), (2, "grey owl")]),
            MEMWAL,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let every = scored(&c, match_body("brown fox", json!({"k": 100}))).await;
    let fast = scored(
        &c,
        match_body("brown fox", json!({"k": 100, "fast_search": true})),
    )
    .await;
    let ids = |r: &[(i64, f32)]| {
        let mut v: Vec<i64> = r.iter().map(|x| x.0).collect();
        v.sort();
        v
    };
    assert!(
        ids(&every).contains(&20),
        "the buffered row is found without fast_search"
    );
    let indexed: Vec<i64> = (1..=12).filter(|i| *i != 2).collect();
    assert_eq!(
        ids(&fast),
        indexed,
        "fast_search: the indexed live rows alone"
    );
    // Statistics of the indexed rows alone: the same scores as a table holding only those rows.
    let dir2 = tempfile::tempdir().expect("tmp");
    let alone: Vec<(i64, &str)> = start.iter().copied().filter(|r| r.0 != 2).collect();
    let (h2, c2) = served_with_index(dir2.path(), &alone).await;
    let want = scored(&c2, match_body("brown fox", json!({"k": 100}))).await;
    assert_eq!(fast.len(), want.len());
    for (g, w) in fast.iter().zip(&want) {
        assert!(
            (g.1 - w.1).abs() <= 1e-5 * w.1.abs(),
            "{fast:?} vs {want:?}"
        );
    }
    h2.close().await;
    // A postfilter keeps what passes of the top 4 (the buffered row 20 among them): fewer rows
    // than the prefilter's, and each of them in the unfiltered top 4.
    let top4 = scored(&c, match_body("fox", json!({"k": 4}))).await;
    let filter = json!({"k": 4, "filter": "id % 2 = 0"});
    let pre = scored(&c, match_body("fox", filter.clone())).await;
    let mut post_body = filter;
    post_body["prefilter"] = json!(false);
    let post = scored(&c, match_body("fox", post_body)).await;
    let want: Vec<(i64, f32)> = top4.iter().copied().filter(|r| r.0 % 2 == 0).collect();
    assert_eq!(post, want);
    assert!(post.len() < pre.len(), "{post:?} vs {pre:?}");
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_full_text_inputs_get_a_clear_error_or_a_correct_answer() {
    let dir = tempfile::tempdir().expect("tmp");
    // A 1 MB document: 200k words, one of them found nowhere else, then a phrase at its end.
    let mut big = "lorem ipsum dolor sit amet ".repeat(40_000);
    big.push_str("zebra crossing");
    assert!(big.len() > 1 << 20);
    let (h, c) = served_with_index(
        dir.path(),
        &[(1, "quick brown fox"), (2, big.as_str()), (3, "the a of")],
    )
    .await;
    let id_list = |r: Vec<(i64, f32)>| r.into_iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(
        id_list(scored(&c, match_body("zebra", json!({}))).await),
        vec![2]
    );
    let phrase = json!({"vector": [], "columns": ["id"],
        "full_text_query": {"query": {"phrase": {"column": "name", "terms": "zebra crossing"}}}});
    assert_eq!(id_list(scored(&c, phrase).await), vec![2]);
    // The same document through the MemWAL: buffered, tokenized per query, found.
    let merge = "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true";
    let big2 = big.replace("zebra", "okapi");
    let (s, b) = c
        .post(merge, STREAM, rows(&[(4, big2.as_str())]), MEMWAL)
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        id_list(scored(&c, match_body("okapi", json!({}))).await),
        vec![4]
    );
    // Empty text, only stop words, only spaces: no terms, no rows.
    for terms in ["", "the a of and", "   ", "\u{0}"] {
        assert_eq!(
            scored(&c, match_body(terms, json!({}))).await,
            vec![],
            "{terms:?}"
        );
    }
    // NUL inside the text splits words, as any other separator.
    assert_eq!(
        scored(&c, match_body("quick\u{0}fox", json!({}))).await,
        scored(&c, match_body("quick fox", json!({}))).await
    );
    // 10k terms: refused, naming the limit.
    let many: String = (0..10_000).map(|i| format!("w{i} ")).collect();
    let (s, _, text) = c.query_batches("t", match_body(&many, json!({}))).await;
    assert_eq!(s, 400, "{text}");
    assert!(text.contains("terms"), "{text}");
    // 10k repeats of one word: one distinct term (a correct answer), or the same refusal.
    let (s, _, text) = c
        .query_batches("t", match_body(&"fox ".repeat(10_000), json!({})))
        .await;
    assert!(s == 400 && text.contains("terms"), "{s} {text}");
    // A negative fuzziness, huge expansions and slop: refused by name.
    for (q, needle) in [
        (
            json!({"match": {"column": "name", "terms": "fox", "fuzziness": -1}}),
            "fuzziness",
        ),
        (
            json!({"match": {"column": "name", "terms": "fox", "max_expansions": 1u64 << 40}}),
            "max_expansions",
        ),
        (
            json!({"phrase": {"column": "name", "terms": "fox", "slop": 1u64 << 31}}),
            "slop",
        ),
        (json!({"match": {"column": "name", "terms": 7}}), "terms"),
    ] {
        let body = json!({"vector": [], "full_text_query": {"query": q}});
        let (s, _, text) = c.query_batches("t", body).await;
        assert_eq!(s, 400, "{q}: {text}");
        assert!(text.contains(needle), "{q}: {text}");
    }
    // Invalid UTF-8 in a query body: a 400 naming the JSON, not a crash.
    let mut raw = br#"{"vector": [], "full_text_query": {"query": "fox "#.to_vec();
    raw.extend_from_slice(&[0xff, 0xfe]);
    raw.extend_from_slice(br#""}}"#);
    let (s, text) = c
        .post("/v1/table/t/query/", "application/json", raw, &[])
        .await;
    assert_eq!(s, 400, "{text}");
    // Invalid UTF-8 inside a string column of an upsert: refused before it is logged.
    let mut ipc = rows(&[(5, "quick zzzq")]);
    let at = ipc.windows(4).position(|w| w == b"zzzq").expect("marker");
    ipc[at + 3] = 0xff;
    let (s, text) = c.post(merge, STREAM, ipc, MEMWAL).await;
    assert_eq!(s, 400, "{text}");
    assert_eq!(
        id_list(scored(&c, match_body("quick", json!({}))).await),
        vec![1]
    );
    h.close().await;
}

/// Buffered rows are tokenized by the first full-text query of a view and reused by the next
/// ones: repeated queries answer the same rows and scores, another query of the same view sees
/// the same rows, and the view after a write sees the new text and not the text it superseded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_views_buffered_rows_are_tokenized_once_and_never_outlive_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let (h, c) = served_with_index(dir.path(), &[(1, "red fox"), (2, "blue whale")]).await;
    let merge = "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true";
    let buffered: Vec<(i64, String)> = (10..60)
        .map(|i| {
            (
                i,
                format!("red {} word{}", if i % 3 == 0 { "fox" } else { "hen" }, i),
            )
        })
        .collect();
    let upsert: Vec<(i64, &str)> = buffered.iter().map(|(i, t)| (*i, t.as_str())).collect();
    let (s, b) = c.post(merge, STREAM, rows(&upsert), MEMWAL).await;
    assert_eq!(s, 200, "{b}");
    let first = scored(&c, match_body("fox", json!({"k": 100}))).await;
    assert_eq!(first.len(), 1 + (10..60).filter(|i| i % 3 == 0).count());
    for _ in 0..3 {
        assert_eq!(
            scored(&c, match_body("fox", json!({"k": 100}))).await,
            first
        );
    }
    let hens = scored(&c, match_body("hen", json!({"k": 100}))).await;
    assert_eq!(hens.len(), (10..60).filter(|i| i % 3 != 0).count());
    // Flushed, the same rows are fragments' rows: the same ids and scores (statistics are global).
    let (s, b) = c
        .post(
            "/v1/table/t/flush_lsm/",
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert!(s < 300, "{s} {b}");
    let by_id = |mut v: Vec<(i64, f32)>| {
        v.sort_by_key(|r| r.0);
        v
    };
    let flushed = by_id(scored(&c, match_body("fox", json!({"k": 100}))).await);
    for ((a, x), (b, y)) in by_id(first.clone()).iter().zip(&flushed) {
        assert_eq!(a, b);
        assert!(
            (x - y).abs() <= 1e-5 * x.abs().max(1.0),
            "row {a}: {x} buffered, {y} flushed"
        );
    }
    assert_eq!(flushed.len(), first.len());
    let (s, b) = c
        .post(
            merge,
            STREAM,
            rows(&[(12, "grey heron"), (1, "grey goose")]),
            MEMWAL,
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let foxes: Vec<i64> = scored(&c, match_body("fox", json!({"k": 100})))
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert!(
        !foxes.contains(&12) && !foxes.contains(&1),
        "superseded text found: {foxes:?}"
    );
    assert_eq!(foxes.len(), first.len() - 2);
    let grey: Vec<i64> = scored(&c, match_body("grey", json!({"k": 100})))
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(grey.len(), 2, "the new text is found: {grey:?}");
    h.close().await;
}
