use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use memwal_core::{Data, MergeInsertParams};

use crate::support::*;

fn gen(from: i64, n: i64, age: i64) -> Data {
    let ids: Vec<i64> = (from..from + n).collect();
    let b = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Int64Array::from(vec![age; n as usize])),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("name-{i:010}")),
            )),
        ],
    )
    .expect("batch");
    Data::new(schema(), vec![b])
}

#[test]
fn hundred_rows_into_a_million() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), gen(0, 1_000_000, 1));
    let mut p = MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    // The first merge builds the key index (O(n)); later ones are O(k).
    let first = Instant::now();
    let r = t
        .merge_insert_sync(&p, gen(999_950, 100, 2))
        .expect("merge");
    let first = first.elapsed();
    assert_eq!((r.num_updated_rows, r.num_inserted_rows), (50, 50));
    let mut times = Vec::new();
    for i in 0..5 {
        let s = Instant::now();
        let r = t
            .merge_insert_sync(&p, gen(500_000 + i * 1000, 100, 3))
            .expect("merge");
        times.push(s.elapsed());
        assert_eq!(r.num_updated_rows, 100);
    }
    assert_eq!(t.count_rows_sync(None).expect("count"), 1_000_050);
    assert_eq!(t.count_rows_sync(Some("age = 3")).expect("count"), 500);
    eprintln!("1M-row table: first 100-row merge (builds index) {first:?}, then {times:?}");
}
