//! LanceDB 0.39's LSM settings on a native table: the unenforced primary
//! key and the LSM write spec are recorded in versions (seen by another
//! database on the same folder), the key survives every later write and
//! cannot be dropped, and a recorded spec routes merges as 0.39 does (a
//! local table commits the upsert at once), checked against a plain model
//! over random sequences of settings and merges.

use std::collections::BTreeMap;

use memwal_core::lsm::{primary_key, LsmWriteSpec, Sharding};
use memwal_core::{AddMode, Error, MergeInsertParams, NewColumns};
use proptest::prelude::*;

use crate::support::{checked, dump, new_table, open_db, people};

fn spec(sharding: Sharding) -> LsmWriteSpec {
    LsmWriteSpec {
        sharding,
        maintained_indexes: None,
        writer_config_defaults: BTreeMap::new(),
    }
}

fn merge(upsert: bool, insert: bool, lsm: Option<bool>) -> MergeInsertParams {
    let mut p = MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = upsert;
    p.when_not_matched_insert_all = insert;
    p.mem_wal = lsm;
    p
}

#[test]
fn the_key_and_the_spec_are_recorded_and_kept_by_later_writes() {
    let dir = tempfile::tempdir().expect("tmp");
    let (db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20)]));
    let refused = t
        .set_lsm_spec_sync(Some(spec(Sharding::Unsharded)))
        .expect_err("no key yet");
    assert!(
        refused.to_string().contains("no unenforced primary key"),
        "{refused}"
    );
    t.set_primary_key_sync(&["id".into()]).expect("key");
    let bucket = Sharding::Bucket {
        column: "id".into(),
        num_buckets: 4,
    };
    t.set_lsm_spec_sync(Some(spec(bucket.clone())))
        .expect("spec");
    // Every kind of write keeps both, and the rows stay right.
    t.add_sync(people(&[(3, 30)]), AddMode::Append)
        .expect("add");
    t.merge_insert_sync(
        &checked(&merge(true, true, None)),
        people(&[(1, 11), (4, 40)]),
    )
    .expect("merge");
    t.delete_sync("id = 2").expect("delete");
    t.update_sync(Some("id = 3"), &[("age".into(), "31".into())])
        .expect("update");
    t.compact_sync(&Default::default()).expect("compact");
    t.add_columns_sync(&NewColumns::Sql(vec![("twice".into(), "age * 2".into())]))
        .expect("add column");
    let other = open_db(dir.path().to_str().expect("path"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(
        primary_key(&other.schema_sync().expect("schema")),
        Some("id")
    );
    let recorded = other.lsm_spec_sync().expect("spec").expect("recorded");
    assert_eq!(recorded.sharding, bucket);
    assert_eq!(recorded.maintained_indexes, Some(vec![]));
    let want = vec![
        (1, Some(11), Some("n1".to_string())),
        (3, Some(31), Some("n3".to_string())),
        (4, Some(40), Some("n4".to_string())),
    ];
    assert_eq!(dump(&other), want);
    // The key cannot be dropped, changed or made nullable.
    assert!(other.drop_columns_sync(&["id".into()]).is_err());
    assert!(other.set_primary_key_sync(&["age".into()]).is_err());
    drop(db);
    // Unset, then the spec is gone for every handle.
    other.set_lsm_spec_sync(None).expect("unset");
    assert!(matches!(
        other.set_lsm_spec_sync(None),
        Err(Error::InvalidInput { .. })
    ));
    assert_eq!(t.lsm_spec_sync().expect("spec"), None);
}

/// What a step does to the table.
#[derive(Debug, Clone)]
enum Step {
    SetSpec,
    UnsetSpec,
    /// A merge of these (id, age) rows: upsert or insert-only, with
    /// use_lsm unset, true or false.
    Merge(Vec<(i64, i64)>, bool, Option<bool>),
    Reopen,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        1 => Just(Step::SetSpec),
        1 => Just(Step::UnsetSpec),
        5 => (
            prop::collection::vec((0i64..12, 0i64..100), 1..6),
            any::<bool>(),
            prop::option::of(any::<bool>())
        )
            .prop_map(|(rows, upsert, lsm)| Step::Merge(rows, upsert, lsm)),
        1 => Just(Step::Reopen),
    ]
}

/// The model's answer to a merge: `None` when it must be refused.
fn model_merge(
    rows: &BTreeMap<i64, i64>,
    input: &[(i64, i64)],
    upsert: bool,
    lsm: Option<bool>,
    has_spec: bool,
) -> Option<BTreeMap<i64, i64>> {
    let to_lsm = lsm == Some(true) || (has_spec && lsm.is_none());
    if to_lsm && !has_spec {
        return None; // no MemWAL on a local table without a spec
    }
    if to_lsm && !upsert {
        return None; // only the upsert form takes the LSM path
    }
    let mut out = rows.clone();
    let mut seen = std::collections::HashSet::new();
    for (id, age) in input {
        if !seen.insert(*id) {
            continue;
        }
        if upsert || !rows.contains_key(id) {
            out.insert(*id, *age);
        }
    }
    Some(out)
}

fn unique(input: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut seen = std::collections::HashSet::new();
    input.iter().filter(|r| seen.insert(r.0)).cloned().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn merges_are_routed_as_the_recorded_spec_says(steps in prop::collection::vec(step(), 1..24)) {
        let dir = tempfile::tempdir().expect("tmp");
        let (_db, mut t) = new_table(dir.path(), people(&[(0, 0)]));
        t.set_primary_key_sync(&["id".into()]).expect("key");
        let mut rows: BTreeMap<i64, i64> = [(0, 0)].into();
        let mut has_spec = false;
        for s in steps {
            match s {
                Step::SetSpec => {
                    let r = t.set_lsm_spec_sync(Some(spec(Sharding::Unsharded)));
                    prop_assert_eq!(r.is_ok(), !has_spec, "{:?}", r);
                    has_spec = true;
                }
                Step::UnsetSpec => {
                    let r = t.set_lsm_spec_sync(None);
                    prop_assert_eq!(r.is_ok(), has_spec, "{:?}", r);
                    has_spec = false;
                }
                Step::Merge(input, upsert, lsm) => {
                    let input = unique(&input);
                    let want = model_merge(&rows, &input, upsert, lsm, has_spec);
                    let p = merge(upsert, true, lsm);
                    let got = p
                        .validate()
                        .and_then(|m| t.merge_insert_routed_sync(m, people(&input)));
                    match want {
                        None => prop_assert!(got.is_err(), "accepted: {:?}", got),
                        Some(w) => {
                            prop_assert!(got.is_ok(), "refused: {:?}", got);
                            rows = w;
                        }
                    }
                }
                Step::Reopen => {
                    t = open_db(dir.path().to_str().expect("path"))
                        .expect("db")
                        .open_table_sync("t")
                        .expect("open");
                }
            }
            let got: BTreeMap<i64, i64> = dump(&t)
                .into_iter()
                .map(|(id, age, _)| (id, age.unwrap_or(-1)))
                .collect();
            prop_assert_eq!(&got, &rows);
            prop_assert_eq!(t.lsm_spec_sync().expect("spec").is_some(), has_spec);
        }
    }
}
