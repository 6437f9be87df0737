//! Vector search on native tables against a brute-force oracle written
//! plainly here: random sequences of adds, deletes and updates (proptest),
//! then random queries (every distance type, prefilter and postfilter,
//! distance ranges, offsets, several query vectors) compared with the
//! oracle over a plain model of the rows. Vectors hold small integers so
//! that L2 and dot distances are exact in float32 and the answers can be
//! compared row for row (cosine within 1e-5).

use std::sync::Arc;

use arrow::array::{Array, AsArray, FixedSizeListArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{Float32Type, Int32Type, Int64Type, UInt64Type};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_core::{
    AddMode, CreateOptions, Data, DistanceType, NativeTable, QueryRequest, VectorQuery,
};
use proptest::prelude::*;

const DIM: usize = 5;
const KINDS: [&str; 3] = ["a", "b", "c"];

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("kind", DataType::Utf8, true),
        Field::new(
            "v",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float32, true)),
                DIM as i32,
            ),
            true,
        ),
    ]))
}

/// A row of the model: id, kind, vector (None: a null vector).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    id: i64,
    kind: String,
    v: Option<Vec<f32>>,
}

fn data(rows: &[Row]) -> Data {
    let vals: Vec<Option<Vec<Option<f32>>>> = rows
        .iter()
        .map(|r| r.v.as_ref().map(|v| v.iter().map(|x| Some(*x)).collect()))
        .collect();
    let b = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.id))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.kind.as_str()),
            )),
            Arc::new(
                FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(vals, DIM as i32),
            ),
        ],
    )
    .expect("batch");
    Data::new(schema(), vec![b])
}

#[derive(Debug, Clone)]
enum Op {
    Add(Vec<(u8, Option<Vec<i8>>)>),
    DeleteMod(i64),
    UpdateKind(i64, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let vec = prop::option::weighted(0.9, prop::collection::vec(-3i8..=3, DIM));
    prop_oneof![
        4 => prop::collection::vec((0u8..3, vec), 1..40).prop_map(Op::Add),
        1 => (2i64..6).prop_map(Op::DeleteMod),
        1 => (2i64..6, 0u8..3).prop_map(|(m, k)| Op::UpdateKind(m, k)),
    ]
}

/// Filters as SQL and as a plain Rust test of a row.
const FILTERS: [&str; 4] = [
    "kind = 'a'",
    "id > 20",
    "kind <> 'b' AND id < 30",
    "id % 2 = 0",
];

fn passes(f: usize, r: &Row) -> bool {
    match f {
        0 => r.kind == "a",
        1 => r.id > 20,
        2 => r.kind != "b" && r.id < 30,
        _ => r.id % 2 == 0,
    }
}

#[derive(Debug, Clone)]
struct Q {
    vectors: Vec<Vec<i8>>,
    dt: u8,
    filter: Option<usize>,
    prefilter: bool,
    k: usize,
    offset: usize,
    range: Option<(f32, f32)>,
}

fn query() -> impl Strategy<Value = Q> {
    (
        prop::collection::vec(prop::collection::vec(-3i8..=3, DIM), 1..3),
        0u8..3,
        prop::option::of(0usize..4),
        any::<bool>(),
        1usize..12,
        0usize..4,
        prop::option::weighted(0.3, (0f32..20.0, 0f32..40.0)),
    )
        .prop_map(|(vectors, dt, filter, prefilter, k, offset, range)| Q {
            vectors,
            dt,
            filter,
            prefilter,
            k,
            offset,
            range,
        })
}

fn distance(dt: DistanceType, q: &[f32], v: &[f32]) -> f32 {
    let dot: f64 = q.iter().zip(v).map(|(a, b)| *a as f64 * *b as f64).sum();
    match dt {
        DistanceType::L2 => q
            .iter()
            .zip(v)
            .map(|(a, b)| ((a - b) as f64).powi(2))
            .sum::<f64>() as f32,
        DistanceType::Dot => (1.0 - dot) as f32,
        DistanceType::Cosine => {
            let n = |x: &[f32]| x.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt();
            (1.0 - dot / (n(q) * n(v))) as f32
        }
        // Bytes: bits that differ.
        DistanceType::Hamming => q
            .iter()
            .zip(v)
            .map(|(a, b)| ((*a as u8) ^ (*b as u8)).count_ones())
            .sum::<u32>() as f32,
    }
}

/// The oracle: (row id, distance) per query vector, as a plain sort.
fn oracle(rows: &[(u64, Row)], q: &Q, dt: DistanceType) -> Vec<Vec<(u64, f32)>> {
    q.vectors
        .iter()
        .map(|qv| {
            let qv: Vec<f32> = qv.iter().map(|x| *x as f32).collect();
            let ok_filter = |r: &Row| q.filter.is_none_or(|f| passes(f, r));
            let mut c: Vec<(u64, f32, &Row)> = rows
                .iter()
                .filter_map(|(id, r)| r.v.as_ref().map(|v| (*id, distance(dt, &qv, v), r)))
                .filter(|(_, d, _)| !d.is_nan())
                .filter(|(_, _, r)| !q.prefilter || ok_filter(r))
                .filter(|(_, d, _)| q.range.is_none_or(|(lo, hi)| *d >= lo && *d < hi))
                .collect();
            c.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            if !q.prefilter {
                c.truncate(q.k + q.offset);
                c.retain(|(_, _, r)| ok_filter(r));
            }
            c.into_iter()
                .skip(q.offset)
                .take(q.k)
                .map(|(id, d, _)| (id, d))
                .collect()
        })
        .collect()
}

/// Every live row with its row id, read with `with_row_id`.
fn live(t: &NativeTable) -> Vec<(u64, Row)> {
    let req = QueryRequest {
        with_row_id: true,
        ..Default::default()
    };
    let mut out = Vec::new();
    for b in t.query_sync(&req).expect("scan") {
        let ids = b
            .column_by_name("_rowid")
            .expect("_rowid")
            .as_primitive::<UInt64Type>()
            .clone();
        for (i, r) in rows_of(&b).into_iter().enumerate() {
            out.push((ids.value(i), r));
        }
    }
    out
}

fn rows_of(b: &RecordBatch) -> Vec<Row> {
    let id = b
        .column_by_name("id")
        .expect("id")
        .as_primitive::<Int64Type>();
    let kind = b.column_by_name("kind").expect("kind").as_string::<i32>();
    let v = b.column_by_name("v").expect("v").as_fixed_size_list();
    (0..b.num_rows())
        .map(|i| Row {
            id: id.value(i),
            kind: kind.value(i).to_string(),
            v: v.is_valid(i)
                .then(|| v.value(i).as_primitive::<Float32Type>().values().to_vec()),
        })
        .collect()
}

fn run(t: &NativeTable, q: &Q, dt: DistanceType) -> RecordBatch {
    let mut vq = VectorQuery {
        vectors: q
            .vectors
            .iter()
            .map(|v| v.iter().map(|x| *x as f32).collect())
            .collect(),
        distance_type: Some(dt),
        prefilter: q.prefilter,
        ..Default::default()
    };
    if let Some((lo, hi)) = q.range {
        vq.lower_bound = Some(lo);
        vq.upper_bound = Some(hi);
    }
    let req = QueryRequest {
        filter: q.filter.map(|f| FILTERS[f].to_string()),
        limit: Some(q.k),
        offset: Some(q.offset),
        with_row_id: true,
        nearest: Some(vq),
        ..Default::default()
    };
    let mut b = t.query_sync(&req).expect("search");
    assert_eq!(b.len(), 1, "a vector search answers one batch");
    b.remove(0)
}

/// The answer split per query vector, as (row id, distance).
fn answer(b: &RecordBatch, n: usize) -> Vec<Vec<(u64, f32)>> {
    let ids = b
        .column_by_name("_rowid")
        .expect("_rowid")
        .as_primitive::<UInt64Type>();
    let d = b
        .column_by_name("_distance")
        .expect("_distance")
        .as_primitive::<Float32Type>();
    let qi = b
        .column_by_name("query_index")
        .map(|c| c.as_primitive::<Int32Type>().clone());
    let mut out = vec![Vec::new(); n];
    for i in 0..b.num_rows() {
        let q = qi.as_ref().map_or(0, |c| c.value(i) as usize);
        out[q].push((ids.value(i), d.value(i)));
    }
    out
}

fn check(t: &NativeTable, model: &[Row], q: &Q) {
    let rows = live(t);
    let mut got_rows: Vec<Row> = rows.iter().map(|r| r.1.clone()).collect();
    got_rows.sort_by_key(|r| r.id);
    assert_eq!(got_rows, model, "the scan must hold the model's rows");
    let dt = [DistanceType::L2, DistanceType::Cosine, DistanceType::Dot][q.dt as usize];
    let b = run(t, q, dt);
    let got = answer(&b, q.vectors.len());
    let want = oracle(&rows, q, dt);
    if dt == DistanceType::Cosine {
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.len(), w.len(), "{q:?}");
            for ((_, gd), (_, wd)) in g.iter().zip(w) {
                assert!((gd - wd).abs() <= 1e-5, "{q:?}: {gd} vs {wd}");
            }
        }
    } else {
        assert_eq!(got, want, "{q:?} {dt}");
    }
}

fn apply(t: &NativeTable, model: &mut Vec<Row>, next_id: &mut i64, op: &Op) {
    match op {
        Op::Add(rows) => {
            let rows: Vec<Row> = rows
                .iter()
                .map(|(k, v)| {
                    *next_id += 1;
                    Row {
                        id: *next_id,
                        kind: KINDS[*k as usize].to_string(),
                        v: v.as_ref().map(|v| v.iter().map(|x| *x as f32).collect()),
                    }
                })
                .collect();
            t.add_sync(data(&rows), AddMode::Append).expect("add");
            model.extend(rows);
        }
        Op::DeleteMod(m) => {
            t.delete_sync(&format!("id % {m} = 1")).expect("delete");
            model.retain(|r| r.id % m != 1);
        }
        Op::UpdateKind(m, k) => {
            let kind = KINDS[*k as usize];
            t.update_sync(
                Some(&format!("id % {m} = 0")),
                &[("kind".into(), format!("'{kind}'"))],
            )
            .expect("update");
            model
                .iter_mut()
                .filter(|r| r.id % m == 0)
                .for_each(|r| r.kind = kind.into());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn search_matches_a_brute_force_oracle(
        ops in prop::collection::vec(op(), 1..8),
        queries in prop::collection::vec(query(), 1..6),
        old in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("dir");
        let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
        let t = db.create_table_sync("t", data(&[]), CreateOptions::default()).expect("create");
        let (mut model, mut next) = (Vec::new(), 0i64);
        let mut snapshot = None;
        for (i, o) in ops.iter().enumerate() {
            apply(&t, &mut model, &mut next, o);
            if i == ops.len() / 2 {
                snapshot = Some((t.version_sync().expect("v"), model.clone()));
            }
        }
        for q in &queries {
            check(&t, &model, q);
        }
        // A checkout of an older version searches that version's rows.
        if let (true, Some((v, m))) = (old, snapshot) {
            let c = t.checkout_sync(Some(v)).expect("checkout");
            for q in &queries {
                check(&c, &m, q);
            }
        }
    }
}

fn small_table(dir: &std::path::Path) -> NativeTable {
    let db = crate::support::open_db(dir.to_str().expect("p")).expect("db");
    let rows: Vec<Row> = (0..20)
        .map(|i| Row {
            id: i,
            kind: KINDS[(i % 3) as usize].into(),
            v: Some((0..DIM).map(|j| (i as f32) * 0.5 - j as f32).collect()),
        })
        .collect();
    db.create_table_sync("t", data(&rows), CreateOptions::default())
        .expect("create")
}

fn search_err(t: &NativeTable, q: VectorQuery, limit: Option<usize>) -> String {
    let req = QueryRequest {
        limit,
        nearest: Some(q),
        ..Default::default()
    };
    t.query_sync(&req).expect_err("must be refused").to_string()
}

#[test]
fn bad_vector_queries_are_clear_errors() {
    let dir = tempfile::tempdir().expect("dir");
    let t = small_table(dir.path());
    let e = search_err(&t, VectorQuery::new(vec![1.0; 3]), None);
    assert!(
        e.contains("dimension 3") && e.contains("'v' (dimension 5)"),
        "{e}"
    );
    let mut q = VectorQuery::new(vec![1.0; 3]);
    q.column = Some("v".into());
    let e = search_err(&t, q, None);
    assert!(
        e.contains("dimension 3") && e.contains("dimension 5"),
        "{e}"
    );
    let mut q = VectorQuery::new(vec![1.0; DIM]);
    q.column = Some("kind".into());
    let e = search_err(&t, q, None);
    assert!(
        e.contains("'kind'") && e.contains("not a vector column"),
        "{e}"
    );
    let mut q = VectorQuery::new(vec![1.0; DIM]);
    q.column = Some("nope".into());
    assert!(search_err(&t, q, None).contains("'nope'"));
    let mut nan = vec![1.0; DIM];
    nan[2] = f32::NAN;
    let e = search_err(&t, VectorQuery::new(nan), None);
    assert!(e.contains("position 2") && e.contains("NaN"), "{e}");
    let e = search_err(&t, VectorQuery::new(vec![1.0; DIM]), Some(0));
    assert!(e.contains("at least 1"), "{e}");
    let e = search_err(&t, VectorQuery::new(vec![]), None);
    assert!(e.contains("empty"), "{e}");
    let q = VectorQuery {
        vectors: vec![vec![1.0; DIM], vec![1.0; 2]],
        ..Default::default()
    };
    assert!(search_err(&t, q, None).contains("differ in dimension"));
    // A huge k returns every row, without reserving k slots.
    let req = QueryRequest {
        limit: Some(usize::MAX),
        offset: Some(usize::MAX - 1),
        nearest: Some(VectorQuery::new(vec![1.0; DIM])),
        ..Default::default()
    };
    let b = t.query_sync(&req).expect("huge k and offset");
    assert_eq!(b[0].num_rows(), 0);
    let req = QueryRequest {
        limit: Some(usize::MAX),
        nearest: Some(VectorQuery::new(vec![1.0; DIM])),
        ..Default::default()
    };
    assert_eq!(t.query_sync(&req).expect("huge k")[0].num_rows(), 20);
}

#[test]
fn the_column_is_found_by_dimension_and_every_float_width_is_searched() {
    use arrow::datatypes::{ArrowPrimitiveType, Float16Type, Float64Type};
    type F16 = <Float16Type as ArrowPrimitiveType>::Native;
    let dir = tempfile::tempdir().expect("dir");
    let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
    let fsl =
        |t: DataType, n: i32| DataType::FixedSizeList(Arc::new(Field::new("item", t, true)), n);
    let s = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("h", fsl(DataType::Float16, 2), true),
        Field::new("d", fsl(DataType::Float64, 3), true),
        Field::new("d2", fsl(DataType::Float64, 3), true),
    ]));
    let n = 10usize;
    let h: Vec<Option<Vec<Option<F16>>>> = (0..n)
        .map(|i| {
            Some(vec![
                Some(F16::from_f32(i as f32)),
                Some(F16::from_f32(0.0)),
            ])
        })
        .collect();
    let d: Vec<Option<Vec<Option<f64>>>> = (0..n).map(|i| Some(vec![Some(i as f64); 3])).collect();
    let b = RecordBatch::try_new(
        s.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(FixedSizeListArray::from_iter_primitive::<Float16Type, _, _>(h, 2)),
            Arc::new(FixedSizeListArray::from_iter_primitive::<Float64Type, _, _>(d.clone(), 3)),
            Arc::new(FixedSizeListArray::from_iter_primitive::<Float64Type, _, _>(d, 3)),
        ],
    )
    .expect("batch");
    let t = db
        .create_table_sync("w", Data::new(s, vec![b]), CreateOptions::default())
        .expect("create");
    let top = |q: VectorQuery| -> (i64, f32) {
        let req = QueryRequest {
            limit: Some(1),
            nearest: Some(q),
            ..Default::default()
        };
        let b = t.query_sync(&req).expect("search").remove(0);
        let id = b
            .column_by_name("id")
            .expect("id")
            .as_primitive::<Int64Type>()
            .value(0);
        let d = b
            .column_by_name("_distance")
            .expect("d")
            .as_primitive::<Float32Type>()
            .value(0);
        (id, d)
    };
    // float16, found as the only column of dimension 2.
    let (id, d) = top(VectorQuery::new(vec![6.9, 0.0]));
    assert_eq!(id, 7);
    assert!((d - 0.01).abs() < 1e-5, "{d}");
    // Two float64 columns of dimension 3: the name is required.
    let e = search_err(&t, VectorQuery::new(vec![1.0; 3]), None);
    assert!(
        e.contains("several") && e.contains("'d'") && e.contains("'d2'"),
        "{e}"
    );
    let mut q = VectorQuery::new(vec![4.0; 3]);
    q.column = Some("d2".into());
    assert_eq!(top(q), (4, 0.0));
}

#[test]
fn a_large_scan_split_across_threads_gives_the_oracle_answer() {
    let dir = tempfile::tempdir().expect("dir");
    let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
    let t = db
        .create_table_sync("t", data(&[]), CreateOptions::default())
        .expect("create");
    let mut seed = 11u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 40) % 9) as f32 - 4.0
    };
    let mut model = Vec::new();
    for chunk in 0..3 {
        let rows: Vec<Row> = (0..50_000)
            .map(|i| Row {
                id: chunk * 50_000 + i,
                kind: KINDS[(i % 3) as usize].into(),
                v: Some((0..DIM).map(|_| next()).collect()),
            })
            .collect();
        t.add_sync(data(&rows), AddMode::Append).expect("add");
        model.extend(rows);
    }
    t.delete_sync("id % 7 = 3").expect("delete");
    model.retain(|r| r.id % 7 != 3);
    for (dt, prefilter) in [(0u8, true), (2, false), (0, false)] {
        let q = Q {
            vectors: vec![vec![1, -2, 3, 0, 2], vec![0, 0, 0, 0, 1]],
            dt,
            filter: Some(0),
            prefilter,
            k: 25,
            offset: 3,
            range: None,
        };
        check(&t, &model, &q);
    }
}

fn json_leaf() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-3i64..20).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![Just(1e300f64), Just(-0.0), Just(0.5), Just(1e-40)].prop_map(Value::from),
        prop::sample::select(vec![
            "l2",
            "cosine",
            "dot",
            "hamming",
            "v",
            "kind",
            "id > 3",
            "kind = 'a'",
            "x"
        ])
        .prop_map(Value::from),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    /// Fuzz target of the `query/` body parser and the vector plan: any
    /// body, well-formed or not, is an answer or an error, never a panic.
    #[test]
    fn any_query_body_is_an_answer_or_an_error(
        vector in prop_oneof![
            prop::collection::vec((-4i8..4).prop_map(f64::from), 0..7).prop_map(|v| serde_json::json!(v)),
            prop::collection::vec(prop::collection::vec((-4i8..4).prop_map(f64::from), 0..7), 0..3)
                .prop_map(|v| serde_json::json!(v)),
            json_leaf(),
        ],
        fields in prop::collection::vec((prop::sample::select(vec![
            "k", "offset", "filter", "columns", "prefilter", "distance_type", "vector_column",
            "lower_bound", "upper_bound", "nprobes", "ef", "with_row_id", "version",
        ]), json_leaf()), 0..5),
    ) {
        use memwal_core::protocol::QueryBody;
        let mut body = serde_json::json!({ "vector": vector });
        for (k, v) in fields {
            body[k] = v;
        }
        let dir = tempfile::tempdir().expect("dir");
        let t = small_table(dir.path());
        if let Ok(b) = serde_json::from_value::<QueryBody>(body) {
            if let Ok(req) = b.to_request() {
                let _ = t.query_sync(&req);
            }
        }
    }
}

/// Cosine is scale-free, so rows parallel to the query are at distance 0 and
/// opposite ones at 2 whatever their magnitude, f32's extremes included (a
/// squared norm past f32's range, or subnormal, used to give 1 or a negative
/// distance); a flat search and an IVF_FLAT index (which normalises rows)
/// answer alike, and a zero row is never returned.
#[test]
fn cosine_distances_hold_at_f32_extremes() {
    let dir = tempfile::tempdir().expect("dir");
    let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
    let scales = [1e-20f32, 1e-3, 1.0, 1e19, 1e30, 3e38];
    let mut rows: Vec<Row> = Vec::new();
    for (i, s) in scales.iter().enumerate() {
        for (j, sign) in [1f32, -1.0].iter().enumerate() {
            rows.push(Row {
                id: (2 * i + j) as i64,
                kind: "a".into(),
                v: Some(vec![sign * s; DIM]),
            });
        }
    }
    rows.push(Row {
        id: 100,
        kind: "a".into(),
        v: Some(vec![0.0; DIM]),
    });
    let t = db
        .create_table_sync("t", data(&rows), CreateOptions::default())
        .expect("create");
    let check = |t: &NativeTable, q: &[f32], how: &str| {
        let mut vq = VectorQuery::new(q.to_vec());
        vq.distance_type = Some(DistanceType::Cosine);
        vq.tuning.nprobes = Some(2);
        let req = QueryRequest {
            limit: Some(100),
            nearest: Some(vq),
            with_row_id: true,
            ..Default::default()
        };
        let b = t.query_sync(&req).expect("search");
        let got = answer(
            &arrow::compute::concat_batches(&b[0].schema(), &b).expect("concat"),
            1,
        );
        let got = &got[0];
        assert_eq!(got.len(), 2 * scales.len(), "{how} q={q:?}: {got:?}");
        for (id, d) in got {
            let want = if id % 2 == 0 { 0.0 } else { 2.0 };
            assert!(
                (d - want).abs() < 1e-5,
                "{how} q={q:?}: row {id} at {d}, want {want}: {got:?}"
            );
        }
    };
    for q in [[1.0f32; DIM], [1e20; DIM], [1e-20; DIM]] {
        check(&t, &q, "flat");
    }
    let req = memwal_core::IndexRequest {
        index_type: Some(memwal_core::IndexType::IvfFlat),
        num_partitions: Some(2),
        distance_type: Some(DistanceType::Cosine),
        ..memwal_core::IndexRequest::new("v")
    };
    t.create_index_sync(&req).expect("index");
    for q in [[1.0f32; DIM], [1e20; DIM], [1e-20; DIM]] {
        check(&t, &q, "IVF_FLAT");
    }
}
