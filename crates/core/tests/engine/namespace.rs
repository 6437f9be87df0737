//! Namespaces of a native database (on a folder, or on the test bucket when
//! the suite runs on S3 / Azure): a model test of random creates, drops
//! (restrict and cascade), table creates and drops and reopenings against a
//! plain map of what should exist, and the refusals.

use std::collections::{BTreeMap, BTreeSet};

use memwal_core::{CreateOptions, ErrorCode, NativeDatabase};
use proptest::prelude::*;

use crate::support::{open_db, people};

/// The namespaces the model picks from: two roots and a child of each.
fn paths() -> Vec<Vec<String>> {
    [&["a"][..], &["b"], &["a", "c"], &["b", "c"]]
        .iter()
        .map(|p| p.iter().map(|s| s.to_string()).collect())
        .collect()
}

#[derive(Debug, Clone)]
enum NsOp {
    Create(usize),
    Drop(usize, bool),
    Table(usize, u8),
    DropTable(usize, u8),
    Reopen,
}

fn ns_op() -> impl Strategy<Value = NsOp> {
    prop_oneof![
        3 => (0..4usize).prop_map(NsOp::Create),
        2 => (0..4usize, any::<bool>()).prop_map(|(p, c)| NsOp::Drop(p, c)),
        3 => (0..4usize, 0..2u8).prop_map(|(p, t)| NsOp::Table(p, t)),
        1 => (0..4usize, 0..2u8).prop_map(|(p, t)| NsOp::DropTable(p, t)),
        1 => Just(NsOp::Reopen),
    ]
}

/// What should exist: each namespace's tables (with their row count).
type Model = BTreeMap<Vec<String>, BTreeMap<String, usize>>;

fn apply(db: &NativeDatabase, model: &mut Model, op: &NsOp) {
    let all = paths();
    match op {
        NsOp::Create(i) => {
            let p = &all[*i];
            let r = db.create_namespace_sync(p, &BTreeMap::new(), false);
            let parent_ok = p.len() == 1 || model.contains_key(&p[..1]);
            if model.contains_key(p) || !parent_ok {
                assert!(r.is_err(), "{p:?} exists or has no parent: {r:?}");
            } else {
                r.expect("create namespace");
                model.insert(p.clone(), BTreeMap::new());
            }
        }
        NsOp::Drop(i, cascade) => {
            let p = &all[*i];
            let r = db.drop_namespace_sync(p, *cascade, false);
            let held = model
                .iter()
                .any(|(k, t)| k.starts_with(p) && (k != p || !t.is_empty()));
            if !model.contains_key(p) {
                assert_eq!(r.expect_err("missing").code(), ErrorCode::NamespaceNotFound);
            } else if held && !cascade {
                assert_eq!(r.expect_err("not empty").code(), ErrorCode::InvalidInput);
            } else {
                r.expect("drop namespace");
                model.retain(|k, _| !k.starts_with(p));
            }
        }
        NsOp::Table(i, t) => {
            let (p, name) = (&all[*i], format!("t{t}"));
            let rows = 1 + *t as usize;
            let pairs: Vec<(i64, i64)> = (0..rows as i64).map(|r| (r, r)).collect();
            let r = db.in_namespace(p, |d| {
                d.create_table_sync(&name, people(&pairs), CreateOptions::default())
            });
            match model.get_mut(p) {
                Some(tables) if !tables.contains_key(&name) => {
                    r.expect("create table");
                    tables.insert(name, rows);
                }
                _ => assert!(r.is_err(), "{p:?}/{name}: {r:?}"),
            }
        }
        NsOp::DropTable(i, t) => {
            let (p, name) = (&all[*i], format!("t{t}"));
            let r = db.in_namespace(p, |d| d.drop_table_sync(&name));
            match model.get_mut(p).map(|ts| ts.remove(&name)) {
                Some(Some(_)) => r.expect("drop table"),
                _ => assert!(r.is_err(), "{p:?}/{name}: {r:?}"),
            }
        }
        NsOp::Reopen => {}
    }
}

/// Every namespace lists exactly its children, holds exactly its tables
/// with their rows; the others are not found.
fn check(db: &NativeDatabase, model: &Model) {
    let children = |of: &[String]| -> Vec<String> {
        let set: BTreeSet<String> = model
            .keys()
            .filter(|k| k.len() == of.len() + 1 && k.starts_with(of))
            .map(|k| k[of.len()].clone())
            .collect();
        set.into_iter().collect()
    };
    assert_eq!(db.list_namespaces_sync(&[]).expect("list"), children(&[]));
    for p in paths() {
        match model.get(&p) {
            Some(tables) => {
                assert_eq!(db.list_namespaces_sync(&p).expect("list"), children(&p));
                let names = db
                    .in_namespace(&p, |d| d.table_names_sync())
                    .expect("names");
                assert_eq!(names, tables.keys().cloned().collect::<Vec<_>>(), "{p:?}");
                for (name, rows) in tables {
                    let n = db
                        .in_namespace(&p, |d| d.open_table_sync(name)?.count_rows_sync(None))
                        .expect("count");
                    assert_eq!(n as usize, *rows, "{p:?}/{name}");
                }
            }
            None => {
                let e = db.describe_namespace_sync(&p).expect_err("gone");
                assert_eq!(e.code(), ErrorCode::NamespaceNotFound, "{p:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    fn namespaces_and_their_tables_match_the_model(ops in proptest::collection::vec(ns_op(), 1..16)) {
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().to_str().expect("utf8").to_string();
        let mut db = open_db(&path).expect("db");
        let mut model = Model::new();
        for op in &ops {
            if let NsOp::Reopen = op {
                db = open_db(&path).expect("reopen");
            }
            apply(&db, &mut model, op);
            check(&db, &model);
        }
    }
}

#[test]
fn properties_are_kept_and_bad_paths_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = open_db(dir.path().to_str().expect("utf8")).expect("db");
    let props = BTreeMap::from([("owner".to_string(), "ops".to_string())]);
    let ns = vec!["prod".to_string()];
    db.create_namespace_sync(&ns, &props, false)
        .expect("create");
    db.create_namespace_sync(&ns, &BTreeMap::new(), true)
        .expect("exist_ok keeps the first properties");
    assert_eq!(db.describe_namespace_sync(&ns).expect("describe"), props);
    let bad = |p: &[&str]| {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        db.create_namespace_sync(&p, &BTreeMap::new(), false)
            .expect_err("refused")
            .to_string()
    };
    assert!(bad(&[]).contains("root namespace always exists"));
    assert!(bad(&["../x"]).contains("invalid namespace name"));
    assert!(bad(&[".namespaces"]).contains("invalid namespace name"));
    let deep: Vec<&str> = ["prod"].into_iter().chain(["d"; 8]).collect();
    assert!(bad(&deep).contains("nest at most 8 deep"));
    let e = db
        .drop_namespace_sync(&[], true, false)
        .expect_err("the root stays");
    assert!(e.to_string().contains("root namespace cannot be dropped"));
    // A table named like the layout's folders cannot exist, so it never shadows one.
    assert!(db.table_names_sync().expect("names").is_empty());
}
