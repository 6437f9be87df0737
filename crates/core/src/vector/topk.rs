//! A bounded top-k: the `cap` nearest hits seen so far, in a max-heap so
//! that the worst is replaced in O(log k). Ties in distance order by row id,
//! so results are the same however the scan was split across threads.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One ranked row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hit {
    /// Its distance (NaN sorts after every number), in f64 so that finite
    /// vectors whose f32 distances overflow still rank in order.
    pub dist: f64,
    /// Its row id.
    pub row_id: u64,
    /// The tier it is in.
    pub tier: u32,
    /// Its row within the tier's batch.
    pub row: u32,
}

impl PartialEq for Hit {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Hit {
    fn cmp(&self, o: &Self) -> Ordering {
        self.dist
            .total_cmp(&o.dist)
            .then(self.row_id.cmp(&o.row_id))
            .then(self.tier.cmp(&o.tier))
            .then(self.row.cmp(&o.row))
    }
}

/// The `cap` smallest hits pushed so far.
#[derive(Debug)]
pub(crate) struct TopK {
    cap: usize,
    heap: BinaryHeap<Hit>,
}

impl TopK {
    /// An empty top-`cap` (no memory is reserved up front: `cap` may be huge).
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            heap: BinaryHeap::new(),
        }
    }

    /// The distance a new hit must not exceed to enter, once full.
    pub fn worst(&self) -> Option<f64> {
        (self.heap.len() >= self.cap)
            .then(|| self.heap.peek().map(|h| h.dist))
            .flatten()
    }

    /// Most hits held.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Hits held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Offers a hit.
    pub fn push(&mut self, h: Hit) {
        if self.heap.len() < self.cap {
            self.heap.push(h);
        } else if let Some(mut top) = self.heap.peek_mut() {
            if h < *top {
                *top = h;
            }
        }
    }

    /// Offers every hit of `other`.
    pub fn merge(&mut self, other: TopK) {
        for h in other.heap {
            self.push(h);
        }
    }

    /// The hits, nearest first.
    pub fn into_sorted(self) -> Vec<Hit> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_smallest_in_order() {
        let mut t = TopK::new(3);
        for (i, d) in [5.0, 1.0, f64::NAN, 3.0, 1.0, 9.0, 0.5].iter().enumerate() {
            t.push(Hit {
                dist: *d,
                row_id: i as u64,
                tier: 0,
                row: i as u32,
            });
        }
        let got: Vec<(f64, u64)> = t.into_sorted().iter().map(|h| (h.dist, h.row_id)).collect();
        assert_eq!(got, vec![(0.5, 6), (1.0, 1), (1.0, 4)]);
    }
}
