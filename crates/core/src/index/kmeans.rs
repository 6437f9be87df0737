//! k-means (Lloyd's algorithm, squared L2) and the parallel nearest-centroid
//! assignment that IVF partitioning and product quantisation share. Seeded,
//! so the same rows and parameters train the same centroids.

use crate::error::{Error, Result};
use crate::vector::kernels::{self, Isa};

/// A small seeded generator (splitmix64): training samples and initial
/// centroids, reproducible run to run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// `want` distinct positions out of `0..n` (all of them when `want >= n`), ascending.
pub fn sample(n: usize, want: usize, rng: &mut Rng) -> Vec<usize> {
    if want >= n {
        return (0..n).collect();
    }
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..want {
        let j = i + rng.below(n - i);
        idx.swap(i, j);
    }
    idx.truncate(want);
    idx.sort_unstable();
    idx
}

/// Worker threads for `n` rows of work (serial below 8k rows).
pub fn threads_for(n: usize) -> usize {
    crate::vector::worker_threads(n, 8 * 1024)
}

/// Runs `f` over `0..n` split into one contiguous range per thread; the
/// results in range order.
pub fn par_ranges<T: Send>(
    n: usize,
    f: impl Fn(std::ops::Range<usize>) -> T + Sync,
) -> Result<Vec<T>> {
    let t = threads_for(n);
    if t == 1 {
        return Ok(vec![f(0..n)]);
    }
    let per = n.div_ceil(t);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..t)
            .map(|i| {
                let f = &f;
                s.spawn(move || f(i * per..((i + 1) * per).min(n)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::internal("an index build thread panicked"))
            })
            .collect()
    })
}

/// The nearest of `k` centroids (`ct`: packed, see
/// [`kernels::pack`]) for each row of `data`, with the total squared
/// distance.
pub fn assign(isa: Isa, data: &[f32], dim: usize, ct: &[f32], k: usize) -> Result<(Vec<u32>, f64)> {
    let n = data.len() / dim;
    let parts = par_ranges(n, |range| {
        let mut ids = Vec::with_capacity(range.len());
        let mut loss = 0f64;
        for r in range {
            let (best, d) = kernels::nearest_packed(isa, &data[r * dim..(r + 1) * dim], ct, k);
            ids.push(best as u32);
            loss += f64::from(d);
        }
        (ids, loss)
    })?;
    let mut ids = Vec::with_capacity(n);
    let mut loss = 0f64;
    for (p, l) in parts {
        ids.extend(p);
        loss += l;
    }
    Ok((ids, loss))
}

/// Trains `k` centroids over `data` (rows of `dim`): k-means++ seeds
/// ([`seed`]), then Lloyd iterations until the loss improves by less than
/// 1e-4 (relative) or `max_iterations` pass. An emptied cluster takes over
/// a random row of the largest one, so none stays empty.
pub fn train(
    data: &[f32],
    dim: usize,
    k: usize,
    max_iterations: usize,
    seed: u64,
) -> Result<Vec<f32>> {
    let kept = tame_rows(data, dim);
    let data: &[f32] = kept.as_deref().unwrap_or(data);
    let n = data.len() / dim;
    if k == 0 || n < k {
        return Err(Error::invalid(format!(
            "k-means needs at least {k} rows to train {k} centroids, got {n} \
             (rows with a squared norm past f32's range are left out of training)"
        )));
    }
    let isa = kernels::isa();
    let mut rng = Rng::new(seed);
    let mut centroids = self::seed(isa, data, dim, k, &mut rng);
    let mut last = f64::INFINITY;
    for _ in 0..max_iterations.max(1) {
        let (ids, loss) = assign(isa, data, dim, &kernels::pack(&centroids, dim), k)?;
        centroids = means(data, dim, k, &ids, &mut rng);
        if last.is_finite() && (last - loss).abs() <= 1e-4 * last.max(f64::MIN_POSITIVE) {
            break;
        }
        last = loss;
    }
    Ok(centroids)
}

/// Rows per centroid that [`seed`] draws from, at most.
const SEED_POOL_PER_CENTROID: usize = 32;

/// k-means++ seeding (Arthur & Vassilvitskii 2007): a random row first,
/// then each next seed a row drawn with probability proportional to its
/// squared distance to the nearest seed so far, from a pool of at most
/// [`SEED_POOL_PER_CENTROID`] random rows per centroid. Uniform seeds can
/// start two centroids in one of a few separated clusters and none in
/// another, which Lloyd's iterations do not repair. (It does not balance
/// many seeds over many clusters in high dimensions, where a row's
/// distance to the nearest seed barely shrinks as its cluster gets more:
/// [`super::hierarchy`] does that.) One pass of the pool per seed.
fn seed(isa: Isa, data: &[f32], dim: usize, k: usize, rng: &mut Rng) -> Vec<f32> {
    let n = data.len() / dim;
    let pool: Vec<f32> = sample(n, k.saturating_mul(SEED_POOL_PER_CENTROID), rng)
        .iter()
        .flat_map(|&r| data[r * dim..(r + 1) * dim].iter().copied())
        .collect();
    let m = pool.len() / dim;
    let mut near = vec![f32::INFINITY; m];
    let mut dist = vec![0f32; m];
    let mut chosen = vec![false; m];
    let mut out = Vec::with_capacity(k * dim);
    let mut next = rng.below(m.max(1));
    for _ in 0..k.min(m) {
        chosen[next] = true;
        let c = &pool[next * dim..(next + 1) * dim];
        out.extend_from_slice(c);
        kernels::l2_sq(isa, c, &pool, &mut dist);
        let mut total = 0f64;
        for ((near, d), taken) in near.iter_mut().zip(&dist).zip(&chosen) {
            *near = near.min(*d);
            if !taken {
                total += f64::from(*near);
            }
        }
        next = draw(rng, &near, &chosen, total);
    }
    out
}

/// A row not `chosen`, drawn with probability `weight / total` (uniformly
/// when every weight is 0: the rows left repeat the seeds).
fn draw(rng: &mut Rng, weight: &[f32], chosen: &[bool], total: f64) -> usize {
    let free = || (0..weight.len()).filter(|i| !chosen[*i]);
    if total.is_finite() && total > 0.0 {
        let mut r = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let mut last = None;
        for i in free() {
            r -= f64::from(weight[i]);
            last = Some(i);
            if r < 0.0 {
                return i;
            }
        }
        if let Some(i) = last {
            return i; // rounding left a sliver past the last row
        }
    }
    let left: Vec<usize> = free().collect();
    left.get(rng.below(left.len().max(1))).copied().unwrap_or(0)
}

/// The rows of `data` whose squared distances stay within f32's range
/// (squared norm below a quarter of f32::MAX), or `None` when that is all
/// of them. One row of 1e30s would otherwise make every distance to its
/// cluster infinite and the training meaningless; such a row is still
/// assigned (to some partition) and searched exactly.
pub(crate) fn tame_rows(data: &[f32], dim: usize) -> Option<Vec<f32>> {
    let limit = f64::from(f32::MAX) / 4.0;
    let tame = |row: &[f32]| {
        row.iter()
            .map(|x| f64::from(*x) * f64::from(*x))
            .sum::<f64>()
            < limit
    };
    if data.chunks_exact(dim).all(tame) {
        return None;
    }
    Some(
        data.chunks_exact(dim)
            .filter(|r| tame(r))
            .flatten()
            .copied()
            .collect(),
    )
}

/// The mean of each cluster; an empty cluster gets a random member of the
/// largest.
fn means(data: &[f32], dim: usize, k: usize, ids: &[u32], rng: &mut Rng) -> Vec<f32> {
    let mut sums = vec![0f64; k * dim];
    let mut counts = vec![0usize; k];
    for (r, &c) in ids.iter().enumerate() {
        let c = c as usize;
        counts[c] += 1;
        for (s, x) in sums[c * dim..(c + 1) * dim]
            .iter_mut()
            .zip(&data[r * dim..(r + 1) * dim])
        {
            *s += f64::from(*x);
        }
    }
    let largest = (0..k).max_by_key(|c| counts[*c]).unwrap_or(0);
    let members: Vec<usize> = (0..ids.len())
        .filter(|r| ids[*r] as usize == largest)
        .collect();
    let mut out = vec![0f32; k * dim];
    for c in 0..k {
        let dst = &mut out[c * dim..(c + 1) * dim];
        if counts[c] == 0 {
            let r = members
                .get(rng.below(members.len().max(1)))
                .copied()
                .unwrap_or(0);
            dst.copy_from_slice(&data[r * dim..(r + 1) * dim]);
            // A little noise, so the two copies separate next iteration.
            for v in dst.iter_mut() {
                *v *= 1.0 + 1e-4 * ((rng.next_u64() % 2001) as f32 / 1000.0 - 1.0);
            }
        } else {
            for (d, s) in dst.iter_mut().zip(&sums[c * dim..(c + 1) * dim]) {
                *d = (*s / counts[c] as f64) as f32;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_separated_clusters() {
        // Three tight clusters far apart: every centroid lands on one.
        let centers = [[0f32, 0.0], [100.0, 0.0], [0.0, 100.0]];
        let mut rng = Rng::new(1);
        let mut data = Vec::new();
        for i in 0..300 {
            let c = centers[i % 3];
            data.push(c[0] + (rng.below(100) as f32) / 100.0);
            data.push(c[1] + (rng.below(100) as f32) / 100.0);
        }
        let cents = train(&data, 2, 3, 50, 7).expect("train");
        for c in centers {
            let near = cents
                .chunks(2)
                .any(|x| (x[0] - c[0]).abs() < 2.0 && (x[1] - c[1]).abs() < 2.0);
            assert!(near, "no centroid near {c:?}: {cents:?}");
        }
        assert!(train(&data[..4], 2, 3, 5, 1).is_err());
    }

    #[test]
    fn sample_is_distinct_and_in_range() {
        let mut rng = Rng::new(3);
        let s = sample(1000, 100, &mut rng);
        assert_eq!(s.len(), 100);
        assert!(s.windows(2).all(|w| w[0] < w[1]) && s[99] < 1000);
        assert_eq!(sample(5, 10, &mut rng), vec![0, 1, 2, 3, 4]);
    }
}
