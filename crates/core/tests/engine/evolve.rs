//! Schema evolution on native tables: rows, deletions and indexes survive
//! add / alter / drop columns; older versions read with their schema; a
//! change whose files fail to write leaves the table as it was.

use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::Int64Type;
use arrow_schema::DataType;
use memwal_core::storage::{FaultyStorage, LocalStorage, Op, Storage};
use memwal_core::{ColumnAlteration, NewColumns};
use memwal_core::{IndexRequest, IndexType, NativeDatabase, QueryRequest};

use crate::support::{dump, new_table, people};

fn column_i64(t: &memwal_core::NativeTable, name: &str) -> Vec<i64> {
    let mut out: Vec<i64> = t
        .query_sync(&QueryRequest::default())
        .expect("query")
        .iter()
        .flat_map(|b| {
            b.column_by_name(name)
                .expect("column")
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        })
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn schema_changes_keep_rows_deletions_and_indexes() {
    let dir = tempfile::tempdir().expect("tmp");
    let (db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20), (3, 30), (4, 40)]));
    t.create_index_sync(&IndexRequest {
        index_type: Some(IndexType::BTree),
        ..IndexRequest::new("id")
    })
    .expect("btree");
    t.delete_sync("id = 2").expect("delete");
    let before = t.version_sync().expect("v");

    t.add_columns_sync(&NewColumns::Sql(vec![("twice".into(), "age * 2".into())]))
        .expect("add");
    assert_eq!(column_i64(&t, "twice"), vec![20, 60, 80]);
    t.alter_columns_sync(&[ColumnAlteration {
        path: "age".into(),
        rename: Some("years".into()),
        ..Default::default()
    }])
    .expect("rename");
    assert_eq!(column_i64(&t, "years"), vec![10, 30, 40]);
    // The deleted row stays deleted; the index still covers every row.
    assert_eq!(t.count_rows_sync(None).expect("count"), 3);
    assert_eq!(t.count_rows_sync(Some("id = 2")).expect("count"), 0);
    assert_eq!(t.count_rows_sync(Some("id = 3")).expect("count"), 1);
    let idx = t.list_indices_sync().expect("indices");
    assert_eq!(
        (
            idx.len(),
            idx[0].num_indexed_rows,
            idx[0].num_unindexed_rows
        ),
        (1, 3, 0)
    );

    // Retyping the indexed column drops its index (its values changed).
    t.alter_columns_sync(&[ColumnAlteration {
        path: "id".into(),
        data_type: Some(DataType::Int32),
        ..Default::default()
    }])
    .expect("retype");
    assert!(t.list_indices_sync().expect("indices").is_empty());
    t.drop_columns_sync(&["name".into()]).expect("drop");
    let names: Vec<String> = t
        .schema_sync()
        .expect("schema")
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["id", "years", "twice"]);

    // Another process (a fresh database) reads the same; the old version
    // reads with its schema and rows.
    let again = crate::support::open_db(dir.path().to_str().expect("p"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(column_i64(&again, "years"), vec![10, 30, 40]);
    let old = t.checkout_sync(Some(before)).expect("checkout");
    assert_eq!(
        dump(&old),
        vec![
            (1, Some(10), Some("n1".into())),
            (3, Some(30), Some("n3".into())),
            (4, Some(40), Some("n4".into()))
        ]
    );
    drop(db);
}

#[test]
fn a_schema_change_that_fails_to_write_changes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = crate::support::new_local_table(dir.path(), people(&[(1, 10), (2, 20)]));
    let rows = dump(&t);
    let v = t.version_sync().expect("v");
    let local: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).expect("local"));
    let faulty: Arc<dyn Storage> = Arc::new(FaultyStorage::no_space(local, |op, path| {
        op == Op::Put && path.contains("/data/")
    }));
    let db = NativeDatabase::with_storage("faulty", faulty);
    let ft = db.open_table_sync("t").expect("open");
    let e = ft
        .add_columns_sync(&NewColumns::Sql(vec![("x".into(), "age + 1".into())]))
        .expect_err("disk full");
    assert!(
        e.to_string().contains("No space") || e.to_string().contains("space"),
        "{e}"
    );
    assert_eq!((t.version_sync().expect("v"), dump(&t)), (v, rows.clone()));
    // A bad request is refused before anything is written.
    let e = t
        .alter_columns_sync(&[ColumnAlteration {
            path: "age".into(),
            data_type: Some(DataType::Utf8),
            ..Default::default()
        }])
        .expect_err("cross-kind cast");
    assert!(e.to_string().contains("cannot change type"), "{e}");
    assert_eq!((t.version_sync().expect("v"), dump(&t)), (v, rows));
}

/// Swapping two indexed columns' names in one call: each index follows its
/// column's values (it was left on the name, so `id = 3` found nothing), and
/// so does every later reader.
#[test]
fn a_rename_swap_moves_each_index_with_its_column() {
    let dir = tempfile::tempdir().expect("tmp");
    let (db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20), (3, 30), (4, 40)]));
    for col in ["id", "age"] {
        t.create_index_sync(&IndexRequest {
            index_type: Some(IndexType::BTree),
            ..IndexRequest::new(col)
        })
        .expect("btree");
    }
    let swap = |a: &str, b: &str| ColumnAlteration {
        path: a.into(),
        rename: Some(b.into()),
        ..Default::default()
    };
    t.alter_columns_sync(&[swap("id", "age"), swap("age", "id")])
        .expect("swap");
    // `age` now holds the ids, `id` the ages; the indexes answer the same.
    for (filter, want) in [
        ("age = 3", 1),
        ("id = 30", 1),
        ("id = 3", 0),
        ("age = 30", 0),
    ] {
        assert_eq!(
            t.count_rows_sync(Some(filter)).expect("count"),
            want,
            "{filter}"
        );
    }
    let mut idx: Vec<(String, Vec<String>)> = t
        .list_indices_sync()
        .expect("indices")
        .into_iter()
        .map(|i| (i.name, i.columns))
        .collect();
    idx.sort();
    // Each index keeps its name and now covers the column holding its values.
    assert_eq!(
        idx,
        vec![
            ("age_idx".to_string(), vec!["id".to_string()]),
            ("id_idx".to_string(), vec!["age".to_string()]),
        ]
    );
    drop(db);
    let again = crate::support::open_db(dir.path().to_str().expect("p"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(again.count_rows_sync(Some("age = 4")).expect("count"), 1);
    assert_eq!(again.count_rows_sync(Some("id = 40")).expect("count"), 1);
}

/// A float vector becomes a list of floats and back (0.39's `alterColumns` casts both ways): values
/// kept; a list of another length than the vector's is an error naming its row; narrowing through a
/// list is refused (the per-value range check covers vectors only).
#[test]
fn float_vectors_and_lists_cast_both_ways() {
    use arrow::array::{Array, FixedSizeListArray, Float32Array, RecordBatch};
    use arrow::datatypes::Float64Type;
    use arrow_schema::{Field, Schema};
    use memwal_core::{CreateOptions, Data};
    let dir = tempfile::tempdir().expect("tmp");
    let db = crate::support::open_db(dir.path().to_str().expect("p")).expect("db");
    let item = |t: DataType| Arc::new(Field::new("item", t, true));
    let fsl = |t: DataType| DataType::FixedSizeList(item(t), 2);
    let sc = Arc::new(Schema::new(vec![Field::new(
        "v",
        fsl(DataType::Float32),
        true,
    )]));
    let vals = Float32Array::from(vec![2.5f32, 3.25, -1.0, 0.5]);
    let v =
        FixedSizeListArray::try_new(item(DataType::Float32), 2, Arc::new(vals), None).expect("v");
    let b = RecordBatch::try_new(sc.clone(), vec![Arc::new(v)]).expect("b");
    let t = db
        .create_table_sync("l", Data::new(sc, vec![b]), CreateOptions::default())
        .expect("create");
    let alter = |dt: DataType| {
        t.alter_columns_sync(&[ColumnAlteration {
            path: "v".into(),
            rename: None,
            nullable: None,
            data_type: Some(dt),
        }])
    };
    let list32 = DataType::List(item(DataType::Float32));
    alter(list32.clone()).expect("vector to list");
    assert_eq!(
        t.schema_sync().expect("schema").field(0).data_type(),
        &list32
    );
    alter(DataType::List(item(DataType::Float16))).expect_err("narrowing through a list");
    alter(fsl(DataType::Float64)).expect("list to a wider vector");
    let got: Vec<f64> = dump_f64(&t);
    assert_eq!(got, vec![2.5, 3.25, -1.0, 0.5]);
    alter(DataType::FixedSizeList(item(DataType::Float64), 3)).expect_err("another dimension");
    // A list of floats with a row of another length cannot become a vector of 2: its row is named.
    let lists =
        arrow::array::ListArray::from_iter_primitive::<arrow::datatypes::Float32Type, _, _>(vec![
            Some(vec![Some(1.0), Some(2.0)]),
            Some(vec![Some(3.0)]),
        ]);
    let sc = Arc::new(Schema::new(vec![Field::new(
        "v",
        lists.data_type().clone(),
        true,
    )]));
    let b = RecordBatch::try_new(sc.clone(), vec![Arc::new(lists)]).expect("b");
    let u = db
        .create_table_sync("u", Data::new(sc, vec![b]), CreateOptions::default())
        .expect("create");
    let e = u
        .alter_columns_sync(&[ColumnAlteration {
            path: "v".into(),
            rename: None,
            nullable: None,
            data_type: Some(fsl(DataType::Float32)),
        }])
        .expect_err("a row of length 1");
    assert!(e.to_string().contains("_rowid"), "{e}");
    assert_eq!(u.count_rows_sync(None).expect("count"), 2);

    fn dump_f64(t: &memwal_core::NativeTable) -> Vec<f64> {
        let b = t.query_sync(&QueryRequest::default()).expect("rows");
        b.iter()
            .flat_map(|b| {
                let l = b.column(0).as_fixed_size_list();
                l.values().as_primitive::<Float64Type>().values().to_vec()
            })
            .collect()
    }
}
