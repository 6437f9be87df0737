use std::sync::Arc;

use arrow::array::{AsArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::Int64Type;
use arrow_schema::{DataType, Field, Schema};

use super::*;

fn batch() -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("age", DataType::Int64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(vec![1, 2, 3, 4])),
            Arc::new(Int64Array::from(vec![Some(10), None, Some(30), Some(0)])),
            Arc::new(StringArray::from(vec![
                Some("alice"),
                Some("bob"),
                None,
                Some("Anna"),
            ])),
            Arc::new(Float64Array::from(vec![1.5, 2.5, 3.5, 4.5])),
        ],
    )
    .expect("batch")
}

fn rows(sql: &str) -> Vec<i64> {
    let b = batch();
    let p = Predicate::parse(sql, &b.schema(), Resolve::Plain).expect(sql);
    let m = p.mask(&b).expect("mask");
    let f = arrow::compute::filter_record_batch(&b, &m).expect("filter");
    f.column(0).as_primitive::<Int64Type>().values().to_vec()
}

#[test]
fn comparisons_and_logic() {
    assert_eq!(rows("age > 5"), vec![1, 3]);
    assert_eq!(rows("age >= 0 AND score < 4"), vec![1, 3]);
    assert_eq!(rows("age IS NULL OR id = 4"), vec![2, 4]);
    assert_eq!(rows("NOT (id = 1)"), vec![2, 3, 4]);
    assert_eq!(rows("id IN (1, 3, 9)"), vec![1, 3]);
    assert_eq!(rows("id NOT IN (1, 3)"), vec![2, 4]);
    assert_eq!(rows("id BETWEEN 2 AND 3"), vec![2, 3]);
    assert_eq!(rows("name LIKE 'a%'"), vec![1]);
    assert_eq!(rows("name ILIKE 'a%'"), vec![1, 4]);
    assert_eq!(rows("score > 2"), vec![2, 3, 4]);
    assert_eq!(rows("id * 2 + 1 = 5"), vec![2]);
    assert_eq!(rows("name = 'bob'"), vec![2]);
    assert_eq!(rows("lower(name) = 'anna'"), vec![4]);
    assert_eq!(rows("coalesce(age, -1) < 0"), vec![2]);
    assert_eq!(rows("true"), vec![1, 2, 3, 4]);
    assert_eq!(rows("age = NULL"), Vec::<i64>::new());
    assert_eq!(rows("CAST(score AS BIGINT) = 1"), vec![1]);
}

#[test]
fn errors_name_the_problem() {
    let s = batch().schema();
    let e = Predicate::parse("nope > 1", &s, Resolve::Plain).expect_err("unknown");
    assert!(e.to_string().contains("unknown column 'nope'"), "{e}");
    let e = Predicate::parse("id >", &s, Resolve::Plain).expect_err("parse");
    assert!(e.to_string().contains("cannot parse filter"), "{e}");
    let e = Predicate::parse("id = 1 garbage", &s, Resolve::Plain).expect_err("trailing");
    assert!(e.to_string().contains("cannot parse filter"), "{e}");
    let e = Predicate::parse("id + 1", &s, Resolve::Plain).expect("value expr ok");
    assert!(e.mask(&batch()).is_err());
    let e = Predicate::parse("name + 1 > 2", &s, Resolve::Plain).expect_err("type");
    assert!(e.to_string().contains("invalid filter"), "{e}");
}

#[test]
fn merge_resolution_tells_target_from_source() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("source.age", DataType::Int64, true),
        Field::new("target.age", DataType::Int64, true),
        Field::new("target.id", DataType::Int64, true),
    ]));
    // Row 0: the source is newer; row 1: the target is. A swap of
    // `source.` and `target.` (or bare names read from the source) flips
    // every mask below.
    let joined = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![5, 1])),
            Arc::new(Int64Array::from(vec![3, 3])),
            Arc::new(Int64Array::from(vec![1, 7])),
        ],
    )
    .expect("batch");
    let mask = |sql: &str| -> Vec<Option<bool>> {
        Predicate::parse(sql, &schema, Resolve::Merge)
            .expect(sql)
            .mask(&joined)
            .expect(sql)
            .iter()
            .collect()
    };
    assert_eq!(
        mask("target.age > 0 AND source.age > target.age"),
        vec![Some(true), Some(false)]
    );
    assert_eq!(
        mask("target.age < source.age"),
        vec![Some(true), Some(false)]
    );
    assert_eq!(mask("source.age = 1"), vec![Some(false), Some(true)]);
    assert_eq!(
        mask("id < 3"),
        vec![Some(true), Some(false)],
        "bare means target"
    );
    assert_eq!(
        mask("age = 3"),
        vec![Some(true), Some(true)],
        "bare means target"
    );
    let e = Predicate::parse("source.id = 1", &schema, Resolve::Merge).expect_err("missing");
    assert!(e.to_string().contains("unknown column 'source.id'"), "{e}");
}

/// Regression (hostile-input issue, item 1): a flat chain of ~3,000 `OR`
/// terms (also AND, +, ||) aborted the server with a stack overflow.
#[test]
fn regression_long_filters_do_not_overflow_the_stack() {
    let s = batch().schema();
    for (op, term) in [
        (" OR ", "id = 1"),
        (" AND ", "id = 1"),
        (" + ", "id"),
        (" || ", "name"),
    ] {
        for n in [3_000usize, 100_000] {
            let sql = vec![term; n].join(op);
            let e = Predicate::parse(&sql, &s, Resolve::Plain).expect_err("too deep");
            assert_eq!(e.code(), "InvalidInput");
            assert!(e.to_string().contains("too deep"), "{op}: {e}");
        }
    }
    let nested = format!("{}id = 1{}", "(".repeat(50_000), ")".repeat(50_000));
    Predicate::parse(&nested, &s, Resolve::Plain).expect_err("nested");
    // Long value lists are not deep: IN takes any number of values.
    let list: Vec<String> = (0..20_000).map(|i| i.to_string()).collect();
    let p = Predicate::parse(&format!("id IN ({})", list.join(", ")), &s, Resolve::Plain)
        .expect("IN list");
    assert!(p.mask(&batch()).is_ok());
}

/// The deepest expression allowed (one operator per level) parses, binds,
/// evaluates and drops on a thread with half the stack of the threads it
/// runs on (tokio's and the server's: 2 MiB).
#[test]
fn the_deepest_allowed_filter_runs_on_a_small_stack() {
    let sql = format!("{} > 0", vec!["id"; MAX_OPERATORS].join(" + "));
    let ok = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let p = Predicate::parse(&sql, &batch().schema(), Resolve::Plain).expect("parse");
            p.mask(&batch()).map(|m| m.len()).expect("eval")
        })
        .expect("thread")
        .join()
        .expect("no overflow");
    assert_eq!(ok, batch().num_rows());
}

#[test]
fn row_id_and_offset_filters_say_they_are_not_supported() {
    let b = batch();
    for f in ["_rowid IN (1, 2)", "_rowoffset IN (0)"] {
        let e = Predicate::parse(f, &b.schema(), Resolve::Plain).expect_err(f);
        assert_eq!(e.code(), crate::ErrorCode::NotSupported, "{f}: {e}");
        assert!(e.to_string().contains("takeRowIds / takeOffsets"), "{e}");
    }
    let e = Predicate::parse("nope = 1", &b.schema(), Resolve::Plain).expect_err("unknown");
    assert_eq!(e.code(), crate::ErrorCode::InvalidInput);
}

#[test]
fn literals_past_i64_compare_exactly_with_u64_columns() {
    // Row ids of buffered MemWAL rows start at 2^63: a float literal would
    // match the neighbouring ids too.
    let base = 1u64 << 63;
    let ids = arrow::array::UInt64Array::from(vec![base, base + 1, base + 2, 5]);
    let schema = Arc::new(Schema::new(vec![Field::new(
        "_rowid",
        DataType::UInt64,
        false,
    )]));
    let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids)]).expect("batch");
    let sql = format!("_rowid IN ({}, 5)", base + 1);
    let p = Predicate::parse(&sql, &schema, Resolve::Plain).expect("parse");
    let m = p.mask(&b).expect("mask");
    assert_eq!(
        m.iter().collect::<Vec<_>>(),
        [Some(false), Some(true), Some(false), Some(true)]
    );
}

#[test]
fn struct_fields_are_columns_null_where_the_struct_is() {
    use arrow::array::{Array, StructArray};
    let a = Arc::new(Int64Array::from(vec![1, 2, 3])) as arrow::array::ArrayRef;
    let fields = arrow_schema::Fields::from(vec![Field::new("a", DataType::Int64, true)]);
    let nulls = arrow::buffer::NullBuffer::from(vec![true, false, true]);
    let st = StructArray::new(fields.clone(), vec![a], Some(nulls));
    let schema = Arc::new(Schema::new(vec![Field::new(
        "st",
        DataType::Struct(fields),
        true,
    )]));
    let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(st)]).expect("batch");
    let p = Predicate::parse("st.a >= 2", &schema, Resolve::Plain).expect("parse");
    let m = p.mask(&b).expect("mask");
    // Row 1's child value 2 is hidden by its null struct.
    assert_eq!(
        m.iter().collect::<Vec<_>>(),
        [Some(false), Some(false), Some(true)]
    );
    let v = Predicate::parse("st.A", &schema, Resolve::Plain).expect("case");
    assert!(v.values(&b).expect("values").is_null(1));
    assert!(Predicate::parse("st.nope = 1", &schema, Resolve::Plain).is_err());
}

/// A column computed from SQL is nullable exactly when the expression may be
/// null, as Lance types it (a regression: every computed column was nullable).
#[test]
fn nullability_of_expressions() {
    let s = batch().schema().as_ref().clone();
    let non_null = Schema::new(vec![Field::new("n", DataType::Int64, false)]);
    for (sql, on, want) in [
        ("5", &non_null, false),
        ("'x'", &non_null, false),
        ("n + 1", &non_null, false),
        ("n / 2", &non_null, true),
        ("NULL", &non_null, true),
        ("CAST(NULL AS BIGINT)", &non_null, true),
        ("CAST(n AS FLOAT)", &non_null, false),
        ("age IS NULL", &s, false),
        ("coalesce(score, 0)", &s, false),
        ("score + 1", &s, true),
    ] {
        let p = Predicate::parse(sql, on, Resolve::Plain).expect(sql);
        assert_eq!(p.maybe_null(on), want, "{sql}");
    }
}

/// CAST types as Lance's planner reads them: FLOAT is Float32, DOUBLE
/// Float64; REAL, VARCHAR and TEXT are refused, naming the supported types.
#[test]
fn cast_types_are_lances() {
    let s = batch().schema().as_ref().clone();
    let ty = |sql: &str| {
        Predicate::parse(sql, &s, Resolve::Plain)
            .and_then(|p| p.values(&RecordBatch::new_empty(Arc::new(s.clone()))))
            .map(|v| v.data_type().clone())
    };
    assert_eq!(
        ty("CAST(score AS FLOAT)").expect("float"),
        DataType::Float32
    );
    assert_eq!(
        ty("CAST(score AS DOUBLE)").expect("double"),
        DataType::Float64
    );
    assert_eq!(
        ty("CAST(score AS BIGINT UNSIGNED)").expect("u64"),
        DataType::UInt64
    );
    for bad in ["REAL", "VARCHAR", "TEXT", "DECIMAL"] {
        let e = ty(&format!("CAST(score AS {bad})"))
            .expect_err(bad)
            .to_string();
        assert!(e.contains("supported: int [unsigned]"), "{bad}: {e}");
    }
}
