use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use memwal_core::{Data, MergeInsertParams, MergeResult, Table};

use crate::support::*;

fn params(f: impl FnOnce(&mut MergeInsertParams)) -> MergeInsertParams {
    let mut p = MergeInsertParams::new(vec!["id".into()]);
    f(&mut p);
    p
}

fn upsert() -> MergeInsertParams {
    params(|p| {
        p.when_matched_update_all = true;
        p.when_not_matched_insert_all = true;
    })
}

/// An append teaches the key index its rows (no rebuild at the next merge),
/// a key appended twice included: the merge then updates both rows.
#[test]
fn an_append_extends_the_key_index_and_merges_stay_exact() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20), (3, 30)]));
    t.merge_insert_sync(&checked(&upsert()), people(&[(1, 11)]))
        .expect("merge");
    t.add_sync(people(&[(3, 31), (4, 40)]), memwal_core::AddMode::Append)
        .expect("append");
    let v = t.version_sync().expect("version");
    assert_eq!(
        t.cached_key_index(),
        Some((vec!["id".to_string()], v)),
        "the append kept the key index"
    );
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(3, 32), (4, 41), (5, 50)]))
        .expect("merge");
    assert_eq!((r.num_updated_rows, r.num_inserted_rows), (3, 1));
    // numRows counts rows written, as @lancedb/lancedb 0.39 reports it
    // (measured: 4 for these 3 source rows), not the source's rows.
    assert_eq!(r.num_rows, 4);
    assert_eq!(
        ages(&t),
        vec![
            (1, Some(11)),
            (2, Some(20)),
            (3, Some(32)),
            (3, Some(32)),
            (4, Some(41)),
            (5, Some(50))
        ]
    );
}

#[test]
fn upsert_updates_and_inserts() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20), (3, 30)]));
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(2, 21), (4, 40)]))
        .expect("merge");
    assert_eq!(
        r,
        MergeResult {
            version: 2,
            num_inserted_rows: 1,
            num_updated_rows: 1,
            num_deleted_rows: 0,
            num_attempts: 1,
            num_rows: 2
        }
    );
    assert_eq!(
        ages(&t),
        vec![(1, Some(10)), (2, Some(21)), (3, Some(30)), (4, Some(40))]
    );
    // A second upsert uses the index as updated by the first commit.
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(4, 41), (5, 50), (1, 11)]))
        .expect("merge");
    assert_eq!(
        (r.num_inserted_rows, r.num_updated_rows, r.version),
        (1, 2, 3)
    );
    assert_eq!(
        ages(&t),
        vec![
            (1, Some(11)),
            (2, Some(21)),
            (3, Some(30)),
            (4, Some(41)),
            (5, Some(50))
        ]
    );
}

#[test]
fn insert_only_leaves_matches_alone() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10)]));
    let p = params(|p| p.when_not_matched_insert_all = true);
    let r = t
        .merge_insert_sync(&checked(&p), people(&[(1, 99), (2, 20)]))
        .expect("merge");
    assert_eq!((r.num_inserted_rows, r.num_updated_rows), (1, 0));
    // The matched source row writes nothing, so it is not counted.
    assert_eq!(r.num_rows, 1);
    assert_eq!(ages(&t), vec![(1, Some(10)), (2, Some(20))]);
}

#[test]
fn conditional_update_with_source_and_target_filter() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 0), (3, 30)]));
    let p = params(|p| {
        p.when_matched_update_all = true;
        p.when_matched_update_all_filt = Some("target.age > 0 AND source.age > target.age".into());
    });
    let r = t
        .merge_insert_sync(&checked(&p), people(&[(1, 15), (2, 25), (3, 5)]))
        .expect("merge");
    assert_eq!(r.num_updated_rows, 1);
    assert_eq!(ages(&t), vec![(1, Some(15)), (2, Some(0)), (3, Some(30))]);
}

#[test]
fn delete_not_matched_by_source_with_and_without_filter() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20), (3, 30), (4, 40)]));
    let p = params(|p| {
        p.when_matched_update_all = true;
        p.when_not_matched_by_source_delete = true;
        p.when_not_matched_by_source_delete_filt = Some("id < 3".into());
    });
    let r = t
        .merge_insert_sync(&checked(&p), people(&[(2, 22)]))
        .expect("merge");
    assert_eq!((r.num_updated_rows, r.num_deleted_rows), (1, 1));
    assert_eq!(ages(&t), vec![(2, Some(22)), (3, Some(30)), (4, Some(40))]);
    let p = params(|p| p.when_not_matched_by_source_delete = true);
    let r = t
        .merge_insert_sync(&checked(&p), people(&[(3, 0)]))
        .expect("merge");
    assert_eq!(r.num_deleted_rows, 2);
    assert_eq!(ages(&t), vec![(3, Some(30))]);
}

#[test]
fn composite_keys() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(
        dir.path(),
        rows(
            &[1, 1, 2],
            &[Some(1), Some(2), Some(3)],
            &[Some("a"), Some("b"), Some("a")],
        ),
    );
    let mut p = upsert();
    p.on = vec!["id".into(), "name".into()];
    let r = t
        .merge_insert_sync(
            &checked(&p),
            rows(
                &[1, 2, 2],
                &[Some(20), Some(30), Some(40)],
                &[Some("b"), Some("a"), Some("b")],
            ),
        )
        .expect("merge");
    assert_eq!((r.num_inserted_rows, r.num_updated_rows), (1, 2));
    let mut d = dump(&t);
    d.sort();
    assert_eq!(
        d,
        vec![
            (1, Some(1), Some("a".into())),
            (1, Some(20), Some("b".into())),
            (2, Some(30), Some("a".into())),
            (2, Some(40), Some("b".into())),
        ]
    );
}

#[test]
fn null_keys_never_match() {
    let dir = tempfile::tempdir().expect("tmp");
    let s = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let mk = |k: Vec<Option<&str>>, v: Vec<i64>| {
        Data::new(
            s.clone(),
            vec![RecordBatch::try_new(
                s.clone(),
                vec![
                    Arc::new(StringArray::from(k)),
                    Arc::new(Int64Array::from(v)),
                ],
            )
            .expect("b")],
        )
    };
    let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
    let t = db
        .create_table_sync(
            "n",
            mk(vec![None, Some("a")], vec![1, 2]),
            Default::default(),
        )
        .expect("create");
    let mut p = upsert();
    p.on = vec!["k".into()];
    let r = t
        .merge_insert_sync(
            &checked(&p),
            mk(vec![None, None, Some("a")], vec![10, 11, 20]),
        )
        .expect("merge");
    // Both null-key rows are new rows (and are not "duplicates" of each other).
    assert_eq!((r.num_inserted_rows, r.num_updated_rows), (2, 1));
    assert_eq!(t.count_rows_sync(None).expect("count"), 4);
    assert_eq!(t.count_rows_sync(Some("k IS NULL")).expect("count"), 3);
}

#[test]
fn duplicate_source_keys_are_an_error_naming_the_key() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10)]));
    let e = t
        .merge_insert_sync(&checked(&upsert()), people(&[(1, 11), (7, 1), (1, 12)]))
        .expect_err("dup");
    assert_eq!(
        e.to_string(),
        "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on (id = 1)"
    );
    assert_eq!(t.version_sync().expect("v"), 1);
    assert_eq!(ages(&t), vec![(1, Some(10))]);
}

#[test]
fn schema_subset_fills_or_keeps() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20)]));
    let s = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("age", DataType::Int64, true),
    ]));
    let b = RecordBatch::try_new(
        s.clone(),
        vec![
            Arc::new(Int64Array::from(vec![2, 3])),
            Arc::new(Int64Array::from(vec![22, 33])),
        ],
    )
    .expect("b");
    t.merge_insert_sync(&checked(&upsert()), Data::new(s, vec![b]))
        .expect("merge");
    assert_eq!(
        dump(&t),
        vec![
            (1, Some(10), Some("n1".into())),
            (2, Some(22), Some("n2".into())),
            (3, Some(33), None)
        ]
    );
}

#[test]
fn schema_mismatch_names_the_column() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10)]));
    let s = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("extra", DataType::Int64, true),
    ]));
    let b = RecordBatch::try_new(
        s.clone(),
        vec![
            Arc::new(Int64Array::from(vec![2])),
            Arc::new(Int64Array::from(vec![1])),
        ],
    )
    .expect("b");
    let e = t
        .merge_insert_sync(&checked(&upsert()), Data::new(s, vec![b]))
        .expect_err("extra");
    assert!(e.to_string().contains("column 'extra'"), "{e}");
    let s = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("age", DataType::Utf8, true),
    ]));
    let b = RecordBatch::try_new(
        s.clone(),
        vec![
            Arc::new(Int64Array::from(vec![2])),
            Arc::new(StringArray::from(vec!["x"])),
        ],
    )
    .expect("b");
    let e = t
        .merge_insert_sync(&checked(&upsert()), Data::new(s, vec![b]))
        .expect_err("type");
    assert!(e.to_string().contains("column 'age' has type Utf8"), "{e}");
    let s = Arc::new(Schema::new(vec![Field::new("age", DataType::Int64, true)]));
    let b = RecordBatch::try_new(s.clone(), vec![Arc::new(Int64Array::from(vec![2]))]).expect("b");
    let e = t
        .merge_insert_sync(&checked(&upsert()), Data::new(s, vec![b]))
        .expect_err("missing key");
    assert!(e.to_string().contains("column 'id' is missing"), "{e}");
    assert_eq!(t.version_sync().expect("v"), 1);
}

#[test]
fn empty_source_and_empty_target() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[]));
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[]))
        .expect("empty both");
    assert_eq!((r.version, r.num_inserted_rows), (1, 0));
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(1, 1), (2, 2)]))
        .expect("into empty");
    assert_eq!((r.version, r.num_inserted_rows), (2, 2));
    let r = t
        .merge_insert_sync(&checked(&upsert()), Data::new(schema(), vec![]))
        .expect("no batches");
    assert_eq!(
        (r.version, r.num_inserted_rows, r.num_updated_rows),
        (2, 0, 0)
    );
}

#[test]
fn use_index_false_gives_the_same_answer() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20)]));
    let mut p = upsert();
    p.use_index = false;
    let r = t
        .merge_insert_sync(&checked(&p), people(&[(2, 21), (3, 30)]))
        .expect("merge");
    assert_eq!((r.num_inserted_rows, r.num_updated_rows), (1, 1));
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(3, 31)]))
        .expect("merge");
    assert_eq!(r.num_updated_rows, 1);
    assert_eq!(ages(&t), vec![(1, Some(10)), (2, Some(21)), (3, Some(31))]);
}

#[test]
fn timeout_commits_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10)]));
    let mut p = upsert();
    p.timeout = Some(std::time::Duration::from_nanos(1));
    let e = t
        .merge_insert_sync(&checked(&p), people(&[(1, 11)]))
        .expect_err("timeout");
    assert_eq!(e.code(), "Timeout");
    assert_eq!(t.version_sync().expect("v"), 1);
}

#[tokio::test]
async fn memwal_rules_in_order_with_exact_messages() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10)]));
    let t: Arc<dyn Table> = Arc::new(t);
    type Setup = Box<dyn Fn(&mut MergeInsertParams)>;
    let cases: Vec<(Setup, &str, &str)> = vec![
        (Box::new(|p| {
            p.when_not_matched_insert_all = true;
        }), "InvalidInput", "MemWAL requires when_matched_update_all() to be set"),
        (Box::new(|p| {
            p.when_matched_update_all = true;
            p.when_matched_update_all_filt = Some("target.age > 0".into());
            p.when_not_matched_insert_all = true;
        }), "InvalidInput", "MemWAL does not support conditional when_matched_update_all (no filter allowed)"),
        (Box::new(|p| {
            p.when_matched_update_all = true;
        }), "InvalidInput", "MemWAL requires when_not_matched_insert_all() to be set"),
        (Box::new(|p| {
            p.when_matched_update_all = true;
            p.when_not_matched_insert_all = true;
            p.when_not_matched_by_source_delete = true;
        }), "InvalidInput", "MemWAL does not support when_not_matched_by_source_delete()"),
        (Box::new(|p| {
            p.when_matched_update_all = true;
            p.when_not_matched_insert_all = true;
        }), "NotSupported", "MemWAL is not supported for native (local) tables. MemWAL is only available for remote (LanceDB Cloud) tables."),
        // Order: the filter rule wins over the missing insert clause.
        (Box::new(|p| {
            p.when_matched_update_all = true;
            p.when_matched_update_all_filt = Some("x".into());
        }), "InvalidInput", "MemWAL does not support conditional when_matched_update_all (no filter allowed)"),
    ];
    for (setup, code, msg) in cases {
        let p = params(|p| {
            setup(p);
            p.mem_wal = Some(true);
        });
        // Clause rules fail validation; the native table refuses MemWAL itself.
        let e = match p.validate() {
            Ok(m) => t
                .merge_insert(m, people(&[(1, 11), (2, 2)]))
                .await
                .expect_err(msg),
            Err(e) => e,
        };
        assert_eq!(e.to_string(), msg);
        assert_eq!(e.code(), code);
        assert_eq!(t.version().await.expect("v"), 1);
    }
    let e = MergeInsertParams::new(vec!["id".into()])
        .validate()
        .expect_err("no clause");
    assert_eq!(
        e.to_string(),
        "The merge insert job is not configured to change the data in any way"
    );
    assert_eq!(t.count_rows(None).await.expect("count"), 1);
}

#[test]
fn a_source_row_matching_two_target_rows_updates_both() {
    // Keys need not be unique in the target (add() does not check); a plain
    // upsert then replaces each matched row, as the general path does.
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20)]));
    t.add_sync(people(&[(1, 11)]), memwal_core::AddMode::Append)
        .expect("add a second row with key 1");
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(1, 99), (3, 30)]))
        .expect("merge");
    assert_eq!((r.num_updated_rows, r.num_inserted_rows), (2, 1));
    assert_eq!(
        ages(&t),
        vec![(1, Some(99)), (1, Some(99)), (2, Some(20)), (3, Some(30))]
    );
    // And a plain upsert (one match per key) leaves exactly the source's rows.
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(2, 21), (4, 40)]))
        .expect("merge");
    assert_eq!((r.num_updated_rows, r.num_inserted_rows), (1, 1));
    assert_eq!(
        ages(&t),
        vec![
            (1, Some(99)),
            (1, Some(99)),
            (2, Some(21)),
            (3, Some(30)),
            (4, Some(40))
        ]
    );
}
