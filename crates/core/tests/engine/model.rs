//! Random sequences of merge inserts against a BTreeMap model.

use std::collections::{BTreeMap, BTreeSet};

use memwal_core::MergeInsertParams;
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
