//! The BTREE scalar index: every non-null value of one column over the
//! fragments it covers, sorted (floats in IEEE total order, strings and
//! binary by bytes, as arrow's comparison kernels order them), each with
//! its row id. A filter's [`Sarg`] on the column becomes candidate row ids
//! by binary search: a superset of the matching rows of those fragments,
//! on which the caller still evaluates the filter.

use std::cmp::Ordering;
use std::ops::Range;

use arrow::array::{make_comparator, Array, ArrayRef, UInt64Array};
use arrow::compute::{filter, is_not_null, sort_to_indices, take, SortOptions};
use arrow_schema::DataType;

use crate::error::{Error, Result};
use crate::filter::Sarg;

/// Whether a column of type `dt` can carry a BTREE index.
pub fn supported(dt: &DataType) -> bool {
    use DataType::*;
    dt.is_integer()
        || dt.is_floating()
        || matches!(
            dt,
            Boolean
                | Utf8
                | LargeUtf8
                | Utf8View
                | Binary
                | LargeBinary
                | Date32
                | Date64
                | Timestamp(..)
                | Time32(_)
                | Time64(_)
                | Decimal128(..)
        )
}

/// A loaded BTREE index.
#[derive(Debug)]
pub struct BTreeIndex {
    /// The non-null values, sorted.
    pub values: ArrayRef,
    /// The row id (`fragment << 32 | offset`) of each value.
    pub row_ids: Vec<u64>,
}

impl BTreeIndex {
    /// Sorts `values` (nulls dropped) with their `row_ids`.
    pub fn build(values: &ArrayRef, row_ids: Vec<u64>) -> Result<Self> {
        if values.len() != row_ids.len() {
            return Err(Error::internal("one row id per value expected"));
        }
        let ids: ArrayRef = std::sync::Arc::new(UInt64Array::from(row_ids));
        let (values, ids) = if values.null_count() > 0 {
            let keep = is_not_null(values.as_ref())?;
            (filter(values, &keep)?, filter(&ids, &keep)?)
        } else {
            (values.clone(), ids)
        };
        let order = sort_to_indices(&values, Some(SortOptions::default()), None)?;
        let values = take(values.as_ref(), &order, None)?;
        let ids = take(ids.as_ref(), &order, None)?;
        let ids = ids
            .as_any()
            .downcast_ref::<UInt64Array>()
            .ok_or_else(|| Error::internal("row ids"))?
            .values()
            .to_vec();
        Self::from_parts(values, ids).map_err(Error::internal)
    }

    /// The same index with each row id mapped by `map` (`None`: the row is
    /// gone); values are not read again from the table.
    pub fn remapped(&self, map: &dyn Fn(u64) -> Option<u64>) -> Result<Self> {
        let mapped: Vec<Option<u64>> = self.row_ids.iter().map(|&id| map(id)).collect();
        let keep: arrow::array::BooleanArray = mapped.iter().map(|m| Some(m.is_some())).collect();
        let values = filter(self.values.as_ref(), &keep)?;
        Self::build(&values, mapped.into_iter().flatten().collect())
    }

    /// This index and `other` (a delta: rows of other fragments) as one, by
    /// merging the two sorted runs (linear; equal values keep `self`'s first).
    pub fn merged(&self, other: &BTreeIndex) -> Result<Self> {
        let cmp = make_comparator(
            self.values.as_ref(),
            other.values.as_ref(),
            SortOptions::default(),
        )?;
        let (n, m) = (self.row_ids.len(), other.row_ids.len());
        let mut order: Vec<(usize, usize)> = Vec::with_capacity(n + m);
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if j == m || (i < n && cmp(i, j) != Ordering::Greater) {
                order.push((0, i));
                i += 1;
            } else {
                order.push((1, j));
                j += 1;
            }
        }
        let values =
            arrow::compute::interleave(&[self.values.as_ref(), other.values.as_ref()], &order)?;
        let row_ids = order
            .iter()
            .map(|&(run, k)| {
                if run == 0 {
                    self.row_ids[k]
                } else {
                    other.row_ids[k]
                }
            })
            .collect();
        Ok(Self { values, row_ids })
    }

    /// An index from stored parts, checked: one row id per value, no
    /// null, values in order.
    pub fn from_parts(values: ArrayRef, row_ids: Vec<u64>) -> std::result::Result<Self, String> {
        if values.len() != row_ids.len() {
            return Err(format!(
                "{} values but {} row ids",
                values.len(),
                row_ids.len()
            ));
        }
        if values.null_count() > 0 || !supported(values.data_type()) {
            return Err("null or unsupported values".into());
        }
        let cmp = make_comparator(values.as_ref(), values.as_ref(), SortOptions::default())
            .map_err(|e| e.to_string())?;
        if let Some(i) = (1..values.len()).find(|i| cmp(i - 1, *i) == Ordering::Greater) {
            return Err(format!("values out of order at {i}"));
        }
        Ok(Self { values, row_ids })
    }

    /// The row ids that may satisfy `s`, sorted and distinct; `None` when
    /// the index cannot narrow `s` (a part of an `OR` it cannot answer) or
    /// when more than `limit` values qualify (a scan is then cheaper).
    pub fn lookup(&self, s: &Sarg, limit: usize) -> Result<Option<Vec<u64>>> {
        let Some(spans) = self.spans(s)? else {
            return Ok(None);
        };
        if spans.iter().map(|r| r.len()).sum::<usize>() > limit {
            return Ok(None);
        }
        let mut ids = Vec::new();
        for r in spans {
            ids.extend_from_slice(&self.row_ids[r]);
        }
        ids.sort_unstable();
        Ok(Some(ids))
    }

    /// The positions of the values that may satisfy `s`, as sorted,
    /// disjoint spans (an `AND` of ranges intersects spans, never row ids).
    fn spans(&self, s: &Sarg) -> Result<Option<Vec<Range<usize>>>> {
        Ok(match s {
            Sarg::Points(points) => {
                let mut out = Vec::with_capacity(points.len());
                for p in points {
                    out.push(self.range(Some((p, true)), Some((p, true)))?);
                }
                Some(union(out))
            }
            Sarg::Range { lo, hi } => Some(union(vec![self.range(bound(lo), bound(hi))?])),
            Sarg::And(parts) => {
                let mut best: Option<Vec<Range<usize>>> = None;
                for p in parts {
                    if let Some(spans) = self.spans(p)? {
                        best = Some(match best {
                            None => spans,
                            Some(b) => intersect(&b, &spans),
                        });
                    }
                }
                best
            }
            Sarg::Or(parts) => {
                let mut all = Vec::new();
                for p in parts {
                    match self.spans(p)? {
                        Some(spans) => all.extend(spans),
                        None => return Ok(None),
                    }
                }
                Some(union(all))
            }
        })
    }

    /// The positions of values between the bounds (`true`: inclusive).
    fn range(
        &self,
        lo: Option<(&ArrayRef, bool)>,
        hi: Option<(&ArrayRef, bool)>,
    ) -> Result<Range<usize>> {
        let n = self.values.len();
        let bound = |b: Option<(&ArrayRef, bool)>, upper: bool| -> Result<usize> {
            let Some((v, inclusive)) = b else {
                return Ok(if upper { n } else { 0 });
            };
            let cmp = make_comparator(self.values.as_ref(), v.as_ref(), SortOptions::default())?;
            // Lower inclusive and upper exclusive bounds start at the first
            // value not less than v; the others past every value equal to it.
            let past_equal = inclusive == upper;
            Ok(first(n, |i| match cmp(i, 0) {
                Ordering::Less => false,
                Ordering::Equal => !past_equal,
                Ordering::Greater => true,
            }))
        };
        let start = bound(lo, false)?;
        let end = bound(hi, true)?;
        Ok(start..end.max(start))
    }
}

/// The first `i` in `0..n` where `yes(i)` (which is monotone), or `n`.
fn first(n: usize, yes: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if yes(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// A stored bound as [`BTreeIndex::range`] takes it.
fn bound(b: &Option<(ArrayRef, bool)>) -> Option<(&ArrayRef, bool)> {
    b.as_ref().map(|(v, i)| (v, *i))
}

/// Sorted, disjoint, non-empty spans covering the same positions.
fn union(mut v: Vec<Range<usize>>) -> Vec<Range<usize>> {
    v.retain(|r| !r.is_empty());
    v.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// The positions in both lists of sorted, disjoint spans.
fn intersect(a: &[Range<usize>], b: &[Range<usize>]) -> Vec<Range<usize>> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        let (s, e) = (a[i].start.max(b[j].start), a[i].end.min(b[j].end));
        if s < e {
            out.push(s..e);
        }
        if a[i].end < b[j].end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int32Array, StringArray};

    use super::*;

    fn one(a: ArrayRef) -> ArrayRef {
        a.slice(0, 1)
    }

    #[test]
    fn ranges_and_points_find_exactly_their_rows() {
        let v: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(5),
            None,
            Some(1),
            Some(5),
            Some(9),
            Some(3),
        ]));
        let ix = BTreeIndex::build(&v, (0..6).collect()).expect("build");
        assert_eq!(ix.row_ids.len(), 5);
        let five = one(Arc::new(Int32Array::from(vec![5])));
        let three = one(Arc::new(Int32Array::from(vec![3])));
        let got = |s: Sarg| {
            ix.lookup(&s, usize::MAX)
                .expect("lookup")
                .expect("narrowed")
        };
        assert_eq!(got(Sarg::Points(vec![five.clone()])), vec![0, 3]);
        let r = |lo: Option<(ArrayRef, bool)>, hi: Option<(ArrayRef, bool)>| Sarg::Range { lo, hi };
        assert_eq!(got(r(Some((three.clone(), false)), None)), vec![0, 3, 4]);
        assert_eq!(
            got(r(Some((three.clone(), true)), Some((five.clone(), false)))),
            vec![5]
        );
        assert_eq!(got(r(None, Some((five.clone(), true)))), vec![0, 2, 3, 5]);
        assert_eq!(
            got(r(Some((five.clone(), false)), Some((three.clone(), false)))),
            Vec::<u64>::new()
        );
        let and = Sarg::And(vec![
            Sarg::Points(vec![five.clone()]),
            r(None, Some((three, true))),
        ]);
        assert_eq!(got(and), Vec::<u64>::new());
    }

    #[test]
    fn floats_follow_total_order_and_strings_bytes() {
        let v: ArrayRef = Arc::new(Float64Array::from(vec![
            0.0,
            -0.0,
            f64::NAN,
            1.0,
            f64::NEG_INFINITY,
        ]));
        let ix = BTreeIndex::build(&v, (0..5).collect()).expect("build");
        let zero = one(Arc::new(Float64Array::from(vec![0.0])));
        assert_eq!(
            ix.lookup(&Sarg::Points(vec![zero.clone()]), usize::MAX)
                .expect("lookup")
                .expect("narrowed"),
            vec![0]
        );
        let above = Sarg::Range {
            lo: Some((zero, false)),
            hi: None,
        };
        assert_eq!(
            ix.lookup(&above, usize::MAX)
                .expect("lookup")
                .expect("narrowed"),
            vec![2, 3]
        );
        let s: ArrayRef = Arc::new(StringArray::from(vec!["b", "a", "ab", "B"]));
        let ix = BTreeIndex::build(&s, (0..4).collect()).expect("build");
        let a = one(Arc::new(StringArray::from(vec!["a"])));
        let r = Sarg::Range {
            lo: Some((a, true)),
            hi: None,
        };
        assert_eq!(
            ix.lookup(&r, usize::MAX)
                .expect("lookup")
                .expect("narrowed"),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn spans_intersect_and_unite_and_a_limit_declines() {
        let v: ArrayRef = Arc::new(Int32Array::from_iter_values(0..100));
        let ix = BTreeIndex::build(&v, (0..100).collect()).expect("build");
        let at = |x: i32| one(Arc::new(Int32Array::from(vec![x])));
        let r = |lo: i32, hi: i32| Sarg::Range {
            lo: Some((at(lo), true)),
            hi: Some((at(hi), false)),
        };
        let s = Sarg::And(vec![
            Sarg::Or(vec![r(0, 10), r(50, 60), r(5, 20)]),
            Sarg::Or(vec![r(8, 55), Sarg::Points(vec![at(59), at(3)])]),
        ]);
        let want: Vec<u64> = [3]
            .into_iter()
            .chain(8..20)
            .chain(50..55)
            .chain([59])
            .collect();
        assert_eq!(ix.lookup(&s, usize::MAX).expect("lookup"), Some(want));
        assert_eq!(ix.lookup(&r(0, 50), 49).expect("lookup"), None);
        assert_eq!(
            ix.lookup(&r(0, 50), 50).expect("lookup").map(|v| v.len()),
            Some(50)
        );
    }

    #[test]
    fn stored_parts_out_of_order_are_refused() {
        let v: ArrayRef = Arc::new(Int32Array::from(vec![1, 3, 2]));
        assert!(BTreeIndex::from_parts(v.clone(), vec![0, 1, 2])
            .expect_err("refused")
            .contains("order"));
        assert!(BTreeIndex::from_parts(v, vec![0, 1]).is_err());
    }
}
