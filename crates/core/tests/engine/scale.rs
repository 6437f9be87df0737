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
        .merge_insert_sync(&checked(&p), gen(999_950, 100, 2))
        .expect("merge");
    let first = first.elapsed();
    assert_eq!((r.num_updated_rows, r.num_inserted_rows), (50, 50));
    let mut times = Vec::new();
    for i in 0..5 {
        let s = Instant::now();
        let r = t
            .merge_insert_sync(&checked(&p), gen(500_000 + i * 1000, 100, 3))
            .expect("merge");
        times.push(s.elapsed());
        assert_eq!(r.num_updated_rows, 100);
    }
    assert_eq!(t.count_rows_sync(None).expect("count"), 1_000_050);
    assert_eq!(t.count_rows_sync(Some("age = 3")).expect("count"), 500);
    eprintln!("1M-row table: first 100-row merge (builds index) {first:?}, then {times:?}");
}

#[test]
fn create_splits_rows_into_fragments_like_add() {
    // Table creation goes through the one commit path, so a create of more
    // than MAX_ROWS_PER_FRAGMENT (1 << 20) rows writes two fragments.
    let dir = tempfile::tempdir().expect("tmp");
    let n = (1 << 20) + 10;
    let (db, t) = new_table(dir.path(), gen(0, n, 1));
    let lengths: Vec<u64> = t
        .manifest()
        .expect("manifest")
        .fragments
        .iter()
        .map(|f| f.physical_rows)
        .collect();
    assert_eq!(lengths, vec![1 << 20, 10]);
    assert_eq!(t.version_sync().expect("v"), 1);
    drop((db, t));
    let t = crate::support::open_db(dir.path().to_str().expect("p"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(t.count_rows_sync(None).expect("count"), n as u64);
    assert_eq!(t.count_rows_sync(Some("id >= 1048570")).expect("count"), 16);
}
