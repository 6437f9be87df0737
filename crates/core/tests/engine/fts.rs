//! FTS indexes on native tables: a model test (random adds, deletes, updates, index builds,
//! optimizes (folds), compactions and whole-table rewrites; after each step every query type's
//! answer through the table equals the `memwal-fts` engine run over a freshly built index of the
//! live rows alone), and the life cycle: list/stats counts, drop, restart, refusals, the answer's
//! layout, phrase without positions.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{Float32Type, Int64Type};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_core::api::CompactOptions;
use memwal_core::index::IndexType;
use memwal_core::{
    AddMode, CreateOptions, Data, IndexRequest, NativeDatabase, NativeTable, QueryRequest,
    TextSearch,
};
use memwal_fts::query::{BooleanQuery, BoostQuery, PhraseQuery};
use memwal_fts::{
    Analyzer, ColumnInput, Corpus, FtsParams, FtsQuery, LiveRows, MatchQuery, Operator,
    SegmentBuilder,
};
use proptest::prelude::*;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
    ]))
}

fn data(rows: &[(i64, Option<String>)]) -> Data {
    let b = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1.clone()))),
        ],
    )
    .expect("batch");
    Data::new(schema(), vec![b])
}

fn open(dir: &std::path::Path) -> NativeTable {
    let db = NativeDatabase::open(dir.to_str().expect("path")).expect("db");
    match db.open_table_sync("t") {
        Ok(t) => t,
        Err(_) => db
            .create_table_sync("t", data(&[]), CreateOptions::default())
            .expect("create"),
    }
}

fn fts_index(with_position: bool) -> IndexRequest {
    IndexRequest {
        index_type: Some(IndexType::Fts),
        fts: Some(FtsParams {
            with_position,
            ..FtsParams::default()
        }),
        ..IndexRequest::new("text")
    }
}

/// `(id, score)` of a full-text query through the table, best first, ties by id.
fn answer(t: &NativeTable, q: &FtsQuery, filter: Option<&str>) -> Result<Vec<(i64, f32)>, String> {
    let req = QueryRequest {
        full_text: Some(TextSearch::new(q.clone())),
        columns: Some(vec!["id".into()]),
        filter: filter.map(str::to_string),
        limit: Some(10_000),
        ..Default::default()
    };
    let mut out = answer_of(t, &req)?;
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(out)
}

/// `(id, score)` of `req` (first column `id`) in the table's order.
fn answer_of(t: &NativeTable, req: &QueryRequest) -> Result<Vec<(i64, f32)>, String> {
    let batches = t.query_sync(req).map_err(|e| e.to_string())?;
    Ok(batches
        .iter()
        .flat_map(|b| {
            let ids = b.column(0).as_primitive::<Int64Type>().values().to_vec();
            let scores = b.column(1).as_primitive::<Float32Type>().values().to_vec();
            ids.into_iter().zip(scores)
        })
        .collect())
}

/// The same query over a fresh index of the live rows alone (row id = `id`).
fn reference(
    live: &BTreeMap<i64, Option<String>>,
    q: &FtsQuery,
    keep: &dyn Fn(u64) -> bool,
) -> Vec<(i64, f32)> {
    let params = FtsParams {
        with_position: true,
        ..FtsParams::default()
    };
    let a = Analyzer::new(&params).expect("analyzer");
    let mut b = SegmentBuilder::new(&a, true);
    for (id, text) in live {
        b.add(*id as u64, text.as_deref()).expect("add");
    }
    let seg = b.finish().expect("segment");
    let input = ColumnInput {
        name: "text".into(),
        analyzer: &a,
        with_position: true,
        segments: vec![&seg],
        unindexed: vec![],
        block_size: memwal_fts::DEFAULT_BLOCK_SIZE,
    };
    let corpora = vec![Corpus::new(input, LiveRows::All).expect("corpus")];
    let mut out: Vec<(i64, f32)> = memwal_fts::search(&corpora, q, Some(keep), None, 0)
        .expect("search")
        .into_iter()
        .map(|h| (h.row_id as i64, h.score))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// The same rows in the same order, scores within 1e-4 relative.
fn assert_same_answer(got: &[(i64, f32)], want: &[(i64, f32)], q: &FtsQuery) {
    assert_eq!(got.len(), want.len(), "{q:?}\n got {got:?}\nwant {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.0, w.0, "{q:?}\n got {got:?}\nwant {want:?}");
        assert!(
            (g.1 - w.1).abs() <= 1e-4 * w.1.abs().max(1e-6),
            "{q:?}: {g:?} vs {w:?}"
        );
    }
}

const WORDS: &[&str] = &[
    "fox", "dog", "the", "runs", "running", "quick", "brown", "lazy", "river", "bank", "a",
    "cafés", "tree",
];

fn text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        8 => proptest::collection::vec(0usize..WORDS.len(), 0..8).prop_map(|w| Some(w.into_iter().map(|i| WORDS[i]).collect::<Vec<_>>().join(" "))),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Add(Vec<Option<String>>),
    Delete(usize),
    Update(usize, Option<String>),
    Index,
    Fold,
    Compact,
    Rewrite,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => proptest::collection::vec(text(), 1..6).prop_map(Op::Add),
        2 => any::<usize>().prop_map(Op::Delete),
        2 => (any::<usize>(), text()).prop_map(|(i, t)| Op::Update(i, t)),
        1 => Just(Op::Index),
        2 => Just(Op::Fold),
        1 => Just(Op::Compact),
        1 => Just(Op::Rewrite),
    ]
}

fn queries() -> Vec<FtsQuery> {
    let m = |t: &str, op: Operator, f: Option<u32>| {
        FtsQuery::Match(MatchQuery {
            operator: op,
            fuzziness: f,
            ..MatchQuery::new(Some("text".into()), t)
        })
    };
    vec![
        m("fox", Operator::Or, Some(0)),
        m("quick brown dog", Operator::Or, Some(0)),
        m("running dog", Operator::And, Some(0)),
        m("rivr bnk", Operator::Or, Some(1)),
        FtsQuery::Match(MatchQuery::new(None, "tree cafe")),
        FtsQuery::Phrase(PhraseQuery {
            column: Some("text".into()),
            terms: "quick brown".into(),
            slop: 1,
        }),
        FtsQuery::Boost(BoostQuery {
            positive: Box::new(m("fox dog", Operator::Or, Some(0))),
            negative: Box::new(m("lazy", Operator::Or, Some(0))),
            negative_boost: 0.5,
        }),
        FtsQuery::Boolean(BooleanQuery {
            must: vec![m("dog", Operator::Or, Some(0))],
            should: vec![m("quick", Operator::Or, Some(0))],
            must_not: vec![m("river", Operator::Or, Some(0))],
        }),
    ]
}

fn apply(t: &NativeTable, live: &mut BTreeMap<i64, Option<String>>, next: &mut i64, op: Op) {
    let pick = |i: usize| live.keys().nth(i % live.len().max(1)).copied();
    match op {
        Op::Add(texts) => {
            let rows: Vec<(i64, Option<String>)> = texts
                .into_iter()
                .map(|x| {
                    *next += 1;
                    (*next, x)
                })
                .collect();
            t.add_sync(data(&rows), AddMode::Append).expect("add");
            live.extend(rows);
        }
        Op::Delete(i) => {
            if let Some(id) = pick(i) {
                t.delete_sync(&format!("id = {id}")).expect("delete");
                live.remove(&id);
            }
        }
        Op::Update(i, x) => {
            if let Some(id) = pick(i) {
                let v = match &x {
                    Some(s) => format!("'{s}'"),
                    None => "NULL".into(),
                };
                t.update_sync(Some(&format!("id = {id}")), &[("text".into(), v)])
                    .expect("update");
                live.insert(id, x);
            }
        }
        Op::Index => t.create_index_sync(&fts_index(true)).expect("index"),
        Op::Fold => {
            t.optimize_indices_sync().expect("fold");
        }
        Op::Compact => {
            let o = CompactOptions {
                target_rows_per_fragment: 1_000,
                materialize_deletions_threshold: 0.1,
                min_fragments: 2,
                max_bytes_per_run: u64::MAX,
            };
            t.compact_all_sync(&o).expect("compact");
        }
        Op::Rewrite => {
            t.optimize_sync().expect("rewrite");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_query_equals_a_fresh_index_of_the_live_rows(ops in proptest::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().expect("dir");
        let t = open(dir.path());
        t.create_index_sync(&fts_index(true)).expect("index");
        let (mut live, mut next) = (BTreeMap::new(), 0i64);
        for op in ops {
            apply(&t, &mut live, &mut next, op);
            for q in queries() {
                for filter in [None, Some("id % 2 = 0")] {
                    let got = answer(&t, &q, filter).map_err(TestCaseError::fail)?;
                    let keep = |r: u64| filter.is_none() || r.is_multiple_of(2);
                    let want = reference(&live, &q, &keep);
                    prop_assert_eq!(got.len(), want.len(), "{:?} {:?}\n got {:?}\nwant {:?}", q, filter, got, want);
                    for (g, w) in got.iter().zip(&want) {
                        prop_assert_eq!(g.0, w.0, "{:?}\n got {:?}\nwant {:?}", q, got, want);
                        prop_assert!((g.1 - w.1).abs() <= 1e-4 * w.1.abs().max(1e-6), "{:?}: {} vs {}", q, g.1, w.1);
                    }
                }
            }
        }
    }
}

#[test]
fn life_cycle_layout_and_refusals() {
    let dir = tempfile::tempdir().expect("dir");
    let t = open(dir.path());
    t.add_sync(
        data(&[
            (1, Some("quick brown fox".into())),
            (2, Some("lazy dog".into())),
            (3, None),
        ]),
        AddMode::Append,
    )
    .expect("add");
    t.create_index_sync(&fts_index(false)).expect("index");
    t.add_sync(data(&[(4, Some("brown dog".into()))]), AddMode::Append)
        .expect("add");
    let info = t.index_stats_sync("text_idx").expect("stats");
    assert_eq!(
        (
            info.index_type.as_str(),
            info.num_indexed_rows,
            info.num_unindexed_rows
        ),
        ("FTS", 3, 1)
    );
    // The row added after the build is found at once.
    let q = FtsQuery::Match(MatchQuery::new(Some("text".into()), "brown"));
    let ids: Vec<i64> = answer(&t, &q, None)
        .expect("query")
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&4));
    // Layout: selected columns, _score Float32, _rowid when asked; present on zero rows.
    let req = QueryRequest {
        full_text: Some(TextSearch::new(FtsQuery::Match(MatchQuery::new(
            None, "nothing",
        )))),
        with_row_id: true,
        ..Default::default()
    };
    let schema = memwal_core::table::scan::answer_schema(&t.schema_sync().expect("schema"), &req)
        .expect("answer schema");
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, vec!["id", "text", "_score", "_rowid"]);
    assert!(t
        .query_sync(&req)
        .expect("empty")
        .iter()
        .all(|b| b.num_rows() == 0));
    // SQL projections and an ordering go through the shared last steps, `_score` kept.
    let req = QueryRequest {
        full_text: Some(TextSearch::new(FtsQuery::Match(MatchQuery::new(
            None, "brown",
        )))),
        projections: Some(vec![("x".into(), "id * 2".into())]),
        ..Default::default()
    };
    let b = t.query_sync(&req).expect("projections");
    let names: Vec<String> = b[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, vec!["x", "_score"]);
    // Phrase without positions: LanceDB's error.
    let phrase = FtsQuery::Phrase(PhraseQuery {
        column: None,
        terms: "brown dog".into(),
        slop: 0,
    });
    let err = answer(&t, &phrase, None).expect_err("no positions");
    assert!(err.contains("position is not found"), "{err}");
    // Fold, restart, still there; drop, then FTS is refused.
    t.optimize_indices_sync().expect("fold");
    assert_eq!(
        t.index_stats_sync("text_idx")
            .expect("stats")
            .num_unindexed_rows,
        0
    );
    drop(t);
    let t = open(dir.path());
    assert_eq!(answer(&t, &q, None).expect("after restart").len(), 2);
    t.drop_index_sync("text_idx").expect("drop");
    assert!(answer(&t, &q, None)
        .expect_err("no index")
        .contains("INVERTED index"));
    // A non-string column is refused by name.
    let err = t
        .create_index_sync(&IndexRequest {
            index_type: Some(IndexType::Fts),
            ..IndexRequest::new("id")
        })
        .expect_err("int");
    assert!(
        err.to_string().contains("FTS indexes a string column"),
        "{err}"
    );
}

/// Rows 1..=n with texts drawn from WORDS (deterministic), appended in id order.
fn word_rows(ids: std::ops::RangeInclusive<i64>) -> Vec<(i64, Option<String>)> {
    ids.map(|i| {
        let words: Vec<&str> = (0..1 + i % 7)
            .map(|j| WORDS[((i * 7 + j * 3 + i * j) % WORDS.len() as i64) as usize])
            .collect();
        (i, Some(words.join(" ")))
    })
    .collect()
}

/// A build over enough rows to take every core (tokenized in pieces, then joined; pieces cut
/// inside fragments, with deleted rows) answers exactly as one index of the live rows.
#[test]
fn an_index_built_on_threads_answers_as_one_build() {
    let dir = tempfile::tempdir().expect("dir");
    let t = open(dir.path());
    for (a, b) in [(1, 17_000), (17_001, 30_000), (30_001, 47_000)] {
        t.add_sync(data(&word_rows(a..=b)), AddMode::Append)
            .expect("add");
    }
    t.delete_sync("id % 11 = 0").expect("delete");
    t.create_index_sync(&fts_index(true)).expect("index");
    let live: BTreeMap<i64, Option<String>> = word_rows(1..=47_000)
        .into_iter()
        .filter(|(id, _)| id % 11 != 0)
        .collect();
    for q in queries() {
        // A filter keeps answers under the helper's limit (10,000 rows).
        let got = answer(&t, &q, Some("id % 5 = 1")).expect("search");
        let want = reference(&live, &q, &|r| r % 5 == 1);
        assert!(got.len() < 10_000, "{q:?}: the limit cut the answer");
        assert_same_answer(&got, &want, &q);
    }
}

#[test]
fn fast_search_answers_the_indexed_rows_alone() {
    let dir = tempfile::tempdir().expect("dir");
    let t = open(dir.path());
    let first = word_rows(1..=60);
    t.add_sync(data(&first), AddMode::Append).expect("add");
    t.create_index_sync(&fts_index(true)).expect("index");
    let later = word_rows(61..=80);
    t.add_sync(data(&later), AddMode::Append)
        .expect("add later");
    t.update_sync(Some("id = 3"), &[("text".into(), "'fox fox dog'".into())])
        .expect("update");
    t.delete_sync("id = 5").expect("delete");
    // Indexed and live: the first rows but the updated (moved to a new fragment) and the deleted.
    let indexed: BTreeMap<i64, Option<String>> = first
        .into_iter()
        .filter(|(id, _)| *id != 3 && *id != 5)
        .collect();
    let mut every = indexed.clone();
    every.extend(later);
    every.insert(3, Some("fox fox dog".into()));
    let mut differ = 0;
    for q in queries() {
        for (filter, keep) in [(None, 0), (Some("id % 2 = 0"), 2)] {
            let fast = QueryRequest {
                full_text: Some(TextSearch {
                    fast_search: true,
                    ..TextSearch::new(q.clone())
                }),
                columns: Some(vec!["id".into()]),
                filter: filter.map(str::to_string),
                limit: Some(10_000),
                ..Default::default()
            };
            let mut got = answer_of(&t, &fast).expect("fast search");
            got.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let pass = |r: u64| keep == 0 || r.is_multiple_of(keep);
            let want = reference(&indexed, &q, &pass);
            assert_same_answer(&got, &want, &q);
            let all = answer(&t, &q, filter).expect("every row");
            differ += usize::from(all != got);
            assert_eq!(
                all,
                reference(&every, &q, &pass),
                "{q:?} without fast_search"
            );
        }
    }
    assert!(
        differ > 0,
        "fast_search changed no answer: the fixture tests nothing"
    );
}

#[test]
fn a_postfilter_keeps_what_passes_of_the_top_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let t = open(dir.path());
    let rows = word_rows(1..=80);
    t.add_sync(data(&rows[..50]), AddMode::Append).expect("add");
    t.create_index_sync(&fts_index(true)).expect("index");
    t.add_sync(data(&rows[50..]), AddMode::Append)
        .expect("add later");
    t.delete_sync("id = 4").expect("delete");
    let live: BTreeMap<i64, Option<String>> = rows.into_iter().filter(|(id, _)| *id != 4).collect();
    let mut shorter = 0;
    for q in queries() {
        for (limit, offset) in [(5, 0), (4, 2), (10_000, 0)] {
            let req = |prefilter| QueryRequest {
                full_text: Some(TextSearch {
                    prefilter,
                    ..TextSearch::new(q.clone())
                }),
                columns: Some(vec!["id".into()]),
                filter: Some("id % 3 = 0".into()),
                limit: Some(limit),
                offset: Some(offset),
                ..Default::default()
            };
            let post = answer_of(&t, &req(false)).expect("postfilter");
            // Rows are appended in id order: row ids and ids tie-break alike.
            let top = reference(&live, &q, &|_| true);
            let want: Vec<(i64, f32)> = top
                .into_iter()
                .take(limit + offset)
                .filter(|r| r.0 % 3 == 0)
                .skip(offset)
                .take(limit)
                .collect();
            assert_eq!(
                post.len(),
                want.len(),
                "{q:?}\n got {post:?}\nwant {want:?}"
            );
            for (g, w) in post.iter().zip(&want) {
                assert_eq!(g.0, w.0, "{q:?}\n got {post:?}\nwant {want:?}");
                assert!((g.1 - w.1).abs() <= 1e-4 * w.1.abs().max(1e-6));
            }
            let pre = answer_of(&t, &req(true)).expect("prefilter");
            shorter += usize::from(post.len() < pre.len());
        }
    }
    assert!(
        shorter > 0,
        "no postfilter answered fewer rows than the prefilter"
    );
}

/// `order_by` on a text search sorts the best `offset + limit` rows by score
/// (10 without a limit), then pages them, as LanceDB does; it does not cap
/// the candidates at 10.
#[test]
fn an_ordered_text_search_sorts_the_best_offset_plus_limit_rows() {
    let dir = tempfile::tempdir().expect("dir");
    let t = open(dir.path());
    let rows = word_rows(1..=60);
    t.add_sync(data(&rows), AddMode::Append).expect("add");
    t.create_index_sync(&fts_index(true)).expect("index");
    let live: BTreeMap<i64, Option<String>> = rows.into_iter().collect();
    for q in queries() {
        let top = reference(&live, &q, &|_| true);
        for (limit, offset) in [
            (Some(40), None),
            (Some(5), None),
            (Some(5), Some(8)),
            (None, None),
        ] {
            let req = QueryRequest {
                full_text: Some(TextSearch::new(q.clone())),
                columns: Some(vec!["id".into()]),
                order_by: vec![memwal_core::OrderBy {
                    column: "id".into(),
                    ascending: false,
                    nulls_first: false,
                }],
                limit,
                offset,
                ..Default::default()
            };
            let got: Vec<i64> = answer_of(&t, &req)
                .expect("ordered")
                .iter()
                .map(|r| r.0)
                .collect();
            let (l, o) = (limit.unwrap_or(10), offset.unwrap_or(0));
            let mut want: Vec<i64> = top.iter().take(l + o).map(|r| r.0).collect();
            want.sort_by(|a, b| b.cmp(a));
            let want: Vec<i64> = want.into_iter().skip(o).take(l).collect();
            assert_eq!(got, want, "{q:?} limit {limit:?} offset {offset:?}");
        }
    }
}

/// The `_indices` folder of the one table in the database folder `dir`.
fn indices_dir(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .expect("db dir")
        .filter_map(|e| Some(e.ok()?.path().join("_indices")))
        .find(|p| p.is_dir())
        .expect("a table with _indices")
}

/// Sum of the sizes of the files under `_indices/` (what an index's `size_bytes` must equal when it is the only one).
fn index_bytes(dir: &std::path::Path) -> u64 {
    crate::support::index_files(indices_dir(dir).parent().expect("table"))
        .iter()
        .filter_map(|p| p.metadata().ok())
        .map(|m| m.len())
        .sum()
}

#[test]
fn list_indices_reports_uuid_segments_size_time_and_details() {
    let dir = tempfile::tempdir().expect("dir");
    let t = open(dir.path());
    t.add_sync(data(&word_rows(1..=50)), AddMode::Append)
        .expect("add");
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    t.create_index_sync(&fts_index(true)).expect("index");
    let first = t.list_indices_sync().expect("list").remove(0);
    let uuid = first.uuid.clone().expect("uuid");
    assert_eq!(uuid.len(), 36, "{uuid}");
    assert!(uuid::Uuid::try_parse(&uuid).is_ok(), "{uuid}");
    assert_eq!(first.num_segments, 1);
    assert_eq!(first.size_bytes, Some(index_bytes(dir.path())));
    let at = first.created_at_ms.expect("created_at");
    assert!(at >= before && at <= before + 60_000, "{at} vs {before}");
    let details: serde_json::Value =
        serde_json::from_str(first.details.as_deref().expect("details")).expect("json");
    assert_eq!(details["with_position"], serde_json::json!(true));
    // A fold adds a segment: the uuid of the first stays, the size grows, the build time is kept.
    t.add_sync(data(&word_rows(51..=60)), AddMode::Append)
        .expect("add");
    t.optimize_indices_sync().expect("fold");
    let folded = t.list_indices_sync().expect("list").remove(0);
    assert_eq!(folded.num_segments, 2);
    assert_eq!(folded.uuid.as_deref(), Some(uuid.as_str()));
    assert!(folded.size_bytes > first.size_bytes);
    assert_eq!(folded.size_bytes, Some(index_bytes(dir.path())));
    assert_eq!(folded.created_at_ms, Some(at));
    // A missing index file is reported, not counted as zero bytes.
    let victim = crate::support::index_files(indices_dir(dir.path()).parent().expect("table"));
    std::fs::remove_file(victim.first().expect("a file")).expect("rm");
    let err = t.list_indices_sync().expect_err("missing file");
    assert!(
        err.to_string()
            .contains("a file of index 'text_idx' is missing"),
        "{err}"
    );
}
