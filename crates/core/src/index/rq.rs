//! RaBitQ quantisation (IVF_RQ): a vector's residual to its IVF centroid,
//! turned by a random orthogonal matrix, is stored as `bits` bits per
//! dimension on a grid centred on zero, plus two floats: the residual's
//! squared norm and the factor that makes the estimated inner product with
//! a query unbiased (RaBitQ's `<o, q> ~ <u, q> / <u, o>` with the grid
//! vector `u`; with `bits = 1` the codes are the residual's signs).
//!
//! A row's code is laid out as `bits` bit planes of `ceil(dim / 8)` bytes
//! (plane `j` holds bit `j` of every dimension's grid index), then the
//! squared norm and the factor as little-endian `f32`s. A query is not
//! quantised: per probed partition it becomes one table of 256 sums per
//! byte of a plane, so a row costs `bits * ceil(dim / 8)` lookups.

use super::kmeans::{par_ranges, Rng};
use crate::error::{Error, Result};
use crate::vector::kernels::{self, Isa};

/// Most bits per dimension (the grid indexes fit a byte).
pub const MAX_BITS: u8 = 8;
/// Bytes of the two per-row floats after the bit planes.
const FACTORS: usize = 8;
/// Grid scales tried per row (multi-bit), as fractions of the largest that
/// keeps every coordinate inside the grid.
const SCALES: [f32; 8] = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3];

/// A RaBitQ quantiser: its rotation and bits per dimension.
#[derive(Debug, Clone)]
pub struct Rq {
    /// Vector dimension.
    pub dim: usize,
    /// Bits per dimension, 1 to [`MAX_BITS`].
    pub bits: u8,
    /// The orthogonal matrix, `dim` rows of `dim` (a rotated vector's
    /// element `i` is row `i`'s dot product with the vector).
    pub rotation: Vec<f32>,
    /// The index's centroids rotated, `dim` floats each (see [`Rq::attach`]).
    turned: Vec<f32>,
}

impl Rq {
    /// A quantiser with a random rotation drawn from `seed`.
    pub fn new(dim: usize, bits: u8, seed: u64) -> Result<Self> {
        check_bits(bits)?;
        Self::from_rotation(dim, bits, random_orthogonal(dim, seed))
    }

    /// A quantiser from a stored rotation, checked: finite, `dim x dim`,
    /// rows of unit length (a damaged matrix would skew every estimate).
    pub fn from_rotation(dim: usize, bits: u8, rotation: Vec<f32>) -> Result<Self> {
        check_bits(bits)?;
        if dim == 0 || rotation.len() != dim * dim {
            return Err(Error::invalid(format!(
                "a rotation of dimension {dim} needs {} floats, got {}",
                dim * dim,
                rotation.len()
            )));
        }
        let unit = rotation.chunks_exact(dim).all(|row| {
            let n: f32 = row.iter().map(|x| x * x).sum();
            n.is_finite() && (n - 1.0).abs() < 1e-3
        });
        if !unit {
            return Err(Error::invalid("a rotation row is not of unit length"));
        }
        Ok(Self {
            dim,
            bits,
            rotation,
            turned: Vec::new(),
        })
    }

    /// This quantiser with the index's `centroids` rotated (a query's
    /// residual to centroid `p` is then its rotation minus [`Rq::centroid`]).
    pub fn attach(mut self, isa: Isa, centroids: &[f32]) -> Self {
        let mut turned = vec![0f32; centroids.len()];
        for (c, t) in centroids
            .chunks_exact(self.dim)
            .zip(turned.chunks_exact_mut(self.dim))
        {
            self.rotate(isa, c, t);
        }
        self.turned = turned;
        self
    }

    /// Centroid `p` rotated (after [`Rq::attach`]).
    pub fn centroid(&self, p: usize) -> &[f32] {
        &self.turned[p * self.dim..(p + 1) * self.dim]
    }

    /// Bytes of one bit plane.
    pub fn plane_bytes(&self) -> usize {
        self.dim.div_ceil(8)
    }

    /// Bytes of one row's code (planes and factors).
    pub fn code_width(&self) -> usize {
        usize::from(self.bits) * self.plane_bytes() + FACTORS
    }

    /// Half the grid's span: grid index `c` stands for `c - half`.
    fn half(&self) -> f32 {
        ((1u32 << self.bits) - 1) as f32 / 2.0
    }

    /// `x` turned by the rotation, into `out` (`dim` floats each).
    pub fn rotate(&self, isa: Isa, x: &[f32], out: &mut [f32]) {
        kernels::dot(isa, x, &self.rotation, out);
    }

    /// The codes of `rows` (residuals, `dim` floats each), in parallel.
    pub fn encode(&self, isa: Isa, rows: &[f32]) -> Result<Vec<u8>> {
        let n = rows.len() / self.dim;
        let parts = par_ranges(n, |range| {
            let mut out = Vec::with_capacity(range.len() * self.code_width());
            let mut turned = vec![0f32; self.dim];
            for r in range {
                self.rotate(isa, &rows[r * self.dim..(r + 1) * self.dim], &mut turned);
                self.encode_rotated(&turned, &mut out);
            }
            out
        })?;
        Ok(parts.concat())
    }

    /// Appends the code of one rotated residual `x`.
    fn encode_rotated(&self, x: &[f32], out: &mut Vec<u8>) {
        let grid = self.grid(x);
        let half = self.half();
        let (mut ux, mut n2) = (0f32, 0f32);
        for (c, v) in grid.iter().zip(x) {
            ux += (f32::from(*c) - half) * v;
            n2 += v * v;
        }
        let nb = self.plane_bytes();
        let start = out.len();
        out.resize(start + usize::from(self.bits) * nb, 0);
        for (i, c) in grid.iter().enumerate() {
            for j in 0..usize::from(self.bits) {
                if (c >> j) & 1 == 1 {
                    out[start + j * nb + i / 8] |= 1 << (i % 8);
                }
            }
        }
        // `ux > 0` unless the residual is zero; then the estimate is 0, exact.
        let factor = if ux > 0.0 { n2 / ux } else { 0.0 };
        out.extend_from_slice(&n2.to_le_bytes());
        out.extend_from_slice(&factor.to_le_bytes());
    }

    /// Each coordinate's grid index: the sign with one bit; else the scale
    /// (of [`SCALES`]) whose grid vector points closest to `x`.
    fn grid(&self, x: &[f32]) -> Vec<u8> {
        let top = (1u32 << self.bits) - 1;
        let half = self.half();
        let at = |step: f32, v: f32| (v / step + half).round().clamp(0.0, top as f32) as u8;
        let max = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        if self.bits == 1 || max == 0.0 {
            return x.iter().map(|v| u8::from(*v > 0.0)).collect();
        }
        let mut best = (f32::NEG_INFINITY, 1.0f32);
        for s in SCALES {
            let step = s * max / half;
            let (mut ux, mut uu) = (0f32, 0f32);
            for v in x {
                let u = f32::from(at(step, *v)) - half;
                ux += u * v;
                uu += u * u;
            }
            let cos = ux / uu.sqrt();
            if cos > best.0 {
                best = (cos, step);
            }
        }
        x.iter().map(|v| at(best.1, *v)).collect()
    }

    /// Whether every row of `codes` has finite factors (a non-negative
    /// norm); the planes may hold any bits.
    pub fn codes_valid(&self, codes: &[u8]) -> bool {
        let w = self.code_width();
        codes.len().is_multiple_of(w)
            && codes.chunks_exact(w).all(|c| {
                let (n2, f) = factors(c);
                n2.is_finite() && n2 >= 0.0 && f.is_finite()
            })
    }

    /// The lookup table of a rotated query residual `q` into `table`
    /// (`plane_bytes` blocks of 256: block `j`'s entry `v` sums `q`'s
    /// elements `8j + k` for the bits `k` set in `v`); returns the sum of
    /// `q`.
    pub fn table(&self, q: &[f32], table: &mut Vec<f32>) -> f32 {
        let nb = self.plane_bytes();
        table.clear();
        table.resize(nb * 256, 0.0);
        for j in 0..nb {
            let block = &mut table[j * 256..(j + 1) * 256];
            for v in 1usize..256 {
                let i = 8 * j + v.trailing_zeros() as usize;
                block[v] = block[v & (v - 1)] + q.get(i).copied().unwrap_or(0.0);
            }
        }
        q.iter().sum()
    }

    /// A row's squared residual norm and its estimated inner product with
    /// the query whose [`Rq::table`] is `table` (and sum `sum`).
    #[inline]
    pub fn estimate(&self, table: &[f32], sum: f32, code: &[u8]) -> (f32, f32) {
        let nb = self.plane_bytes();
        let mut dot = 0f32;
        for j in 0..usize::from(self.bits) {
            let plane = &code[j * nb..(j + 1) * nb];
            let s: f32 = plane
                .iter()
                .enumerate()
                .map(|(b, v)| table[b * 256 + usize::from(*v)])
                .sum();
            dot += s * (1u32 << j) as f32;
        }
        let (n2, factor) = factors(code);
        (n2, factor * (dot - self.half() * sum))
    }
}

/// A row code's squared norm and factor (its last eight bytes).
fn factors(code: &[u8]) -> (f32, f32) {
    let at = code.len() - FACTORS;
    let f = |i: usize| f32::from_le_bytes([code[i], code[i + 1], code[i + 2], code[i + 3]]);
    (f(at), f(at + 4))
}

/// `bits` in `1..=MAX_BITS`.
fn check_bits(bits: u8) -> Result<()> {
    if bits == 0 || bits > MAX_BITS {
        return Err(Error::invalid(format!(
            "num_bits for IVF_RQ must be 1 to {MAX_BITS}, got {bits}"
        )));
    }
    Ok(())
}

/// A random orthogonal `dim x dim` matrix: Gaussian rows made orthonormal
/// (modified Gram-Schmidt in f64).
fn random_orthogonal(dim: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    let mut m: Vec<f64> = (0..dim * dim).map(|_| gaussian(&mut rng)).collect();
    for i in 0..dim {
        let (done, rest) = m.split_at_mut(i * dim);
        let row = &mut rest[..dim];
        for prev in done.chunks_exact(dim) {
            let d: f64 = prev.iter().zip(row.iter()).map(|(a, b)| a * b).sum();
            row.iter_mut().zip(prev).for_each(|(x, p)| *x -= d * p);
        }
        let n = row.iter().map(|x| x * x).sum::<f64>().sqrt();
        if n < 1e-9 {
            // A draw inside the span of the rows before (vanishingly rare): draw again.
            return random_orthogonal(dim, seed.wrapping_add(1));
        }
        row.iter_mut().for_each(|x| *x /= n);
    }
    m.into_iter().map(|x| x as f32).collect()
}

/// A standard normal draw (Box-Muller).
fn gaussian(rng: &mut Rng) -> f64 {
    let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let v = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        (0..n * dim).map(|_| gaussian(&mut rng) as f32).collect()
    }

    #[test]
    fn the_rotation_is_orthogonal_and_keeps_lengths() {
        let rq = Rq::new(24, 1, 7).expect("rq");
        let r = &rq.rotation;
        for i in 0..24 {
            for j in 0..24 {
                let d: f32 = (0..24).map(|k| r[i * 24 + k] * r[j * 24 + k]).sum();
                let want = if i == j { 1.0 } else { 0.0 };
                assert!((d - want).abs() < 1e-4, "row {i} . row {j} = {d}");
            }
        }
        let x = rows(1, 24, 3);
        let mut y = vec![0f32; 24];
        rq.rotate(kernels::isa(), &x, &mut y);
        let n = |v: &[f32]| v.iter().map(|a| a * a).sum::<f32>();
        assert!((n(&x) - n(&y)).abs() < 1e-3 * n(&x));
        assert!(Rq::from_rotation(24, 1, vec![0.5; 24 * 24]).is_err());
        assert!(Rq::new(24, 0, 1).is_err() && Rq::new(24, 9, 1).is_err());
    }

    /// The estimate of `<x, q>` is unbiased and tighter with more bits;
    /// the stored norm is exact.
    #[test]
    fn estimates_approach_the_inner_product_with_more_bits() {
        let (dim, n) = (64, 2000);
        let isa = kernels::isa();
        let data = rows(n, dim, 11);
        let q = rows(1, dim, 12);
        let mut errs = Vec::new();
        for bits in [1u8, 2, 4, 8] {
            let rq = Rq::new(dim, bits, 5).expect("rq");
            let codes = rq.encode(isa, &data).expect("encode");
            assert_eq!(codes.len(), n * rq.code_width());
            assert!(rq.codes_valid(&codes));
            let mut qr = vec![0f32; dim];
            rq.rotate(isa, &q, &mut qr);
            let mut table = Vec::new();
            let sum = rq.table(&qr, &mut table);
            let (mut bias, mut sq) = (0f64, 0f64);
            for (r, code) in codes.chunks_exact(rq.code_width()).enumerate() {
                let x = &data[r * dim..(r + 1) * dim];
                let exact: f32 = x.iter().zip(&q).map(|(a, b)| a * b).sum();
                let (n2, est) = rq.estimate(&table, sum, code);
                let norm: f32 = x.iter().map(|a| a * a).sum();
                assert!((n2 - norm).abs() < 1e-3 * norm);
                bias += f64::from(est - exact);
                sq += f64::from(est - exact).powi(2);
            }
            let rms = (sq / n as f64).sqrt();
            // |x| |q| ~ 64: an unbiased mean within a few standard errors.
            assert!((bias / n as f64).abs() < 4.0 * rms / (n as f64).sqrt() + 0.05);
            errs.push(rms);
        }
        assert!(errs.windows(2).all(|w| w[1] < w[0]), "errors {errs:?}");
        assert!(errs[0] < 10.0 && errs[3] < 0.5, "errors {errs:?}");
    }

    #[test]
    fn a_zero_residual_and_damaged_factors() {
        let rq = Rq::new(10, 3, 1).expect("rq");
        let codes = rq.encode(kernels::isa(), &[0.0; 10]).expect("encode");
        let mut table = Vec::new();
        let sum = rq.table(&[1.0; 10], &mut table);
        assert_eq!(rq.estimate(&table, sum, &codes), (0.0, 0.0));
        let mut bad = codes.clone();
        let w = rq.code_width();
        bad[w - 4..].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(rq.codes_valid(&codes) && !rq.codes_valid(&bad));
        assert!(!rq.codes_valid(&codes[..w - 1]));
    }
}
