//! Distance kernels over `f32` slices: squared L2, dot product and the
//! pieces of cosine, computed for a block of rows against one query.
//!
//! The loops keep 16 independent partial sums (two 8-lane vectors' worth),
//! so the float additions are not one serial chain and the compiler turns
//! them into SIMD. The same source is compiled twice: once plain (SSE2 on
//! x86-64, NEON on aarch64), once with AVX2 + FMA enabled; the AVX2 copy is
//! chosen at run time when the CPU has both. Results of the two copies can
//! differ in the last bits (FMA rounds once), never more.

/// Lanes of partial sums per kernel.
pub(crate) const LANES: usize = 16;

/// Centroids per block of a packed matrix (see [`pack`]).
pub const PACK: usize = 16;

macro_rules! kernel {
    ($(#[$doc:meta])* $name:ident, $step:expr) => {
        $(#[$doc])*
        #[inline(always)]
        fn $name(q: &[f32], rows: &[f32], out: &mut [f32]) {
            const LANES: usize = $crate::vector::kernels::LANES;
            let step: fn(f32, f32, f32) -> f32 = $step;
            for (row, o) in rows.chunks_exact(q.len()).zip(out.iter_mut()) {
                let mut acc = [0f32; LANES];
                let mut qc = q.chunks_exact(LANES);
                let mut rc = row.chunks_exact(LANES);
                for (a, b) in (&mut qc).zip(&mut rc) {
                    for i in 0..LANES {
                        acc[i] = step(a[i], b[i], acc[i]);
                    }
                }
                let mut tail = 0f32;
                for (a, b) in qc.remainder().iter().zip(rc.remainder()) {
                    tail = step(*a, *b, tail);
                }
                *o = acc.iter().sum::<f32>() + tail;
            }
        }
    };
}

/// The kernels with a given multiply-add: squared L2 distance and dot
/// product of every row of `rows` (`q.len()` floats each) with `q`, and
/// squared L2 distance of `x` to every centroid of a packed matrix.
macro_rules! kernels {
    ($l2:ident, $dot:ident, $l2t:ident, $near:ident, $sq:ident, $madd:expr) => {
        /// `sum_j w[j] * (a[j] - code[j])^2 + b[j] * code[j]`: the distance
        /// of a scalar-quantised vector (one byte per element) to a query
        /// prepared in code space (see `crate::index::hnsw`).
        #[inline(always)]
        fn $sq(a: &[f32], w: &[f32], b: &[f32], code: &[u8]) -> f32 {
            const LANES: usize = $crate::vector::kernels::LANES;
            let mut acc = [0f32; LANES];
            let n = code.len().min(a.len()).min(w.len()).min(b.len());
            let (a, w, b, code) = (&a[..n], &w[..n], &b[..n], &code[..n]);
            let mut i = 0;
            while i + LANES <= n {
                for l in 0..LANES {
                    let c = f32::from(code[i + l]);
                    let d = a[i + l] - c;
                    acc[l] = $madd(w[i + l] * d, d, $madd(b[i + l], c, acc[l]));
                }
                i += LANES;
            }
            let mut tail = 0f32;
            while i < n {
                let c = f32::from(code[i]);
                let d = a[i] - c;
                tail += w[i] * d * d + b[i] * c;
                i += 1;
            }
            acc.iter().sum::<f32>() + tail
        }

        /// The nearest of the first `k` centroids packed by [`pack`] to
        /// `x`, and its squared distance: [`l2_packed`] with the minimum
        /// kept as blocks finish (a block is searched only when one of its
        /// lanes beats the best so far). NaN never wins.
        #[inline(always)]
        fn $near(x: &[f32], packed: &[f32], k: usize) -> (usize, f32) {
            const PACK: usize = $crate::vector::kernels::PACK;
            let mut best = (0usize, f32::INFINITY);
            for (b, block) in packed.chunks_exact(x.len() * PACK).enumerate() {
                let mut acc = [0f32; PACK];
                for (xj, col) in x.iter().zip(block.chunks_exact(PACK)) {
                    for i in 0..PACK {
                        let d = xj - col[i];
                        acc[i] = $madd(d, d, acc[i]);
                    }
                }
                let mut beats = false;
                for a in acc {
                    beats |= a < best.1;
                }
                if beats {
                    let lanes = k.saturating_sub(b * PACK).min(PACK);
                    for (i, a) in acc.iter().enumerate().take(lanes) {
                        if *a < best.1 {
                            best = (b * PACK + i, *a);
                        }
                    }
                }
            }
            best
        }

        /// Squared L2 distance of `x` to each of `out.len()` centroids
        /// packed by [`pack`]: each block of [`PACK`] centroids is
        /// compared with `x` in registers (the loop over the block is
        /// SIMD, even for a short `x` such as a product-quantiser
        /// sub-vector), with no store until the block is done.
        #[inline(always)]
        fn $l2t(x: &[f32], packed: &[f32], out: &mut [f32]) {
            const PACK: usize = $crate::vector::kernels::PACK;
            for (block, o) in packed.chunks_exact(x.len() * PACK).zip(out.chunks_mut(PACK)) {
                let mut acc = [0f32; PACK];
                for (xj, col) in x.iter().zip(block.chunks_exact(PACK)) {
                    for i in 0..PACK {
                        let d = xj - col[i];
                        acc[i] = $madd(d, d, acc[i]);
                    }
                }
                if let Ok(full) = <&mut [f32; PACK]>::try_from(&mut *o) {
                    *full = acc;
                } else {
                    o.iter_mut().zip(acc).for_each(|(o, a)| *o = a);
                }
            }
        }
        kernel!(
            /// Squared L2 distance of every row to `q`, into `out`.
            $l2,
            |a, b, acc| {
                let d = a - b;
                $madd(d, d, acc)
            }
        );
        kernel!(
            /// Dot product of every row with `q`, into `out`.
            $dot,
            |a, b, acc| $madd(a, b, acc)
        );
    };
}

fn plain_madd(a: f32, b: f32, c: f32) -> f32 {
    a * b + c
}

kernels!(l2_plain, dot_plain, l2t_plain, near_plain, sq_plain, plain_madd);

#[cfg(target_arch = "x86_64")]
mod avx2 {
    kernels!(
        l2_inner,
        dot_inner,
        l2t_inner,
        near_inner,
        sq_inner,
        f32::mul_add
    );

    /// [`super::sq_plain`] compiled for AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn sq(a: &[f32], w: &[f32], b: &[f32], code: &[u8]) -> f32 {
        sq_inner(a, w, b, code)
    }

    /// [`super::near_plain`] compiled for AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn near(x: &[f32], packed: &[f32], k: usize) -> (usize, f32) {
        near_inner(x, packed, k)
    }

    /// [`super::l2t_plain`] compiled for AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn l2t(x: &[f32], packed: &[f32], out: &mut [f32]) {
        l2t_inner(x, packed, out)
    }

    /// [`super::l2_plain`] compiled for AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn l2(q: &[f32], rows: &[f32], out: &mut [f32]) {
        l2_inner(q, rows, out)
    }

    /// [`super::dot_plain`] compiled for AVX2 + FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot(q: &[f32], rows: &[f32], out: &mut [f32]) {
        dot_inner(q, rows, out)
    }
}

/// Which compiled copy of the kernels this CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// The portable copy.
    Plain,
    /// The AVX2 + FMA copy.
    Avx2Fma,
}

/// The best copy this CPU supports (detected once).
pub fn isa() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        static DETECTED: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                Isa::Avx2Fma
            } else {
                Isa::Plain
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    Isa::Plain
}

/// Squared L2 distances of `rows` (consecutive vectors of `q.len()` floats)
/// to `q`, one per row, into `out` (at least as long as the row count).
pub fn l2_sq(isa: Isa, q: &[f32], rows: &[f32], out: &mut [f32]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Avx2Fma` is only returned by `isa()` after run-time
        // detection found both features on this CPU.
        #[allow(unsafe_code)]
        Isa::Avx2Fma => unsafe { avx2::l2(q, rows, out) },
        _ => l2_plain(q, rows, out),
    }
}

/// Dot products of `rows` with `q` (layout as [`l2_sq`]).
pub fn dot(isa: Isa, q: &[f32], rows: &[f32], out: &mut [f32]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `l2_sq`.
        #[allow(unsafe_code)]
        Isa::Avx2Fma => unsafe { avx2::dot(q, rows, out) },
        _ => dot_plain(q, rows, out),
    }
}

/// Squared L2 distances of `x` to `out.len()` centroids packed by
/// [`pack`] (`packed` must hold `ceil(out.len() / PACK)` blocks).
pub fn l2_packed(isa: Isa, x: &[f32], packed: &[f32], out: &mut [f32]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `l2_sq`.
        #[allow(unsafe_code)]
        Isa::Avx2Fma => unsafe { avx2::l2t(x, packed, out) },
        _ => l2t_plain(x, packed, out),
    }
}

/// `sum_j w[j] * (a[j] - code[j])^2 + b[j] * code[j]` over one byte per
/// element: a scalar-quantised vector's distance to a query prepared in
/// code space.
pub fn sq_distance(isa: Isa, a: &[f32], w: &[f32], b: &[f32], code: &[u8]) -> f32 {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `l2_sq`.
        #[allow(unsafe_code)]
        Isa::Avx2Fma => unsafe { avx2::sq(a, w, b, code) },
        _ => sq_plain(a, w, b, code),
    }
}

/// The nearest of `k` centroids packed by [`pack`] to `x`, with its
/// squared L2 distance (`(0, inf)` if every distance is NaN).
pub fn nearest_packed(isa: Isa, x: &[f32], packed: &[f32], k: usize) -> (usize, f32) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `l2_sq`.
        #[allow(unsafe_code)]
        Isa::Avx2Fma => unsafe { avx2::near(x, packed, k) },
        _ => near_plain(x, packed, k),
    }
}

/// `rows` (`n` rows of `dim` floats) packed for [`l2_packed`]: blocks of
/// [`PACK`] rows, each block `dim` groups of its rows' element `j` (the
/// last block padded with zeros).
pub fn pack(rows: &[f32], dim: usize) -> Vec<f32> {
    let n = rows.len() / dim.max(1);
    let blocks = n.div_ceil(PACK);
    let mut out = vec![0f32; blocks * PACK * dim];
    for (c, row) in rows.chunks_exact(dim).enumerate() {
        let (b, i) = (c / PACK, c % PACK);
        for (j, v) in row.iter().enumerate() {
            out[b * PACK * dim + j * PACK + i] = *v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_l2(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
            .sum()
    }

    fn naive_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
    }

    #[test]
    fn quantised_distance_matches_a_plain_sum() {
        for n in [1usize, 7, 16, 33, 128] {
            let a: Vec<f32> = (0..n).map(|i| (i * 37 % 251) as f32 * 0.9).collect();
            let w: Vec<f32> = (0..n).map(|i| 0.01 + (i % 5) as f32 * 0.1).collect();
            let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
            let c: Vec<u8> = (0..n).map(|i| (i * 91 % 256) as u8).collect();
            let want: f64 = (0..n)
                .map(|j| {
                    let (cj, d) = (f64::from(c[j]), f64::from(a[j]) - f64::from(c[j]));
                    f64::from(w[j]) * d * d + f64::from(b[j]) * cj
                })
                .sum();
            for isa in [Isa::Plain, isa()] {
                let got = f64::from(sq_distance(isa, &a, &w, &b, &c));
                assert!(
                    (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "{n} {isa:?}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn both_copies_match_a_plain_sum() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        for dim in [1usize, 3, 15, 16, 17, 31, 128, 129, 768] {
            let q: Vec<f32> = (0..dim).map(|_| next()).collect();
            let rows: Vec<f32> = (0..dim * 5).map(|_| next()).collect();
            for isa in [Isa::Plain, isa()] {
                let mut l = vec![0f32; 5];
                let mut d = vec![0f32; 5];
                l2_sq(isa, &q, &rows, &mut l);
                dot(isa, &q, &rows, &mut d);
                let mut t = vec![0f32; 5];
                let packed = pack(&rows, dim);
                l2_packed(isa, &q, &packed, &mut t);
                let (bi, bd) = nearest_packed(isa, &q, &packed, 5);
                assert_eq!(
                    (bi, bd),
                    (
                        t.iter().position(|x| *x == bd).expect("min"),
                        t.iter().copied().fold(f32::INFINITY, f32::min)
                    )
                );
                for (i, row) in rows.chunks(dim).enumerate() {
                    let (el, ed) = (naive_l2(&q, row), naive_dot(&q, row));
                    assert!(
                        (t[i] as f64 - el).abs() <= 1e-5 * (1.0 + el),
                        "{dim} {isa:?}"
                    );
                    assert!(
                        (l[i] as f64 - el).abs() <= 1e-5 * (1.0 + el),
                        "{dim} {isa:?}"
                    );
                    assert!(
                        (d[i] as f64 - ed).abs() <= 1e-5 * (1.0 + ed.abs()),
                        "{dim} {isa:?}"
                    );
                }
            }
        }
    }
}
