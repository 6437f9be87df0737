//! BTREE (and BITMAP, the same structure) scalar indexes on native tables: a model test (every filter over
//! an indexed table answers exactly what the same filter answers over an
//! unindexed twin, through random writes, index builds and optimizes, with
//! nulls, NaN, signed zeros and literals of other types), that the index is
//! used where it can be, and its life cycle (restart, checkout, drop,
//! refusals, damaged files).

use std::sync::Arc;

use arrow::array::{AsArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::Int64Type;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_core::index::IndexType;
use memwal_core::table::scan::RowFilter;
use memwal_core::{
    AddMode, CreateOptions, Data, ErrorCode, IndexRequest, NativeTable, QueryRequest,
};
use proptest::prelude::*;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("i", DataType::Int32, true),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]))
}

type Row = (Option<i32>, Option<f64>, Option<&'static str>);

fn data(first: i64, rows: &[Row]) -> Data {
    let b = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(
                first..first + rows.len() as i64,
            )),
            Arc::new(Int32Array::from_iter(rows.iter().map(|r| r.0))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.1))),
            Arc::new(StringArray::from_iter(rows.iter().map(|r| r.2))),
        ],
    )
    .expect("batch");
    Data::new(schema(), vec![b])
}

fn open(dir: &std::path::Path) -> NativeTable {
    open_in(crate::support::open_db(dir.to_str().expect("path")).expect("db"))
}

fn open_in(db: memwal_core::NativeDatabase) -> NativeTable {
    match db.open_table_sync("t") {
        Ok(t) => t,
        Err(_) => db
            .create_table_sync("t", data(0, &[]), CreateOptions::default())
            .expect("create"),
    }
}

fn btree(column: &str) -> IndexRequest {
    IndexRequest {
        index_type: Some(IndexType::BTree),
        ..IndexRequest::new(column)
    }
}

/// Ids of the rows matching `filter`, in scan order, and the count.
fn answer(t: &NativeTable, filter: &str) -> Result<(Vec<i64>, u64), String> {
    let req = QueryRequest {
        filter: Some(filter.into()),
        columns: Some(vec!["id".into()]),
        ..Default::default()
    };
    let b = t.query_sync(&req).map_err(|e| e.to_string())?;
    let ids = b
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .collect();
    let n = t.count_rows_sync(Some(filter)).map_err(|e| e.to_string())?;
    Ok((ids, n))
}

const INTS: &[&str] = &[
    "-1",
    "0",
    "3",
    "-0",
    "2147483648",
    "1.5",
    "'3'",
    "NULL",
    "-(2)",
];
const FLOATS: &[&str] = &[
    "0.0", "-0.0", "1.5", "2", "'NaN'", "-1e308", "'inf'", "NULL",
];
const STRS: &[&str] = &["'a'", "'b'", "'ab'", "''", "3", "NULL"];
const OPS: &[&str] = &["=", "<", "<=", ">", ">=", "!="];

fn atom() -> impl Strategy<Value = String> {
    let col = prop_oneof![Just(("i", INTS)), Just(("f", FLOATS)), Just(("s", STRS))];
    (col, 0usize..9, 0usize..9, 0usize..OPS.len(), 0u8..6).prop_map(
        |((c, lits), a, b, op, shape)| {
            let (x, y) = (lits[a % lits.len()], lits[b % lits.len()]);
            match shape {
                0 => format!("{c} {} {x}", OPS[op]),
                1 => format!("{x} {} {c}", OPS[op]),
                2 => format!("{c} IN ({x}, {y})"),
                3 => format!("{c} BETWEEN {x} AND {y}"),
                4 => format!("{c} IS NULL"),
                _ => format!("NOT {c} = {x}"),
            }
        },
    )
}

fn filter() -> impl Strategy<Value = String> {
    atom().prop_recursive(2, 6, 2, |inner| {
        (inner.clone(), inner, any::<bool>())
            .prop_map(|(a, b, and)| format!("({a}) {} ({b})", if and { "AND" } else { "OR" }))
    })
}

fn row() -> impl Strategy<Value = Row> {
    let i = prop::option::weighted(0.9, -2i32..5);
    let f = prop::option::weighted(
        0.9,
        prop::sample::select(vec![
            0.0,
            -0.0,
            1.5,
            2.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ]),
    );
    let s = prop::option::weighted(
        0.9,
        prop::sample::select(vec!["a", "b", "ab", "", "B", "3"]),
    );
    (i, f, s)
}

#[derive(Debug, Clone)]
enum Op {
    Add(Vec<Row>),
    Delete(String),
    Update(String),
    /// A BTREE (false) or a BITMAP (true) on one of the columns.
    Index(usize, bool),
    Optimize,
    /// Both tables compact their fragments under this many rows (the
    /// indexed one's BTREEs remapped). The two may pick different fragments
    /// (the indexed one compacts one index coverage at a time), so answers
    /// are compared as sets from then on.
    Compact(u64),
    Query(String),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => prop::collection::vec(row(), 1..40).prop_map(Op::Add),
        1 => filter().prop_map(Op::Delete),
        1 => filter().prop_map(Op::Update),
        2 => (0usize..3, any::<bool>()).prop_map(|(c, b)| Op::Index(c, b)),
        1 => Just(Op::Optimize),
        1 => (1u64..60).prop_map(Op::Compact),
        4 => filter().prop_map(Op::Query),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every filter answers on the indexed table exactly what it answers on
    /// its unindexed twin (rows, order, counts, or the same error).
    #[test]
    fn a_btree_never_changes_an_answer(ops in prop::collection::vec(op(), 1..14), last in prop::collection::vec(filter(), 1..6)) {
        let (a, b) = (tempfile::tempdir().expect("tmp"), tempfile::tempdir().expect("tmp"));
        let (ta, tb) = (open(a.path()), open(b.path()));
        let mut next = 0i64;
        let mut compacted = false;
        for o in ops.iter().chain(last.iter().map(|f| Op::Query(f.clone())).collect::<Vec<_>>().iter()) {
            match o {
                Op::Add(rows) => {
                    for t in [&ta, &tb] { t.add_sync(data(next, rows), AddMode::Append).expect("add"); }
                    next += rows.len() as i64;
                }
                Op::Delete(f) => {
                    let (x, y) = (ta.delete_sync(f).map(|r| r.num_deleted_rows), tb.delete_sync(f).map(|r| r.num_deleted_rows));
                    prop_assert_eq!(x.map_err(|e| e.to_string()), y.map_err(|e| e.to_string()), "delete {}", f);
                }
                Op::Update(f) => {
                    let set = [("i".to_string(), "i + 1".to_string())];
                    let (x, y) = (ta.update_sync(Some(f), &set).map(|r| r.rows_updated), tb.update_sync(Some(f), &set).map(|r| r.rows_updated));
                    prop_assert_eq!(x.map_err(|e| e.to_string()), y.map_err(|e| e.to_string()), "update {}", f);
                }
                Op::Index(c, bitmap) => {
                    let kind = if *bitmap { IndexType::Bitmap } else { IndexType::BTree };
                    let req = IndexRequest { index_type: Some(kind), ..btree(["i", "f", "s"][*c]) };
                    ta.create_index_sync(&req).expect("index");
                }
                Op::Optimize => {
                    ta.optimize_sync().expect("optimize");
                    ta.optimize_indices_sync().expect("fold");
                }
                Op::Compact(n) => {
                    let o = memwal_core::table::compact::CompactOptions { target_rows_per_fragment: *n, ..Default::default() };
                    for t in [&ta, &tb] { t.compact_sync(&o).expect("compact"); }
                    compacted = true;
                }
                Op::Query(f) => {
                    let sorted = |r: Result<(Vec<i64>, u64), String>| r.map(|(mut ids, n)| { if compacted { ids.sort_unstable(); } (ids, n) });
                    prop_assert_eq!(sorted(answer(&ta, f)), sorted(answer(&tb, f)), "filter {}", f);
                }
            }
        }
    }
}

#[test]
fn the_index_narrows_what_it_can_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = open(dir.path());
    let rows: Vec<Row> = (0..1000)
        .map(|k| (Some(k % 100), Some(f64::from(k)), Some("x")))
        .collect();
    t.add_sync(data(0, &rows), AddMode::Append).expect("add");
    t.create_index_sync(&btree("i")).expect("index");
    let snap = t.snapshot().expect("snap");
    let narrowed = |f: &str| {
        RowFilter::new(&snap, Some(f))
            .expect("bind")
            .expect("some")
            .narrowed()
    };
    for f in [
        "i = 7",
        "7 = i",
        "i IN (1, 2)",
        "i BETWEEN 3 AND 9",
        "i < 4 AND f > 2",
        "i > 90 OR i < -(3)",
        "i = '7'",
        "i >= 98 AND s = 'x'",
    ] {
        assert!(narrowed(f), "{f}");
    }
    for f in [
        "f = 3",
        "i = 1.5",
        "i = 3 OR f = 2",
        "NOT i = 3",
        "i IS NULL",
        "i + 1 = 3",
        "i != 3",
    ] {
        assert!(!narrowed(f), "{f}");
    }
    assert_eq!(answer(&t, "i = 7").expect("q").1, 10);
    assert_eq!(answer(&t, "i BETWEEN 3 AND 9 AND f < 100").expect("q").1, 7);
    // Rows appended after the build are unindexed and still found.
    t.add_sync(data(1000, &[(Some(7), None, None)]), AddMode::Append)
        .expect("add");
    assert_eq!(answer(&t, "i = 7").expect("q").1, 11);
    t.delete_sync("id = 7").expect("delete");
    assert_eq!(answer(&t, "i = 7").expect("q").1, 10);
    let info = t.index_stats_sync("i_idx").expect("stats");
    assert_eq!(
        (
            info.index_type.as_str(),
            info.num_indexed_rows,
            info.num_unindexed_rows
        ),
        ("BTREE", 999, 1)
    );
    t.optimize_sync().expect("optimize");
    t.optimize_indices_sync().expect("fold");
    let info = t.index_stats_sync("i_idx").expect("stats");
    assert_eq!((info.num_indexed_rows, info.num_unindexed_rows), (1000, 0));
    assert!(RowFilter::new(&t.snapshot().expect("s"), Some("i = 7"))
        .expect("b")
        .expect("s")
        .narrowed());
    assert_eq!(answer(&t, "i = 7").expect("q").1, 10);
}

#[test]
fn btree_life_cycle_and_refusals() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = open(dir.path());
    let rows: Vec<Row> = (0..50)
        .map(|k| (Some(k), None, Some(if k % 2 == 0 { "even" } else { "odd" })))
        .collect();
    t.add_sync(data(0, &rows), AddMode::Append).expect("add");
    // No type: a scalar column gets a BTREE (as upstream).
    t.create_index_sync(&IndexRequest::new("s"))
        .expect("default");
    let v = t.version_sync().expect("v");
    assert_eq!(t.list_indices_sync().expect("l")[0].index_type, "BTREE");
    drop(t);
    let t = open(dir.path());
    assert_eq!(answer(&t, "s = 'odd'").expect("q").1, 25);
    assert!(RowFilter::new(&t.snapshot().expect("s"), Some("s = 'odd'"))
        .expect("b")
        .expect("s")
        .narrowed());
    t.drop_index_sync("s_idx").expect("drop");
    assert!(t.list_indices_sync().expect("l").is_empty());
    let old = t.checkout_sync(Some(v)).expect("checkout");
    assert_eq!(old.list_indices_sync().expect("l").len(), 1);
    assert_eq!(answer(&old, "s = 'even'").expect("q").1, 25);
    let refused = |r: IndexRequest, code: ErrorCode, want: &str| {
        let e = t.create_index_sync(&r).expect_err(want);
        assert_eq!(e.code(), code, "{e}");
        assert!(e.to_string().contains(want), "{want}: {e}");
    };
    refused(
        IndexRequest {
            num_partitions: Some(4),
            ..btree("i")
        },
        ErrorCode::InvalidInput,
        "num_partitions applies to vector indexes",
    );
    refused(
        IndexRequest {
            distance_type: Some(memwal_core::DistanceType::Cosine),
            ..btree("i")
        },
        ErrorCode::InvalidInput,
        "distance_type applies to vector indexes",
    );
    refused(btree("nope"), ErrorCode::InvalidInput, "no such column");
    refused(
        IndexRequest {
            index_type: Some(IndexType::IvfPq),
            ..IndexRequest::new("i")
        },
        ErrorCode::InvalidInput,
        "need a fixed-size-list float column",
    );
    assert!("LABEL_LIST"
        .parse::<IndexType>()
        .is_err_and(|e| e.code() == ErrorCode::NotSupported));
}

#[test]
fn a_damaged_btree_file_is_a_corrupt_error() {
    let dir = tempfile::tempdir().expect("tmp");
    let t =
        open_in(memwal_core::NativeDatabase::open(dir.path().to_str().expect("p")).expect("db"));
    let rows: Vec<Row> = (0..300).map(|k| (Some(k), None, None)).collect();
    t.add_sync(data(0, &rows), AddMode::Append).expect("add");
    t.create_index_sync(&btree("i")).expect("index");
    drop(t);
    let file = crate::support::index_files(&dir.path().join("t.lance"))
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with("-btree.arrow"))
        .expect("file");
    let mut bytes = std::fs::read(&file).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&file, &bytes).expect("write");
    let t =
        open_in(memwal_core::NativeDatabase::open(dir.path().to_str().expect("p")).expect("db"));
    let e = t.count_rows_sync(Some("i = 3")).expect_err("corrupt");
    assert_eq!(e.code(), ErrorCode::Corrupt, "{e}");
}

/// A fold writes the rows added since as a BTREE delta file (the new rows alone), read back merged
/// with the index; after 8 deltas, or once rows are gone, the next fold writes the index whole.
/// Every answer stays the unindexed twin's, across a reopen.
#[test]
fn btree_folds_write_deltas_then_rewrite() {
    let (a, b) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    let (t, twin) = (open(a.path()), open(b.path()));
    let rows = |from: i32, n: i32| -> Vec<Row> {
        (from..from + n)
            .map(|k| (Some(k % 13), None, None))
            .collect()
    };
    let mut next = 0i64;
    for x in [&t, &twin] {
        x.add_sync(data(next, &rows(0, 40)), AddMode::Append)
            .expect("add");
    }
    next += 40;
    t.create_index_sync(&btree("i")).expect("index");
    let files = |t: &NativeTable| t.manifest().expect("m").indices[0].files.clone();
    for round in 1..=9usize {
        for x in [&t, &twin] {
            x.add_sync(data(next, &rows(round as i32, 5)), AddMode::Append)
                .expect("add");
        }
        next += 5;
        t.optimize_indices_sync().expect("fold");
        let f = files(&t);
        let deltas = f.iter().filter(|f| f.is_delta()).count();
        // Rounds 1..=8 add a delta each; the 9th rewrites (8 were there).
        assert_eq!(
            (f.len(), deltas),
            if round <= 8 {
                (1 + round, round)
            } else {
                (1, 0)
            },
            "round {round}"
        );
        for q in ["i = 3", "i >= 11", "i IN (0, 7, 12)", "i BETWEEN 2 AND 4"] {
            assert_eq!(answer(&t, q), answer(&twin, q), "{q} after round {round}");
        }
    }
    // A delete, then a fold with new rows: a delta again (deleted rows' entries are masked by reads).
    for x in [&t, &twin] {
        x.delete_sync("i = 3").expect("delete");
        x.add_sync(data(next, &rows(50, 5)), AddMode::Append)
            .expect("add");
    }
    t.optimize_indices_sync().expect("fold");
    assert_eq!(files(&t).iter().filter(|f| f.is_delta()).count(), 1);
    drop(t);
    let t = open(a.path());
    for q in ["i = 3", "i >= 11", "i IN (0, 7, 12)", "i < 5 OR i > 10"] {
        assert_eq!(answer(&t, q), answer(&twin, q), "{q} after a reopen");
    }
}
