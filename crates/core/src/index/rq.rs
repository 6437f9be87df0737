//! RaBitQ quantisation (IVF_RQ): a vector's residual to its IVF centroid,
//! turned by a random orthogonal transform, is stored as `bits` bits per
//! dimension on a grid centred on zero, plus two floats: a base and the
//! factor `f = |r|^2 / <u, r>` that makes the estimated inner product with a
//! query unbiased (RaBitQ's `<r, q> ~ <u, q> |r|^2 / <u, r>` with the grid
//! vector `u`; with `bits = 1` the codes are the residual's signs).
//!
//! The squared distance to a query is `|r|^2 + |q - c|^2 - 2 <r, q - c>`,
//! and `<r, q - c> ~ f <u, q> - f <u, c>`: the base stores
//! `|r|^2 + 2 f <u, c>` (all rotated), so a query needs one table for every
//! partition and `|q - c|^2` per partition (a dot index reads only `f`).
//!
//! A row's code is laid out as `bits` bit planes of `ceil(dim / 8)` bytes
//! (plane `j` holds bit `j` of every dimension's grid index), then the base
//! and the factor as little-endian `f32`s. A query is not quantised: it
//! becomes one table of 256 sums per byte of a plane, so a row costs
//! `bits * ceil(dim / 8)` lookups.
//!
//! With more than one bit the top plane is the residual's signs (a grid
//! index's top bit is set exactly when it stands above zero), and three more
//! floats follow: the base and factor of that plane read alone as a 1-bit
//! code, and the error coefficient of its estimate (RaBitQ's bound). A scan
//! reads the top plane first and skips the other planes of a row whose
//! lower bound cannot enter the results ([`Rq::first_stage`]).
//!
//! The transform is structured, not a dense matrix (whose build is cubic and
//! whose use is quadratic in `dim`): [`ROUNDS`] rounds, each of random sign
//! flips, a normalised Walsh-Hadamard transform of the first `2^k <= dim`
//! coordinates, other random sign flips and the same transform of the last
//! `2^k` (the same block when `dim` is a power of two; the flips between the
//! two keep the second from undoing the first). Each step is orthogonal, so
//! the whole is; it costs `O(dim log dim)`.

use std::sync::Arc;

use super::kmeans::{par_ranges, Rng};
use crate::error::{Error, Result};

/// Most bits per dimension (Lance's limit).
pub const MAX_BITS: u8 = 9;
/// Rounds of sign flips and Walsh-Hadamard blocks in a rotation.
pub const ROUNDS: usize = 4;
/// Bytes of the per-row floats after the bit planes: base and factor, then
/// (more than one bit) the top plane's base, factor and error coefficient.
const FACTORS: usize = 8;
/// Bytes of the top plane's floats (more than one bit).
const FIRST: usize = 12;
/// RaBitQ's confidence multiplier of the 1-bit error bound (Lance's 1.9).
pub const BOUND: f32 = 1.9;
/// Grid scales tried per row (multi-bit), as fractions of the largest that
/// keeps every coordinate inside the grid.
const SCALES: [f32; 8] = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3];

/// A RaBitQ quantiser: its rotation and bits per dimension. Clones share
/// the rotation and the rotated centroids.
#[derive(Debug, Clone)]
pub struct Rq {
    /// Vector dimension.
    pub dim: usize,
    /// Bits per dimension, 1 to [`MAX_BITS`].
    pub bits: u8,
    /// The rotation's sign flips: `2 * ROUNDS` rows of `ceil(dim / 8)` bytes
    /// (two per round), bit `i` set where coordinate `i` is negated.
    signs: Arc<[u8]>,
    /// The index's centroids rotated, `dim` floats each (see [`Rq::attach`]).
    turned: Arc<[f32]>,
}

impl Rq {
    /// A quantiser with a random rotation drawn from `seed`.
    pub fn new(dim: usize, bits: u8, seed: u64) -> Result<Self> {
        let mut rng = Rng::new(seed);
        let signs = (0..2 * ROUNDS * dim.div_ceil(8))
            .map(|_| rng.next_u64() as u8)
            .collect();
        Self::from_signs(dim, bits, signs)
    }

    /// A quantiser from stored sign flips (`2 * ROUNDS` rows of
    /// `ceil(dim / 8)` bytes), checked.
    pub fn from_signs(dim: usize, bits: u8, signs: Vec<u8>) -> Result<Self> {
        check_bits(bits)?;
        if dim == 0 || signs.len() != 2 * ROUNDS * dim.div_ceil(8) {
            return Err(Error::invalid(format!(
                "a rotation of dimension {dim} needs {} rows of {} sign bytes, got {} bytes",
                2 * ROUNDS,
                dim.div_ceil(8),
                signs.len()
            )));
        }
        Ok(Self {
            dim,
            bits,
            signs: signs.into(),
            turned: Arc::from(Vec::new()),
        })
    }

    /// The sign flips as stored (see [`Rq::from_signs`]).
    pub fn signs(&self) -> &[u8] {
        &self.signs
    }

    /// This quantiser with the index's `centroids` rotated (a query's
    /// residual to centroid `p` is then its rotation minus [`Rq::centroid`]).
    pub fn attach(mut self, centroids: &[f32]) -> Self {
        let mut turned = vec![0f32; centroids.len()];
        for (c, t) in centroids
            .chunks_exact(self.dim)
            .zip(turned.chunks_exact_mut(self.dim))
        {
            self.rotate(c, t);
        }
        self.turned = turned.into();
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
        code_width(self.dim, self.bits)
    }

    /// Bytes of one row's bit planes.
    fn planes_width(&self) -> usize {
        usize::from(self.bits) * self.plane_bytes()
    }

    /// Half the grid's span: grid index `c` stands for `c - half`.
    fn half(&self) -> f32 {
        ((1u32 << self.bits) - 1) as f32 / 2.0
    }

    /// `x` turned by the rotation, into `out` (`dim` floats each).
    pub fn rotate(&self, x: &[f32], out: &mut [f32]) {
        out.copy_from_slice(x);
        let nb = self.dim.div_ceil(8);
        let block = 1usize << self.dim.ilog2();
        for (step, flips) in self.signs.chunks_exact(nb).enumerate() {
            for (i, v) in out.iter_mut().enumerate() {
                if (flips[i / 8] >> (i % 8)) & 1 == 1 {
                    *v = -*v;
                }
            }
            // Even steps: the first block; odd ones: the last.
            let start = if step % 2 == 0 { 0 } else { self.dim - block };
            hadamard(&mut out[start..start + block]);
        }
    }

    /// The codes of `rows` (vectors, `dim` floats each) in partitions
    /// `parts` (of the centroids [`Rq::attach`]ed), in parallel.
    pub fn encode(&self, rows: &[f32], parts: &[u32]) -> Result<Vec<u8>> {
        let n = rows.len() / self.dim;
        if parts.len() != n
            || parts
                .iter()
                .any(|p| (*p as usize + 1) * self.dim > self.turned.len())
        {
            return Err(Error::internal(
                "rows to encode outside the attached partitions",
            ));
        }
        let done = par_ranges(n, |range| {
            let mut out = Vec::with_capacity(range.len() * self.code_width());
            let mut res = vec![0f32; self.dim];
            for r in range {
                self.rotate(&rows[r * self.dim..(r + 1) * self.dim], &mut res);
                let c = self.centroid(parts[r] as usize);
                res.iter_mut().zip(c).for_each(|(x, m)| *x -= m);
                self.encode_residual(&res, c, &mut out);
            }
            out
        })?;
        Ok(done.concat())
    }

    /// Appends the code of one rotated residual `x` to rotated centroid `c`.
    /// The sums are taken in f64 and stored saturated: a vector too long for
    /// f32 (a finite 1e30 component) gets the largest finite base and a zero
    /// factor, so it ranks last by estimate and is re-ranked exactly, never a
    /// non-finite number that would make the index unreadable.
    fn encode_residual(&self, x: &[f32], c: &[f32], out: &mut Vec<u8>) {
        let grid = self.grid(x);
        let half = f64::from(self.half());
        let (mut ux, mut uc, mut n2) = (0f64, 0f64, 0f64);
        for ((g, v), m) in grid.iter().zip(x).zip(c) {
            let (v, u) = (f64::from(*v), f64::from(*g) - half);
            ux += u * v;
            uc += u * f64::from(*m);
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
        push_factors(n2, ux, uc, out);
        if self.bits > 1 {
            // The top plane alone: signs s_i = +-1/2 (top bit set: above zero).
            let top = 1u16 << (self.bits - 1);
            let (mut sx, mut sc) = (0f64, 0f64);
            for ((g, v), m) in grid.iter().zip(x).zip(c) {
                let sign = if g & top != 0 { 0.5 } else { -0.5 };
                sx += sign * f64::from(*v);
                sc += sign * f64::from(*m);
            }
            push_factors(n2, sx, sc, out);
            // |r| sqrt((1 - cos^2) / cos^2) / sqrt(dim - 1), cos = <s, r> / (|s| |r|).
            let dim = self.dim as f64;
            let cos2 = if n2 > 0.0 {
                sx * sx / (0.25 * dim * n2)
            } else {
                1.0
            };
            let err = (n2 * (1.0 - cos2).max(0.0) / cos2.max(1e-12) / (dim - 1.0).max(1.0)).sqrt();
            let err = if err.is_finite() && err < f64::from(f32::MAX) {
                err as f32
            } else {
                f32::MAX
            };
            out.extend_from_slice(&err.to_le_bytes());
        }
    }

    /// Each coordinate's grid index: the sign with one bit; else the scale
    /// (of [`SCALES`]) whose grid vector points closest to `x`.
    fn grid(&self, x: &[f32]) -> Vec<u16> {
        let top = (1u32 << self.bits) - 1;
        let half = self.half();
        let at = |step: f32, v: f32| (v / step + half).round().clamp(0.0, top as f32) as u16;
        let max = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        if self.bits == 1 || max == 0.0 {
            return x.iter().map(|v| u16::from(*v > 0.0)).collect();
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

    /// Whether every row of `codes` has finite floats (a non-negative error
    /// coefficient); the planes may hold any bits.
    pub fn codes_valid(&self, codes: &[u8]) -> bool {
        let (w, at) = (self.code_width(), self.planes_width());
        codes.len().is_multiple_of(w)
            && codes.chunks_exact(w).all(|c| {
                (at..w).step_by(4).all(|i| float(c, i).is_finite())
                    && (self.bits == 1 || float(c, w - 4) >= 0.0)
            })
    }

    /// The lookup table of a rotated query `q` into `table`
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

    /// A row's base and its estimated inner product (residual with query)
    /// for the query whose [`Rq::table`] is `table` (and sum `sum`).
    #[inline]
    pub fn estimate(&self, table: &[f32], sum: f32, code: &[u8]) -> (f32, f32) {
        let nb = self.plane_bytes();
        let mut dot = 0f32;
        for j in 0..usize::from(self.bits) {
            dot += plane_sum(table, &code[j * nb..(j + 1) * nb]) * (1u32 << j) as f32;
        }
        let at = self.planes_width();
        (
            float(code, at),
            float(code, at + 4) * (dot - self.half() * sum),
        )
    }

    /// With more than one bit: the top plane's base, estimated inner product
    /// and error coefficient (the estimate is within `BOUND * error * |q|`
    /// of the true one, `q` the query or its residual as for [`Rq::estimate`]).
    #[inline]
    pub fn first_stage(&self, table: &[f32], sum: f32, code: &[u8]) -> (f32, f32, f32) {
        let nb = self.plane_bytes();
        let at = self.planes_width();
        let s = plane_sum(table, &code[at - nb..at]);
        let first = at + FACTORS;
        (
            float(code, first),
            float(code, first + 4) * (s - 0.5 * sum),
            float(code, first + 8),
        )
    }
}

/// Bytes of one row's code of `bits` per dimension over `dim`: the planes,
/// the base and factor, and (more than one bit) the top plane's three floats.
pub fn code_width(dim: usize, bits: u8) -> usize {
    usize::from(bits) * dim.div_ceil(8) + FACTORS + if bits > 1 { FIRST } else { 0 }
}

/// Appends a base and factor: `f = |r|^2 / <u, r>`, base `|r|^2 + 2 f <u, c>`,
/// saturated (a zero residual's estimate is 0, exact).
fn push_factors(n2: f64, ux: f64, uc: f64, out: &mut Vec<u8>) {
    // `ux > 0` unless the residual is zero.
    let factor = if ux > 0.0 { n2 / ux } else { 0.0 };
    let base = n2 + 2.0 * factor * uc;
    let fits = |x: f64| x.is_finite() && x.abs() < f64::from(f32::MAX);
    let (base, factor) = if fits(base) && fits(factor) {
        (base as f32, factor as f32)
    } else {
        (f32::MAX, 0.0)
    };
    out.extend_from_slice(&base.to_le_bytes());
    out.extend_from_slice(&factor.to_le_bytes());
}

/// The sum of the query's elements whose bits `plane` sets, from its
/// [`Rq::table`]: four running sums, so the additions do not wait on each other.
#[inline]
fn plane_sum(table: &[f32], plane: &[u8]) -> f32 {
    let mut acc = [0f32; 4];
    let (quads, rest) = plane.split_at(plane.len() / 4 * 4);
    for (i, q) in quads.chunks_exact(4).enumerate() {
        let t = &table[i * 1024..(i + 1) * 1024];
        for k in 0..4 {
            acc[k] += t[k * 256 + usize::from(q[k])];
        }
    }
    for (k, v) in rest.iter().enumerate() {
        acc[k] += table[(quads.len() + k) * 256 + usize::from(*v)];
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

/// The little-endian f32 at byte `i` of a code.
fn float(code: &[u8], i: usize) -> f32 {
    f32::from_le_bytes([code[i], code[i + 1], code[i + 2], code[i + 3]])
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

/// The normalised Walsh-Hadamard transform of `v` (its length a power of
/// two), in place: orthogonal, its own inverse.
fn hadamard(v: &mut [f32]) {
    let n = v.len();
    let mut h = 1;
    while h < n {
        for start in (0..n).step_by(2 * h) {
            let (lo, hi) = v[start..start + 2 * h].split_at_mut(h);
            for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
                let (x, y) = (*a, *b);
                *a = x + y;
                *b = x - y;
            }
        }
        h *= 2;
    }
    let scale = 1.0 / (n as f32).sqrt();
    v.iter_mut().for_each(|x| *x *= scale);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standard normal draw (Box-Muller).
    fn gaussian(rng: &mut Rng) -> f64 {
        let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let v = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    fn rows(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        (0..n * dim).map(|_| gaussian(&mut rng) as f32).collect()
    }

    /// The transform of each unit axis is a row of an orthogonal matrix (a
    /// power of two and not), and an axis is spread over every coordinate.
    #[test]
    fn the_rotation_is_orthogonal_and_spreads_every_axis() {
        for dim in [1usize, 7, 24, 64, 100] {
            let rq = Rq::new(dim, 1, 7).expect("rq");
            let mut m = vec![0f32; dim * dim];
            for i in 0..dim {
                let mut e = vec![0f32; dim];
                e[i] = 1.0;
                rq.rotate(&e, &mut m[i * dim..(i + 1) * dim]);
            }
            for i in 0..dim {
                for j in 0..dim {
                    let d: f32 = (0..dim).map(|k| m[i * dim + k] * m[j * dim + k]).sum();
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((d - want).abs() < 1e-4, "dim {dim}: {i} . {j} = {d}");
                }
            }
            if dim >= 24 {
                // No coordinate keeps much of an axis: the largest share is of the order a random
                // rotation gives (about 2 ln(dim) / dim), far from 1.
                let most = m.iter().fold(0f32, |a, v| a.max(v * v));
                let bound = 4.0 * (dim as f32).ln() / dim as f32;
                assert!(
                    most < bound,
                    "dim {dim}: an axis keeps {most} of its length"
                );
            }
        }
        assert!(Rq::from_signs(24, 1, vec![0; 3]).is_err());
        assert!(Rq::new(24, 0, 1).is_err() && Rq::new(24, 10, 1).is_err());
    }

    /// The estimate of `<x, q>` is unbiased and tighter with more bits;
    /// the stored norm is exact.
    #[test]
    fn estimates_approach_the_inner_product_with_more_bits() {
        let (dim, n) = (64, 2000);
        let data = rows(n, dim, 11);
        let q = rows(1, dim, 12);
        let mut errs = Vec::new();
        for bits in [1u8, 2, 4, 9] {
            let rq = Rq::new(dim, bits, 5).expect("rq").attach(&[0.0; 64]);
            let codes = rq.encode(&data, &[0; 2000]).expect("encode");
            assert_eq!(codes.len(), n * rq.code_width());
            assert!(rq.codes_valid(&codes));
            let mut qr = vec![0f32; dim];
            rq.rotate(&q, &mut qr);
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

    /// With centroids: the base, `|q - c|^2` and the inner product estimate
    /// the squared distance to the vector itself, unbiased, closer with more bits.
    #[test]
    fn distances_to_vectors_around_centroids_are_estimated() {
        let (dim, n) = (48, 1500);
        let centroids = rows(3, dim, 21).iter().map(|x| 5.0 * x).collect::<Vec<_>>();
        let parts: Vec<u32> = (0..n as u32).map(|i| i % 3).collect();
        let mut data = rows(n, dim, 22);
        for (r, p) in parts.iter().enumerate() {
            for j in 0..dim {
                data[r * dim + j] += centroids[*p as usize * dim + j];
            }
        }
        let q = rows(1, dim, 23);
        let mut last = f64::INFINITY;
        for bits in [1u8, 3, 6] {
            let rq = Rq::new(dim, bits, 9).expect("rq").attach(&centroids);
            let codes = rq.encode(&data, &parts).expect("encode");
            let mut qr = vec![0f32; dim];
            rq.rotate(&q, &mut qr);
            let mut table = Vec::new();
            let sum = rq.table(&qr, &mut table);
            let (mut bias, mut sq, mut outside) = (0f64, 0f64, 0usize);
            for (r, code) in codes.chunks_exact(rq.code_width()).enumerate() {
                let x = &data[r * dim..(r + 1) * dim];
                let exact: f32 = x.iter().zip(&q).map(|(a, b)| (a - b).powi(2)).sum();
                let c = rq.centroid(parts[r] as usize);
                let qc: f32 = qr.iter().zip(c).map(|(a, b)| (a - b).powi(2)).sum();
                let (base, ip) = rq.estimate(&table, sum, code);
                let e = f64::from(base + qc - 2.0 * ip - exact);
                bias += e;
                sq += e * e;
                if bits > 1 {
                    // The top plane's estimate is within its bound for nearly every row.
                    let (b1, ip1, err) = rq.first_stage(&table, sum, code);
                    let off = (b1 + qc - 2.0 * ip1 - exact).abs();
                    outside += usize::from(off > 2.0 * BOUND * err * qc.sqrt());
                    assert!(
                        err > 0.0 && off < 20.0 * err * qc.sqrt(),
                        "row {r}: {off} vs {err}"
                    );
                }
            }
            // BOUND = 1.9 is about 1.9 standard deviations of the estimate's error: ~6% of rows
            // fall outside it (Lance's choice; a row is skipped only when it also lands past the top).
            assert!(
                outside * 100 < 8 * n,
                "bits {bits}: {outside} rows past the bound"
            );
            let rms = (sq / n as f64).sqrt();
            assert!(
                (bias / n as f64).abs() < 4.0 * rms / (n as f64).sqrt() + 0.1,
                "bits {bits}: bias {}",
                bias / n as f64
            );
            assert!(rms < last, "bits {bits}: rms {rms} not below {last}");
            last = rms;
        }
        // Squared distances here are ~1,300: 6 bits estimate them within ~0.1%.
        assert!(last < 3.0, "rms at 6 bits {last}");
    }

    #[test]
    fn a_zero_residual_and_damaged_factors() {
        let rq = Rq::new(10, 3, 1).expect("rq").attach(&[0.0; 10]);
        let codes = rq.encode(&[0.0; 10], &[0]).expect("encode");
        assert!(rq.encode(&[0.0; 10], &[1]).is_err());
        let mut table = Vec::new();
        let sum = rq.table(&[1.0; 10], &mut table);
        assert_eq!(rq.estimate(&table, sum, &codes), (0.0, 0.0));
        let mut bad = codes.clone();
        let w = rq.code_width();
        bad[w - 4..].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(rq.codes_valid(&codes) && !rq.codes_valid(&bad));
        assert!(!rq.codes_valid(&codes[..w - 1]));
        // A finite row too long for an f32 norm: saturated, a zero factor, still valid.
        let mut huge = vec![1.0f32; 10];
        huge[3] = 1e30;
        let codes = rq.encode(&huge, &[0]).expect("encode");
        assert!(rq.codes_valid(&codes));
        assert_eq!(rq.estimate(&table, sum, &codes), (f32::MAX, 0.0));
    }
}
