//! Random sequences of merge inserts against a BTreeMap model; random
//! appends, upserts, deletes, index folds and compactions (every commit kind
//! that keeps, extends or drops the key index) against a list of rows.

use std::collections::{BTreeMap, BTreeSet};

use memwal_core::index::IndexType;
use memwal_core::{AddMode, IndexRequest, MergeInsertParams};
use proptest::prelude::*;

use crate::support::*;

#[derive(Debug, Clone)]
struct Step {
    rows: Vec<(i64, i64)>,
    update: bool,
    insert: bool,
    delete_by_source: bool,
    filter_gt: Option<i64>,
}

fn step() -> impl Strategy<Value = Step> {
    (
        proptest::collection::btree_map(0i64..40, 0i64..100, 0..12),
        any::<bool>(),
        any::<bool>(),
        proptest::bool::weighted(0.15),
        proptest::option::weighted(0.3, 0i64..100),
    )
        .prop_map(|(rows, update, insert, del, filter_gt)| Step {
            rows: rows.into_iter().collect(),
            update,
            insert: insert || !update && !del,
            delete_by_source: del,
            filter_gt,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    #[test]
    fn merge_matches_model(steps in proptest::collection::vec(step(), 1..8)) {
        let dir = tempfile::tempdir().expect("tmp");
        let (_db, t) = new_table(dir.path(), people(&[]));
        let mut model: BTreeMap<i64, i64> = BTreeMap::new();
        for s in &steps {
            let mut p = MergeInsertParams::new(vec!["id".into()]);
            p.when_matched_update_all = s.update;
            p.when_not_matched_insert_all = s.insert;
            p.when_not_matched_by_source_delete = s.delete_by_source;
            if s.update {
                p.when_matched_update_all_filt = s.filter_gt.map(|g| format!("target.age > {g}"));
            }
            let r = t.merge_insert_sync(&checked(&p), people(&s.rows)).expect("merge");
            let keys: BTreeSet<i64> = s.rows.iter().map(|r| r.0).collect();
            let (mut ins, mut upd, mut del) = (0, 0, 0);
            for (k, v) in &s.rows {
                match model.get(k).copied() {
                    Some(old) if s.update && s.filter_gt.is_none_or(|g| old > g) => { model.insert(*k, *v); upd += 1; }
                    Some(_) => {}
                    None if s.insert => { model.insert(*k, *v); ins += 1; }
                    None => {}
                }
            }
            if s.delete_by_source {
                let before = model.len();
                model.retain(|k, _| keys.contains(k));
                del = before - model.len();
            }
            prop_assert_eq!((r.num_inserted_rows, r.num_updated_rows, r.num_deleted_rows), (ins as u64, upd as u64, del as u64));
            let got: Vec<(i64, Option<i64>)> = ages(&t);
            let want: Vec<(i64, Option<i64>)> = model.iter().map(|(k, v)| (*k, Some(*v))).collect();
            prop_assert_eq!(got, want);
        }
        // Compaction keeps the rows.
        let before = dump(&t);
        t.optimize_sync().expect("optimize");
        prop_assert_eq!(dump(&t), before);
    }
}

#[derive(Debug, Clone)]
enum KeyOp {
    /// Rows appended as they are (a key may repeat, in the rows or the table).
    Append(Vec<(i64, i64)>),
    /// An upsert: each key's rows updated (all of them), or the row inserted.
    Upsert(BTreeMap<i64, i64>),
    Delete(i64),
    /// The BTREE index folded (an index-only commit).
    Fold,
    Compact,
}

fn key_op() -> impl Strategy<Value = KeyOp> {
    prop_oneof![
        3 => proptest::collection::vec((0i64..10, 0i64..100), 1..5).prop_map(KeyOp::Append),
        4 => proptest::collection::btree_map(0i64..10, 0i64..100, 1..5).prop_map(KeyOp::Upsert),
        1 => (0i64..10).prop_map(KeyOp::Delete),
        2 => Just(KeyOp::Fold),
        1 => Just(KeyOp::Compact),
    ]
}

/// `(id, age)` of every row, sorted (a key may be held by several rows).
fn rows_of(t: &memwal_core::NativeTable) -> Vec<(i64, i64)> {
    let mut v: Vec<(i64, i64)> = ages(t)
        .into_iter()
        .map(|(i, a)| (i, a.unwrap_or(-1)))
        .collect();
    v.sort_unstable();
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]
    /// The key index an upsert counts with stays exact through every commit
    /// that keeps it (folds), extends it (appends, upserts, compactions) or
    /// drops it (deletes).
    #[test]
    fn upserts_count_exactly_through_appends_folds_and_compactions(
        ops in proptest::collection::vec(key_op(), 1..14),
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let (_db, t) = new_table(dir.path(), people(&[(0, 0)]));
        t.create_index_sync(&IndexRequest { index_type: Some(IndexType::BTree), ..IndexRequest::new("age") })
            .expect("btree");
        let mut model: Vec<(i64, i64)> = vec![(0, 0)];
        let mut upsert = MergeInsertParams::new(vec!["id".into()]);
        upsert.when_matched_update_all = true;
        upsert.when_not_matched_insert_all = true;
        for op in &ops {
            match op {
                KeyOp::Append(rows) => {
                    t.add_sync(people(rows), AddMode::Append).expect("append");
                    model.extend(rows);
                }
                KeyOp::Upsert(rows) => {
                    let src: Vec<(i64, i64)> = rows.iter().map(|(k, v)| (*k, *v)).collect();
                    let r = t.merge_insert_sync(&checked(&upsert), people(&src)).expect("upsert");
                    let (mut ins, mut upd) = (0u64, 0u64);
                    for (k, v) in rows {
                        let held = model.iter_mut().filter(|r| r.0 == *k).map(|r| r.1 = *v).count();
                        if held == 0 {
                            model.push((*k, *v));
                            ins += 1;
                        }
                        upd += held as u64;
                    }
                    prop_assert_eq!((r.num_inserted_rows, r.num_updated_rows), (ins, upd), "{:?}", op);
                }
                KeyOp::Delete(k) => {
                    t.delete_sync(&format!("id = {k}")).expect("delete");
                    model.retain(|r| r.0 != *k);
                }
                KeyOp::Fold => {
                    t.optimize_indices_sync().expect("fold");
                }
                KeyOp::Compact => {
                    t.optimize_sync().expect("compact");
                }
            }
            let mut want = model.clone();
            want.sort_unstable();
            prop_assert_eq!(rows_of(&t), want, "after {:?}", op);
        }
    }
}
