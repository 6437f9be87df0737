//! Binary vectors (a fixed-size list of uint8, 8 bits a byte) searched by hamming distance: flat,
//! through an IVF_FLAT index (every partition probed: exact; rows added after the build found;
//! after a fold and a reopen), against a plain popcount oracle, on random tables and queries; and
//! every refusal (another distance on a binary column, hamming on a float one, bytes out of range,
//! index types other than IVF_FLAT).

use std::sync::Arc;

use arrow::array::{AsArray, FixedSizeListArray, Int64Array, RecordBatch, UInt8Array};
use arrow::datatypes::{Float32Type, Int64Type};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_core::index::IndexType;
use memwal_core::{
    AddMode, CreateOptions, Data, DistanceType, IndexRequest, NativeTable, QueryRequest,
    VectorQuery,
};
use proptest::prelude::*;

const BYTES: usize = 4;

fn schema() -> SchemaRef {
    let item = Arc::new(Field::new("item", DataType::UInt8, true));
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::FixedSizeList(item, BYTES as i32), true),
    ]))
}

fn data(first: i64, rows: &[[u8; BYTES]]) -> Data {
    let values = UInt8Array::from_iter_values(rows.iter().flatten().copied());
    let item = Arc::new(Field::new("item", DataType::UInt8, true));
    let v = FixedSizeListArray::try_new(item, BYTES as i32, Arc::new(values), None).expect("fsl");
    let ids = Int64Array::from_iter_values(first..first + rows.len() as i64);
    let b = RecordBatch::try_new(schema(), vec![Arc::new(ids), Arc::new(v)]).expect("batch");
    Data::new(schema(), vec![b])
}

fn hamming(a: &[u8], b: &[u8]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x ^ y).count_ones())
        .sum::<u32>() as f32
}

/// `(id, distance)` of the `k` nearest, as the engine answers them.
fn search(t: &NativeTable, q: &[u8], k: usize, all_partitions: bool) -> Vec<(i64, f32)> {
    let mut vq = VectorQuery::new(q.iter().map(|b| f32::from(*b)).collect());
    if all_partitions {
        vq.tuning.nprobes = Some(1000);
    }
    let req = QueryRequest {
        limit: Some(k),
        nearest: Some(vq),
        columns: Some(vec!["id".into()]),
        ..Default::default()
    };
    let mut out = Vec::new();
    for b in t.query_sync(&req).expect("search") {
        let ids = b.column(0).as_primitive::<Int64Type>();
        let d = b
            .column_by_name("_distance")
            .expect("_distance")
            .as_primitive::<Float32Type>();
        out.extend((0..b.num_rows()).map(|i| (ids.value(i), d.value(i))));
    }
    out
}

/// The answer is right when its distances are the `k` smallest and each is its row's own
/// (ties at the last distance may pick any of the tied rows).
fn check(rows: &[[u8; BYTES]], q: &[u8], k: usize, got: &[(i64, f32)]) -> Result<(), String> {
    let mut all: Vec<f32> = rows.iter().map(|r| hamming(r, q)).collect();
    all.sort_by(f32::total_cmp);
    let want: Vec<f32> = all.into_iter().take(k).collect();
    let dists: Vec<f32> = got.iter().map(|g| g.1).collect();
    if dists != want {
        return Err(format!("distances {dists:?}, want {want:?}"));
    }
    for (id, d) in got {
        let own = hamming(&rows[*id as usize], q);
        if own != *d {
            return Err(format!("row {id} at {d}, its distance is {own}"));
        }
    }
    Ok(())
}

fn bytes_strategy(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<[u8; BYTES]>> {
    prop::collection::vec(any::<[u8; BYTES]>(), n)
}

fn ivf_flat() -> IndexRequest {
    IndexRequest {
        index_type: Some(IndexType::IvfFlat),
        num_partitions: Some(4),
        ..IndexRequest::new("v")
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn flat_and_ivf_flat_hamming_equal_a_popcount_oracle(
        first in bytes_strategy(40..120),
        later in bytes_strategy(0..30),
        queries in prop::collection::vec(any::<[u8; BYTES]>(), 1..4),
        k in 1usize..12,
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
        let t = db.create_table_sync("t", data(0, &first), CreateOptions::default()).expect("create");
        for q in &queries {
            check(&first, q, k, &search(&t, q, k, false)).map_err(TestCaseError::fail)?;
        }
        // No distance given: a binary column's index is IVF_FLAT with hamming.
        t.create_index_sync(&IndexRequest { num_partitions: Some(4), ..IndexRequest::new("v") }).expect("index");
        let listed = t.list_indices_sync().expect("list");
        prop_assert_eq!((listed[0].index_type.as_str(), listed[0].distance_type.as_deref()), ("IVF_FLAT", Some("hamming")));
        let mut rows = first.clone();
        t.add_sync(data(rows.len() as i64, &later), AddMode::Append).expect("add");
        rows.extend_from_slice(&later);
        for q in &queries {
            check(&rows, q, k, &search(&t, q, k, true)).map_err(TestCaseError::fail)?;
        }
        t.optimize_indices_sync().expect("fold");
        let t = db.open_table_sync("t").expect("reopen");
        for q in &queries {
            check(&rows, q, k, &search(&t, q, k, true)).map_err(TestCaseError::fail)?;
            // A few probes: an answer of real rows at their own distances, never more than k.
            let few = search(&t, q, k, false);
            prop_assert!(few.len() <= k);
            for (id, d) in &few {
                prop_assert_eq!(hamming(&rows[*id as usize], q), *d);
            }
        }
    }
}

fn err(t: &NativeTable, q: VectorQuery) -> String {
    let req = QueryRequest {
        nearest: Some(q),
        ..Default::default()
    };
    t.query_sync(&req).expect_err("refused").to_string()
}

#[test]
fn binary_refusals_name_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
    let rows: Vec<[u8; BYTES]> = (0..40u8).map(|i| [i, i ^ 0xff, i / 2, 7]).collect();
    let t = db
        .create_table_sync("t", data(0, &rows), CreateOptions::default())
        .expect("create");
    let mut q = VectorQuery::new(vec![1.0; BYTES]);
    q.distance_type = Some(DistanceType::L2);
    assert!(err(&t, q).contains("search it with distance type hamming, not l2"));
    let e = err(&t, VectorQuery::new(vec![1.0, 256.0, 0.0, 0.0]));
    assert!(
        e.contains("256 at position 1") && e.contains("integers 0 to 255"),
        "{e}"
    );
    let e = err(&t, VectorQuery::new(vec![1.5, 0.0, 0.0, 0.0]));
    assert!(e.contains("1.5 at position 0"), "{e}");
    for (kind, distance) in [
        (IndexType::IvfPq, None),
        (IndexType::IvfHnswSq, None),
        (IndexType::IvfFlat, Some(DistanceType::Cosine)),
    ] {
        let req = IndexRequest {
            index_type: Some(kind),
            distance_type: distance,
            ..ivf_flat()
        };
        let e = t.create_index_sync(&req).expect_err("refused").to_string();
        assert!(e.contains("binary vectors (uint8)"), "{kind}: {e}");
    }
    // Hamming on a float column.
    let floats = tempfile::tempdir().expect("tmp");
    let fdb = crate::support::open_db(floats.path().to_str().expect("p")).expect("db");
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let sc = Arc::new(Schema::new(vec![Field::new(
        "v",
        DataType::FixedSizeList(item.clone(), 2),
        true,
    )]));
    let vals = arrow::array::Float32Array::from(vec![0.5f32; 600]);
    let fsl = FixedSizeListArray::try_new(item, 2, Arc::new(vals), None).expect("fsl");
    let b = RecordBatch::try_new(sc.clone(), vec![Arc::new(fsl)]).expect("b");
    let ft = fdb
        .create_table_sync("v", Data::new(sc, vec![b]), CreateOptions::default())
        .expect("float table");
    let mut q = VectorQuery::new(vec![0.5, 0.5]);
    q.distance_type = Some(DistanceType::Hamming);
    assert!(err(&ft, q).contains("hamming distance is only for binary vectors"));
    let req = IndexRequest {
        distance_type: Some(DistanceType::Hamming),
        ..ivf_flat()
    };
    let e = ft.create_index_sync(&req).expect_err("refused").to_string();
    assert!(
        e.contains("hamming distance is only for binary vectors"),
        "{e}"
    );
}

/// A table with a float vector column and a binary one of the same length: a query naming no column
/// searches the float one, as before binary columns were vector columns; naming the binary one
/// searches it by hamming.
#[test]
fn a_float_column_of_the_same_length_is_searched_first() {
    let item = |t: DataType| Arc::new(Field::new("item", t, true));
    let sc = Arc::new(Schema::new(vec![
        Field::new(
            "f",
            DataType::FixedSizeList(item(DataType::Float32), 4),
            true,
        ),
        Field::new("b", DataType::FixedSizeList(item(DataType::UInt8), 4), true),
    ]));
    let fv = arrow::array::Float32Array::from(vec![0.0f32, 0.0, 0.0, 2.0, 3.0, 3.0, 3.0, 3.0]);
    let bv = UInt8Array::from(vec![255u8, 255, 255, 255, 0, 0, 0, 1]);
    let f = FixedSizeListArray::try_new(item(DataType::Float32), 4, Arc::new(fv), None).expect("f");
    let b = FixedSizeListArray::try_new(item(DataType::UInt8), 4, Arc::new(bv), None).expect("b");
    let batch = RecordBatch::try_new(sc.clone(), vec![Arc::new(f), Arc::new(b)]).expect("batch");
    let dir = tempfile::tempdir().expect("tmp");
    let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
    let t = db
        .create_table_sync("t", Data::new(sc, vec![batch]), CreateOptions::default())
        .expect("create");
    let nearest = |column: Option<&str>| {
        let mut q = VectorQuery::new(vec![0.0, 0.0, 0.0, 0.0]);
        q.column = column.map(str::to_string);
        let req = QueryRequest {
            limit: Some(1),
            nearest: Some(q),
            ..Default::default()
        };
        let out = t.query_sync(&req).expect("search");
        let d = out[0].column_by_name("_distance").expect("_distance");
        d.as_primitive::<Float32Type>().value(0)
    };
    // Float: row 0 at squared L2 4. Binary: row 1 (0, 0, 0, 1) at hamming 1, row 0 at 32.
    assert_eq!(nearest(None), 4.0);
    assert_eq!(nearest(Some("b")), 1.0);
    let mut q = VectorQuery::new(vec![0.0, 0.0, 0.0, 0.0]);
    q.column = Some("b".into());
    q.distance_type = Some(DistanceType::L2);
    assert!(err(&t, q).contains("distance type hamming"));
}
