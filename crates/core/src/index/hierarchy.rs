//! Hierarchical k-means for IVF partitions. Flat k-means over many
//! centroids gives each natural cluster of the data as many centroids as
//! its random seeds happened to put there, and Lloyd's iterations never move
//! a centroid from one separated cluster to another: on 1M rows in 100
//! equal clusters, 1,000 partitions came out as 4 to 19 per cluster, and a
//! search probing 10 partitions missed part of the clusters that got more
//! (recall@10 at nprobes 10 capped near 0.97 even with every row of the
//! probed partitions ranked exactly).
//!
//! Here the rows are first split into at most [`BRANCH`] clusters; each
//! gets a share of the `k` centroids proportional to its rows (largest
//! remainders, never more than its rows), and is split the same way until
//! a share is at most [`BRANCH`], trained flat (or a level splits nothing:
//! identical rows). Every level holds fewer rows than the one above, so the
//! recursion ends. Shares follow the rows at
//! every level, so equal clusters get equal numbers of partitions. It also
//! costs less than flat training: each row meets ~`BRANCH` centroids per
//! level instead of `k`.

use super::kmeans::{self, Rng};
use crate::error::{Error, Result};
use crate::vector::kernels;

/// Most clusters one level splits rows into (and the most centroids
/// trained flat).
pub const BRANCH: usize = 16;

/// `k` centroids over `data` (rows of `dim`), as described in the module
/// doc; the same rows and seed give the same centroids.
pub fn train(
    data: &[f32],
    dim: usize,
    k: usize,
    max_iterations: usize,
    seed: u64,
) -> Result<Vec<f32>> {
    // The rows flat training would leave out (a squared norm past f32's
    // range) count for no cluster's share.
    let kept = kmeans::tame_rows(data, dim);
    let data: &[f32] = kept.as_deref().unwrap_or(data);
    let n = data.len() / dim.max(1);
    if k <= BRANCH || n < k {
        // Flat (its error names a k over the rows).
        return kmeans::train(data, dim, k, max_iterations, seed);
    }
    let mut rng = Rng::new(seed);
    let top = kmeans::train(data, dim, BRANCH, max_iterations, rng.next_u64())?;
    let (ids, _) = kmeans::assign(kernels::isa(), data, dim, &kernels::pack(&top, dim), BRANCH)?;
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); BRANCH];
    for (r, &c) in ids.iter().enumerate() {
        members[c as usize].push(r);
    }
    let sizes: Vec<usize> = members.iter().map(Vec::len).collect();
    if sizes.contains(&n) {
        // No split (the rows are all one vector, or nearly): flat training
        // gives them what it can (repeated centroids), as it always did.
        return kmeans::train(data, dim, k, max_iterations, seed);
    }
    let shares = shares(&sizes, k);
    let mut out = Vec::with_capacity(k * dim);
    for (rows, share) in members.iter().zip(shares) {
        if share == 0 {
            continue;
        }
        let mut part = Vec::with_capacity(rows.len() * dim);
        for &r in rows {
            part.extend_from_slice(&data[r * dim..(r + 1) * dim]);
        }
        out.extend(train(&part, dim, share, max_iterations, rng.next_u64())?);
    }
    if out.len() != k * dim {
        return Err(Error::internal(format!(
            "hierarchical k-means made {} centroids of {k}",
            out.len() / dim
        )));
    }
    Ok(out)
}

/// `k` split over clusters of `sizes` rows in proportion (largest
/// remainders first), none past its rows; `sizes` must hold at least `k`
/// rows in all.
fn shares(sizes: &[usize], k: usize) -> Vec<usize> {
    let n: usize = sizes.iter().sum();
    let mut out: Vec<usize> = sizes.iter().map(|&s| (k * s / n.max(1)).min(s)).collect();
    let mut left = k.saturating_sub(out.iter().sum());
    // The clusters with the most rows per centroid they would have take
    // the rest, one at a time (a row each at most).
    while left > 0 {
        let pick = (0..sizes.len())
            .filter(|&i| out[i] < sizes[i])
            .max_by(|&a, &b| {
                let ra = sizes[a] as f64 / (out[a] + 1) as f64;
                let rb = sizes[b] as f64 / (out[b] + 1) as f64;
                ra.total_cmp(&rb)
            });
        let Some(i) = pick else { break };
        out[i] += 1;
        left -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 equal, separated clusters and 1,000 centroids: each cluster
    /// gets its share (uniform seeds gave some 4 and others 19).
    #[test]
    fn every_cluster_gets_its_share_of_centroids() {
        let (dim, clusters, per) = (16, 100, 200);
        let mut rng = Rng::new(5);
        let centers: Vec<f32> = (0..clusters * dim)
            .map(|_| rng.below(10_000) as f32 / 1000.0)
            .collect();
        let mut data = Vec::with_capacity(clusters * per * dim);
        for i in 0..clusters * per {
            let c = &centers[(i % clusters) * dim..(i % clusters + 1) * dim];
            data.extend(
                c.iter()
                    .map(|x| x + (rng.below(1000) as f32 - 500.0) / 20_000.0),
            );
        }
        let cents = train(&data, dim, 1000, 20, 3).expect("train");
        assert_eq!(cents.len(), 1000 * dim);
        let mut share = vec![0usize; clusters];
        let mut d = vec![0f32; clusters];
        for c in cents.chunks_exact(dim) {
            kernels::l2_sq(kernels::isa(), c, &centers, &mut d);
            let nearest = (0..clusters).min_by(|a, b| d[*a].total_cmp(&d[*b]));
            share[nearest.expect("clusters")] += 1;
        }
        let (lo, hi) = (share.iter().min(), share.iter().max());
        assert!(
            lo >= Some(&7) && hi <= Some(&13),
            "centroids per cluster from {lo:?} to {hi:?}: {share:?}"
        );
    }

    /// Rows that cannot be split (all one vector, or one vector repeated
    /// past a share of 16 beside a few others) train flat instead of
    /// recursing for ever; rows with a squared norm past f32's range take
    /// no share.
    #[test]
    fn identical_and_untrainable_rows_end() {
        let dim = 8;
        let same = vec![0.5f32; 400 * dim];
        assert_eq!(train(&same, dim, 20, 10, 1).expect("same").len(), 20 * dim);
        let mut mostly = vec![0f32; 5000 * dim];
        for (i, x) in mostly.iter_mut().enumerate().take(50 * dim) {
            *x = (i % 97) as f32;
        }
        assert_eq!(
            train(&mostly, dim, 40, 10, 2).expect("mostly").len(),
            40 * dim
        );
        let mut wild: Vec<f32> = (0..8192 * dim).map(|i| (i % 101) as f32).collect();
        for x in wild.iter_mut().take(7800 * dim) {
            *x = f32::INFINITY;
        }
        assert_eq!(train(&wild, dim, 32, 10, 3).expect("wild").len(), 32 * dim);
    }

    #[test]
    fn shares_follow_sizes_and_add_up() {
        assert_eq!(shares(&[100, 100, 200], 8), vec![2, 2, 4]);
        assert_eq!(shares(&[0, 10, 990], 100), vec![0, 1, 99]);
        assert_eq!(shares(&[1, 1, 98], 10), vec![0, 0, 10]);
        // Never more centroids than rows: the rest go to the others.
        assert_eq!(shares(&[2, 2, 30], 33), vec![1, 2, 30]);
        assert_eq!(shares(&[2, 2, 30], 34), vec![2, 2, 30]);
        for (sizes, k) in [
            (vec![3, 5, 7, 11], 26),
            (vec![1; 16], 16),
            (vec![5, 0, 0, 4], 9),
        ] {
            let s = shares(&sizes, k);
            assert_eq!(s.iter().sum::<usize>(), k, "{sizes:?}");
            assert!(s.iter().zip(&sizes).all(|(a, b)| a <= b));
        }
    }
}
