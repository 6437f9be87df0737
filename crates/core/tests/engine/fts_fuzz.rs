//! Fuzz targets for the two FTS body readers the server, the remote client and the addon share
//! (proptest, a fixed number of cases in CI; raise `PROPTEST_CASES` to run longer): the
//! `full_text_query` reader (`memwal_fts::parse_full_text_query`, through `QueryBody::to_request`
//! as the server reads it) on random query trees of every shape and on byte-mutated valid bodies,
//! each query that reads run on an FTS-indexed table; and the FTS `create_index` reader
//! (`protocol::create_index_request`) on random parameter objects, each one that reads built.
//! Every case must answer or fail with InvalidInput / NotSupported: never panic, never Internal.

use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_core::protocol::{create_index_request, QueryBody};
use memwal_core::{AddMode, CreateOptions, Data, ErrorCode, NativeDatabase, NativeTable};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
        Field::new("tag", DataType::Utf8, true),
    ]))
}

/// A table of a few rows with an FTS index (with positions) on `text`, two rows added after it.
fn indexed_table(db: &NativeDatabase, name: &str) -> NativeTable {
    let rows = |ids: std::ops::Range<i64>| {
        let texts = ids.clone().map(|i| match i % 4 {
            0 => Some(format!("the quick brown fox {i}")),
            1 => Some("lazy dogs running by the river bank".to_string()),
            2 => None,
            _ => Some(format!("café résumé naïve {}", "word ".repeat(i as usize))),
        });
        let b = RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(Int64Array::from_iter_values(ids.clone())),
                Arc::new(StringArray::from_iter(texts)),
                Arc::new(StringArray::from_iter_values(ids.map(|i| format!("t{i}")))),
            ],
        )
        .expect("batch");
        Data::new(schema(), vec![b])
    };
    let t = db
        .create_table_sync(name, rows(0..20), CreateOptions::default())
        .expect("create");
    let req = create_index_request(
        &json!({"column": "text", "index_type": "FTS", "with_position": true}),
    )
    .expect("index body");
    t.create_index_sync(&req).expect("index");
    t.add_sync(rows(20..22), AddMode::Append).expect("add");
    t
}

/// Strings a query may hold: words of the rows, nothing, NUL, invalid-looking escapes, long runs.
fn text() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "fox",
            "quick brown",
            "the",
            "",
            " ",
            "\0",
            "a\0b",
            "café",
            "RUNNING dogs",
            "\u{feff}",
            "\u{10ffff}",
            "text",
            "tag",
            "id",
            "AND",
            "Or",
            "\"quick brown\"",
        ])
        .prop_map(Value::from),
        ".{0,24}".prop_map(Value::from),
        (1usize..3000).prop_map(|n| Value::from("fox ".repeat(n))),
    ]
}

/// Numbers a field may get: in range, negative, huge, fractional, non-numbers.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..5).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::num::f64::ANY
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(Value::Null),
        Just(Value::from("1")),
        Just(Value::Bool(true)),
    ]
}

fn leaf_query() -> impl Strategy<Value = Value> {
    let column = prop_oneof![
        Just(Value::from("text")),
        Just(Value::from("tag")),
        Just(Value::from("id")),
        Just(Value::from("nope")),
        Just(Value::Null),
    ];
    let fields = prop::collection::vec(
        (
            prop::sample::select(vec![
                "column",
                "terms",
                "boost",
                "fuzziness",
                "max_expansions",
                "operator",
                "prefix_length",
                "slop",
                "query",
                "columns",
                "zzz",
            ]),
            prop_oneof![text(), number()],
        ),
        0..5,
    );
    (
        prop::sample::select(vec!["match", "phrase", "multi_match", "fuzzy"]),
        column,
        text(),
        fields,
    )
        .prop_map(|(kind, column, terms, extra)| {
            let mut m = Map::new();
            if kind == "multi_match" {
                m.insert("query".into(), terms);
                m.insert("columns".into(), json!(["text", column]));
            } else {
                m.insert("column".into(), column);
                m.insert("terms".into(), terms);
            }
            for (k, v) in extra {
                m.insert(k.to_string(), v);
            }
            json!({ kind: m })
        })
}

/// A query tree: leaves under boost and boolean nodes, sometimes deep, sometimes wide.
fn query_tree() -> impl Strategy<Value = Value> {
    leaf_query().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone(), number()).prop_map(|(p, n, w)| {
                json!({"boost": {"positive": p, "negative": n, "negative_boost": w}})
            }),
            (
                prop::collection::vec(inner.clone(), 0..4),
                prop::collection::vec(inner.clone(), 0..3),
                prop::collection::vec(inner, 0..3),
            )
                .prop_map(|(should, must, must_not)| {
                    json!({"boolean": {"should": should, "must": must, "must_not": must_not}})
                }),
        ]
    })
}

/// A `query/` body with a full-text query in either shape, maybe filtered, postfiltered, fast.
fn body() -> impl Strategy<Value = Value> {
    let full_text = prop_oneof![
        3 => query_tree().prop_map(|q| json!({"query": q})),
        1 => (text(), prop::collection::vec(prop::sample::select(vec!["text", "tag", "nope"]), 0..3))
            .prop_map(|(q, cols)| json!({"query": q, "columns": cols})),
        1 => prop_oneof![number(), text()].prop_map(|q| json!({"query": q})),
    ];
    (
        full_text,
        prop::option::of(prop::sample::select(vec![
            "id > 3",
            "tag = 't1'",
            "nope = 1",
        ])),
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
        prop::option::of(0u64..30),
    )
        .prop_map(|(ft, filter, prefilter, fast, k)| {
            let mut b = json!({"vector": [], "full_text_query": ft});
            if let Some(f) = filter {
                b["filter"] = json!(f);
            }
            if let Some(p) = prefilter {
                b["prefilter"] = json!(p);
            }
            if let Some(f) = fast {
                b["fast_search"] = json!(f);
            }
            if let Some(k) = k {
                b["k"] = json!(k);
            }
            b
        })
}

/// What a refused FTS input may be: the caller's error or a missing feature, nothing else.
fn refused_cleanly(e: &memwal_core::Error) -> bool {
    matches!(e.code(), ErrorCode::InvalidInput | ErrorCode::NotSupported)
}

/// Reads `body` as the server does and, when it reads, runs it.
fn run_query_body(t: &NativeTable, body: &Value) -> Result<(), TestCaseError> {
    let parsed: QueryBody = match serde_json::from_value(body.clone()) {
        Ok(b) => b,
        Err(_) => return Ok(()),
    };
    let req = match parsed.to_request() {
        Ok(r) => r,
        Err(e) => {
            prop_assert!(refused_cleanly(&e), "{body}: {e}");
            return Ok(());
        }
    };
    if let Err(e) = t.query_sync(&req) {
        prop_assert!(refused_cleanly(&e), "{body}: {e}");
    }
    Ok(())
}

/// Byte flips, cuts and insertions in a JSON text.
fn mutate(mut s: Vec<u8>, muts: &[(usize, u8, u8)]) -> Vec<u8> {
    for &(at, op, x) in muts {
        let i = at % (s.len() + 1);
        match op % 3 {
            0 if i < s.len() => s[i] ^= x.max(1),
            1 => s.truncate(i),
            _ => s.insert(i, x),
        }
    }
    s
}

fn cases(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default),
        ..ProptestConfig::default()
    }
}

#[test]
fn full_text_query_reader_never_panics() {
    let db = NativeDatabase::open("memory://").expect("db");
    let t = indexed_table(&db, "q");
    let mut runner = proptest::test_runner::TestRunner::new(cases(400));
    let mutated = prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..5);
    let result = runner.run(&(body(), mutated), |(body, muts)| {
        run_query_body(&t, &body)?;
        // The same body as bytes, damaged: whatever still reads as JSON must be refused or answered.
        let bytes = mutate(body.to_string().into_bytes(), &muts);
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            run_query_body(&t, &v)?;
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A `create_index/` body for an FTS index with random parameters.
fn index_body() -> impl Strategy<Value = Value> {
    let value = prop_oneof![
        any::<bool>().prop_map(Value::from),
        number(),
        prop::sample::select(vec![
            "simple",
            "whitespace",
            "raw",
            "ngram",
            "icu",
            "jieba/default",
            "lindera/ipadic",
            "English",
            "french",
            "Klingon",
            "",
            "text",
        ])
        .prop_map(Value::from),
        prop::collection::vec(prop::sample::select(vec!["the", "fox", "", "\0"]), 0..3)
            .prop_map(|v| json!(v)),
    ];
    let fields = prop::collection::vec(
        (
            prop::sample::select(vec![
                "with_position",
                "base_tokenizer",
                "language",
                "max_token_length",
                "lower_case",
                "stem",
                "remove_stop_words",
                "custom_stop_words",
                "ascii_folding",
                "min_ngram_length",
                "max_ngram_length",
                "prefix_only",
                "analyzer",
                "lance_tokenizer",
                "block_size",
                "name",
                "replace",
                "zzz",
            ]),
            value,
        ),
        0..8,
    );
    (
        prop::sample::select(vec!["text", "tag", "id", "nope", ""]),
        prop::sample::select(vec!["FTS", "INVERTED", "fts"]),
        fields,
    )
        .prop_map(|(column, kind, fields)| {
            let mut m = Map::new();
            m.insert("column".into(), json!(column));
            m.insert("index_type".into(), json!(kind));
            for (k, v) in fields {
                m.insert(k.to_string(), v);
            }
            Value::Object(m)
        })
}

#[test]
fn fts_create_index_reader_never_panics() {
    let db = NativeDatabase::open("memory://").expect("db");
    let t = indexed_table(&db, "i");
    let mut runner = proptest::test_runner::TestRunner::new(cases(120));
    let mutated = prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..4);
    let result = runner.run(&(index_body(), mutated), |(body, muts)| {
        let bytes = mutate(body.to_string().into_bytes(), &muts);
        let damaged = serde_json::from_slice::<Value>(&bytes).ok();
        for b in std::iter::once(&body).chain(damaged.as_ref()) {
            match create_index_request(b) {
                Err(e) => prop_assert!(refused_cleanly(&e), "{b}: {e}"),
                Ok(req) => {
                    if let Err(e) = t.create_index_sync(&req) {
                        prop_assert!(refused_cleanly(&e), "{b}: {e}");
                    }
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
