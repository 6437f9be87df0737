//! Scans with a filter, a limit and an offset answer exactly the rows the
//! same scan without them answers, sliced: over random tables of several
//! fragments with deletions (a scan materialises only the rows it takes,
//! so this checks that cut against the uncut answer).

use memwal_core::{AddMode, NativeTable, QueryRequest};
use proptest::prelude::*;

use crate::support::{dump, new_table, people};

fn ids(t: &NativeTable, req: &QueryRequest) -> Vec<i64> {
    let batches = t.query_sync(req).expect("scan");
    let mut out = Vec::new();
    for b in batches {
        let c = b
            .column_by_name("id")
            .expect("id")
            .as_any()
            .downcast_ref::<arrow::array::Int64Array>()
            .expect("int64")
            .clone();
        out.extend(c.values().iter().copied());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn a_limited_scan_is_the_full_scan_sliced(
        parts in prop::collection::vec(prop::collection::vec(0i64..50, 1..40), 1..5),
        deleted in 0i64..50,
        at_least in prop::option::of(0i64..50),
        limit in prop::option::of(0usize..30),
        offset in prop::option::of(0usize..30),
        columns in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let mut next = 0i64;
        let mut rows = |ages: &[i64]| {
            let pairs: Vec<(i64, i64)> = ages.iter().map(|a| { next += 1; (next, *a) }).collect();
            people(&pairs)
        };
        let (_db, t) = new_table(dir.path(), rows(&parts[0]));
        for p in &parts[1..] {
            t.add_sync(rows(p), AddMode::Append).expect("append");
        }
        t.delete_sync(&format!("age = {deleted}")).expect("delete");
        let filter = at_least.map(|a| format!("age >= {a}"));
        let base = QueryRequest {
            filter: filter.clone(),
            columns: columns.then(|| vec!["id".to_string()]),
            ..Default::default()
        };
        let all = ids(&t, &base);
        let want: Vec<i64> = all
            .iter()
            .skip(offset.unwrap_or(0))
            .take(limit.unwrap_or(usize::MAX))
            .copied()
            .collect();
        let got = ids(&t, &QueryRequest { limit, offset, ..base });
        prop_assert_eq!(got, want, "rows {:?}", dump(&t).len());
    }
}
