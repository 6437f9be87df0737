//! Each planning step alone, on hand-built fragments and key indexes.

use std::sync::Arc;

use arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use roaring::RoaringBitmap;

use super::*;
use crate::merge::MergeInsertParams;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("v", DataType::Int64, true),
        Field::new("tag", DataType::Utf8, true),
    ]))
}

fn rows(r: &[(Option<i64>, i64, &str)]) -> RecordBatch {
    let id = Int64Array::from(r.iter().map(|x| x.0).collect::<Vec<_>>());
    let v = Int64Array::from(r.iter().map(|x| x.1).collect::<Vec<_>>());
    let tag = StringArray::from(r.iter().map(|x| x.2).collect::<Vec<_>>());
    RecordBatch::try_new(schema(), vec![Arc::new(id), Arc::new(v), Arc::new(tag)])
        .expect("test value")
}

/// Fragment 7: ids 1, 2, 3 (tag "t"), with row 2 (id 3) deleted when `del`.
fn target(del: bool) -> (Vec<LoadedFragment>, KeyIndex, KeyEncoder) {
    let mut deleted = RoaringBitmap::new();
    if del {
        deleted.insert(2);
    }
    let f = LoadedFragment {
        id: 7,
        batch: rows(&[(Some(1), 10, "t"), (Some(2), 20, "t"), (Some(3), 30, "t")]),
        deleted: Arc::new(deleted),
    };
    let on = vec!["id".to_string()];
    let enc = KeyEncoder::new(&schema(), &on).expect("test value");
    let mut idx = KeyIndex::new(&on, 1);
    idx.add_batch(&enc, f.id, &f.batch, &f.deleted)
        .expect("test value");
    (vec![f], idx, enc)
}

fn merge(f: impl FnOnce(&mut MergeInsertParams)) -> MergeInsert {
    let mut p = MergeInsertParams::new(vec!["id".into()]);
    f(&mut p);
    p.validate().expect("test value")
}

/// [`plan`] with a source that has every column.
fn plan_whole(
    p: &MergeInsert,
    frags: &[LoadedFragment],
    idx: &KeyIndex,
    src: &RecordBatch,
) -> Result<Planned> {
    let present = [true; 3];
    let s = Source {
        rows: src,
        present: &present,
    };
    plan(p, &schema(), frags, idx, s)
}

/// The planned new rows as one batch (there must be some).
fn new_rows(out: &mut Planned) -> RecordBatch {
    out.new_rows(&schema())
        .expect("concatenate")
        .expect("some new rows")
}

fn ids(b: &RecordBatch) -> Vec<Option<i64>> {
    let a = b
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("test value");
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i)))
        .collect()
}

fn column_i64(b: &RecordBatch, j: usize) -> Vec<i64> {
    let a = b
        .column(j)
        .as_any()
        .downcast_ref::<Int64Array>()
        .expect("test value");
    a.values().to_vec()
}

fn tags(b: &RecordBatch) -> Vec<Option<String>> {
    let a = b
        .column(2)
        .as_any()
        .downcast_ref::<StringArray>()
        .expect("test value");
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
        .collect()
}

#[test]
fn duplicate_source_keys_name_the_key_and_nulls_do_not_count() {
    let (_, _, enc) = target(false);
    let src = rows(&[
        (Some(5), 1, "a"),
        (None, 2, "b"),
        (None, 3, "c"),
        (Some(5), 4, "d"),
    ]);
    let keys = enc.encode(&src).expect("test value");
    let err = source_keys(&enc, &src, &keys)
        .expect_err("an error")
        .to_string();
    assert!(err.contains("Ambiguous merge inserts"), "{err}");
    assert!(err.contains('5'), "{err}");
    let ok = rows(&[(Some(5), 1, "a"), (None, 2, "b"), (None, 3, "c")]);
    let keys = enc.encode(&ok).expect("test value");
    assert_eq!(source_keys(&enc, &ok, &keys).expect("test value").len(), 1);
}

#[test]
fn null_and_deleted_keys_never_match() {
    let (_, idx, enc) = target(true);
    let src = rows(&[
        (Some(2), 0, ""),
        (None, 0, ""),
        (Some(3), 0, ""),
        (Some(9), 0, ""),
    ]);
    let m = match_keys(&enc.encode(&src).expect("test value"), &idx);
    assert_eq!(m.source, vec![0]);
    assert_eq!(m.target, vec![RowAddr { frag: 7, row: 1 }]);
    assert_eq!(m.unmatched, vec![1, 2, 3]);
}

#[test]
fn plain_upsert_takes_the_source_batch_as_it_is() {
    let (frags, idx, _) = target(false);
    let p = merge(|p| {
        p.when_matched_update_all = true;
        p.when_not_matched_insert_all = true;
    });
    let src = rows(&[(Some(2), 21, "s"), (Some(4), 40, "s")]);
    let present = [true; 3];
    let s = Source {
        rows: &src,
        present: &present,
    };
    let enc = KeyEncoder::new(&schema(), &p.on).expect("test value");
    let m = match_keys(&enc.encode(&src).expect("test value"), &idx);
    assert!(is_plain_upsert(&p, s, &m));
    let mut out = plan(&p, &schema(), &frags, &idx, s).expect("test value");
    assert_eq!((out.updated, out.inserted, out.deleted), (1, 1, 0));
    assert_eq!(out.new_parts.len(), 1);
    assert_eq!(out.deletions[&7].iter().collect::<Vec<_>>(), vec![1]);
    assert_eq!(new_rows(&mut out), src);
}

#[test]
fn a_missing_column_takes_the_general_path_and_keeps_the_target_value() {
    let (frags, idx, _) = target(false);
    let p = merge(|p| {
        p.when_matched_update_all = true;
        p.when_not_matched_insert_all = true;
    });
    // The source has no `tag`: aligned, its column is null and absent.
    let src = rows(&[(Some(1), 11, ""), (Some(8), 80, "")]);
    let present = [true, true, false];
    let s = Source {
        rows: &src,
        present: &present,
    };
    let mut out = plan(&p, &schema(), &frags, &idx, s).expect("test value");
    assert_eq!((out.updated, out.inserted), (1, 1));
    let new = new_rows(&mut out);
    assert_eq!(ids(&new), vec![Some(1), Some(8)]);
    assert_eq!(column_i64(&new, 1), vec![11, 80]);
    // The update keeps the target's tag; the insert has the source's.
    assert_eq!(tags(&new)[0].as_deref(), Some("t"));
}

#[test]
fn the_update_filter_tells_source_from_target() {
    let (frags, idx, _) = target(false);
    let p = merge(|p| {
        p.when_matched_update_all = true;
        p.when_matched_update_all_filt = Some("source.v > target.v".into());
    });
    // id 1: 5 < 10 (kept as is); id 2: 25 > 20 (updated).
    let src = rows(&[(Some(1), 5, "s"), (Some(2), 25, "s"), (Some(6), 60, "s")]);
    let mut out = plan_whole(&p, &frags, &idx, &src).expect("test value");
    assert_eq!((out.updated, out.inserted, out.deleted), (1, 0, 0));
    let new = new_rows(&mut out);
    assert_eq!(ids(&new), vec![Some(2)]);
    assert_eq!(column_i64(&new, 1), vec![25]);
    assert_eq!(
        out.removed,
        vec![(out.removed[0].0.clone(), RowAddr { frag: 7, row: 1 })]
    );
    assert_eq!(out.new_keys.len(), 1);
}

#[test]
fn insert_only_leaves_matched_rows_alone() {
    let (frags, idx, _) = target(false);
    let p = merge(|p| p.when_not_matched_insert_all = true);
    let src = rows(&[(Some(1), 99, "s"), (None, 7, "n")]);
    let mut out = plan_whole(&p, &frags, &idx, &src).expect("test value");
    assert_eq!((out.updated, out.inserted), (0, 1));
    assert!(out.deletions.is_empty());
    assert_eq!(out.new_keys, vec![None]);
    assert_eq!(ids(&new_rows(&mut out)), vec![None]);
}

#[test]
fn delete_by_source_skips_deleted_rows_and_honours_its_filter() {
    let (frags, idx, _) = target(true);
    let src = rows(&[(Some(2), 0, "")]);
    let p = merge(|p| p.when_not_matched_by_source_delete = true);
    let out = plan_whole(&p, &frags, &idx, &src).expect("test value");
    // id 1 goes; id 2 is in the source; id 3 is already deleted.
    assert_eq!(out.deleted, 1);
    assert_eq!(out.deletions[&7].iter().collect::<Vec<_>>(), vec![0]);
    let p = merge(|p| {
        p.when_not_matched_by_source_delete = true;
        p.when_not_matched_by_source_delete_filt = Some("v > 10".into());
    });
    let out = plan_whole(&p, &frags, &idx, &src).expect("test value");
    assert_eq!(out.deleted, 0);
    assert!(out.is_empty());
}

#[test]
fn a_stale_index_pointing_at_a_missing_fragment_is_an_error_not_a_panic() {
    let (frags, _, enc) = target(false);
    let mut idx = KeyIndex::new(&["id".to_string()], 1);
    let src = rows(&[(Some(1), 0, "")]);
    let key = enc
        .encode(&src)
        .expect("test value")
        .remove(0)
        .expect("test value");
    idx.insert(key, RowAddr { frag: 99, row: 0 });
    let p = merge(|p| {
        p.when_matched_update_all = true;
        p.when_matched_update_all_filt = Some("source.v > 0".into());
    });
    let err = plan_whole(&p, &frags, &idx, &src).expect_err("an error");
    assert!(err.to_string().contains("missing fragment 99"), "{err}");
}
