//! Fuzz target for the HTTP routes: random routes, query parameters and
//! bodies (garbage, mutated Arrow IPC, random JSON) against one live server
//! on 127.0.0.1. No request may get a 5xx (every bad input is the client's
//! 4xx, or 501 for what is not implemented), and the server keeps serving
//! the table's rows unchanged by anything refused. A fixed number of cases
//! in CI; raise `PROPTEST_CASES` to run longer.

use proptest::prelude::*;

use crate::support::*;

fn route() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "create/",
        "drop/",
        "describe/",
        "count_rows/",
        "insert/",
        "merge_insert/",
        "delete/",
        "update/",
        "query/",
        "version/list/",
        "optimize/",
        "flush/",
        "create_index/",
        "restore/",
        "stats/",
        "get_lsm_stats/",
        "flush_lsm/",
        "update_config/",
        "config/",
        "tags/create/",
        "tags/list/",
        "add_columns/",
        "alter_columns/",
        "drop_columns/",
        "rename/",
        "explain_plan/",
        "analyze_plan/",
        "nope/",
    ])
    .prop_map(str::to_string)
}

fn params() -> impl Strategy<Value = String> {
    let kv = (
        prop::sample::select(vec![
            "on",
            "mode",
            "when_matched_update_all",
            "when_not_matched_insert_all",
            "when_matched_update_all_filt",
            "when_not_matched_by_source_delete",
            "use_index",
            "use_lsm",
            "x",
        ]),
        prop::sample::select(vec![
            "id",
            "true",
            "false",
            "overwrite",
            "append",
            "id > 1",
            "%ff",
            "",
            "maybe",
        ]),
    );
    prop::collection::vec(kv, 0..5).prop_map(|v| {
        v.iter()
            .map(|(k, v)| format!("{k}={}", v.replace(' ', "+")))
            .collect::<Vec<_>>()
            .join("&")
    })
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-z =<>0-9']{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "predicate",
                        "filter",
                        "k",
                        "limit",
                        "offset",
                        "columns",
                        "vector",
                        "version",
                        "updates",
                        "prefilter",
                        "with_row_id",
                        "distance_type",
                        "vector_column",
                        "lower_bound",
                        "upper_bound",
                        "nprobes",
                        "ef",
                        "refine_factor",
                        "fast_search",
                        "upsert",
                        "delete",
                        "zzz",
                    ]),
                    inner
                ),
                0..4
            )
            .prop_map(|kv| {
                let mut m = serde_json::Map::new();
                for (k, v) in kv {
                    m.insert(k.to_string(), v);
                }
                json!(m)
            }),
        ]
    })
}

fn body() -> impl Strategy<Value = (String, Vec<u8>)> {
    let arrow = "application/vnd.apache.arrow.stream".to_string();
    prop_oneof![
        json_value().prop_map(|v| ("application/json".to_string(), v.to_string().into_bytes())),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| ("application/json".to_string(), b)),
        (
            prop::collection::vec((any::<usize>(), 1u8..=255), 0..3),
            Just(arrow)
        )
            .prop_map(|(flips, ct)| {
                let mut b = ipc_rows(&[(7, 7), (8, 8)]);
                let n = b.len();
                for (i, x) in flips {
                    b[i % n] ^= x;
                }
                (ct, b)
            }),
    ]
}

#[test]
fn http_routes_never_answer_5xx() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tmp");
    let h = rt
        .block_on(memwal_server::start(config(dir.path())))
        .expect("start");
    let c = Client::new(&h.url());
    rt.block_on(c.create("keep", &[(1, 1), (2, 2)]));
    rt.block_on(c.create("t", &[(1, 1)]));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(400),
        ..ProptestConfig::default()
    });
    let result = runner.run(
        &(route(), params(), body()),
        |(route, params, (ct, body))| {
            let path = format!("/v1/table/t/{route}?{params}");
            let (status, text) = rt.block_on(c.post(&path, &ct, body, &[]));
            prop_assert!(
                status < 500 || status == 501 || status == 503,
                "{path}: {status} {text}"
            );
            if route == "drop/" && status == 200 || route == "create/" && status != 200 {
                // Keep the table around for the next cases.
                let _ = rt.block_on(c.post(
                    "/v1/table/t/create/?mode=overwrite",
                    "application/vnd.apache.arrow.stream",
                    ipc_rows(&[(1, 1)]),
                    &[],
                ));
            }
            Ok(())
        },
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    // Still serving, and the untouched table is as it was.
    assert_eq!(rt.block_on(c.rows("keep", None)), vec![(1, 1), (2, 2)]);
    rt.block_on(h.close());
}

/// A random FTS query node: known and unknown kinds, fields of every JSON type, nested.
fn fts_query() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
        "[a-z \\x00-\\x1f\"é]{0,16}".prop_map(Value::from),
        prop::sample::select(vec!["v", "id", "And", "OR", "\"one two\"", ""]).prop_map(Value::from),
    ];
    let leaf = (
        prop::sample::select(vec!["match", "phrase", "multi_match", "fuzzy"]),
        prop::collection::vec(
            (
                prop::sample::select(vec![
                    "column",
                    "terms",
                    "query",
                    "columns",
                    "boost",
                    "fuzziness",
                    "max_expansions",
                    "operator",
                    "prefix_length",
                    "slop",
                    "zzz",
                ]),
                scalar,
            ),
            0..6,
        ),
    )
        .prop_map(|(kind, fields)| {
            let m: serde_json::Map<String, Value> = fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            json!({ kind: m })
        });
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone())
                .prop_map(|(p, n)| json!({"boost": {"positive": p, "negative": n}})),
            prop::collection::vec(inner, 0..4).prop_map(|qs| {
                let (a, b) = qs.split_at(qs.len() / 2);
                json!({"boolean": {"must": a, "should": b, "must_not": []}})
            }),
        ]
    })
}

/// A `query/` body carrying a full-text query, and a `create_index/` body of an FTS index.
fn fts_body() -> impl Strategy<Value = (String, serde_json::Value)> {
    use serde_json::json;
    prop_oneof![
        (
            fts_query(),
            any::<bool>(),
            any::<bool>(),
            prop::option::of("[a-z<>= 0-9']{0,10}")
        )
            .prop_map(|(q, pre, fast, filter)| {
                let mut b = json!({"vector": [], "k": 5, "prefilter": pre, "fast_search": fast,
                    "full_text_query": {"query": q}});
                if let Some(f) = filter {
                    b["filter"] = json!(f);
                }
                ("query/".to_string(), b)
            }),
        (
            "[a-z \\x00é]{0,20}",
            prop::collection::vec("[a-z]{1,3}", 0..3)
        )
            .prop_map(|(q, cols)| {
                (
                    "query/".to_string(),
                    json!({"vector": [], "full_text_query": {"query": q, "columns": cols}}),
                )
            }),
        (
            prop::sample::select(vec!["v", "id", "nope"]),
            prop::sample::select(vec!["simple", "ngram", "raw", "whitespace", "icu", "x"]),
            any::<bool>(),
            prop::option::of(0u64..300),
            prop::option::of(0u64..300),
            prop::option::of(prop::sample::select(vec!["English", "German", "none"])),
        )
            .prop_map(|(column, tok, pos, lo, hi, lang)| {
                let mut b = json!({"column": column, "index_type": "FTS", "base_tokenizer": tok,
                    "with_position": pos, "min_ngram_length": lo, "max_ngram_length": hi});
                if let Some(l) = lang {
                    b["language"] = json!(l);
                }
                ("create_index/".to_string(), b)
            }),
    ]
}

/// Strings as text rows, so that a full-text index has something to hold.
fn text_rows() -> Vec<u8> {
    use std::sync::Arc;
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("id", arrow_schema::DataType::Int64, false),
        arrow_schema::Field::new("v", arrow_schema::DataType::Utf8, true),
    ]));
    let b = arrow::array::RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(arrow::array::Int64Array::from_iter_values(0..6)),
            Arc::new(arrow::array::StringArray::from_iter([
                Some("one two three"),
                None,
                Some("two four"),
                Some(""),
                Some("éclair one"),
                Some("the of and"),
            ])),
        ],
    )
    .expect("batch");
    memwal_core::ipc::encode_stream(&schema, &[b]).expect("ipc")
}

#[test]
fn full_text_bodies_never_answer_5xx() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tmp");
    let h = rt
        .block_on(memwal_server::start(config(dir.path())))
        .expect("start");
    let c = Client::new(&h.url());
    let stream = "application/vnd.apache.arrow.stream";
    let (s, b) = rt.block_on(c.post("/v1/table/t/create/", stream, text_rows(), &[]));
    assert_eq!(s, 200, "{b}");
    let index = serde_json::json!({"column": "v", "index_type": "FTS", "with_position": true});
    let (s, b) = rt.block_on(c.post(
        "/v1/table/t/create_index/",
        "application/json",
        index.to_string().into_bytes(),
        &[],
    ));
    assert_eq!(s, 200, "{b}");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300),
        ..ProptestConfig::default()
    });
    let result = runner.run(&fts_body(), |(route, body)| {
        let path = format!("/v1/table/t/{route}");
        let (status, text) = rt.block_on(c.post(
            &path,
            "application/json",
            body.to_string().into_bytes(),
            &[],
        ));
        prop_assert!(
            status == 200 || status == 400 || status == 501,
            "{body}: {status} {text}"
        );
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Still serving: the original index answers a plain match (replaced indexes included).
    let body =
        serde_json::json!({"vector": [], "full_text_query": {"columns": ["v"], "query": "two"}});
    let (s, _, b) = rt.block_on(c.query_batches("t", body));
    assert_eq!(s, 200, "{b}");
    rt.block_on(h.close());
}
