//! Product quantisation: a vector (an IVF residual) split into `m`
//! sub-vectors, each replaced by the number of its nearest of `2^bits`
//! trained sub-centroids, one byte per sub-vector. Distances to a query are
//! then `m` table lookups (asymmetric distance: the query stays exact).

use super::kmeans::{self, par_ranges};
use crate::error::{Error, Result};
use crate::vector::kernels::{self, Isa};

/// A trained product quantiser.
#[derive(Debug, Clone)]
pub struct Pq {
    /// Sub-vectors per vector.
    pub m: usize,
    /// Bits per code (4 or 8): `2^bits` sub-centroids per sub-vector.
    pub bits: u8,
    /// Floats per sub-vector.
    pub dsub: usize,
    /// Sub-centroids: `m` blocks of `2^bits` rows of `dsub`.
    pub codebook: Vec<f32>,
    /// Each block of `codebook` packed (see [`kernels::pack`]).
    packed: Vec<f32>,
}

impl Pq {
    /// Sub-centroids per sub-vector.
    pub fn k(&self) -> usize {
        1 << self.bits
    }

    /// A quantiser from a stored codebook, checked against `dim`.
    pub fn from_codebook(dim: usize, m: usize, bits: u8, codebook: Vec<f32>) -> Result<Self> {
        check(dim, m, bits)?;
        let dsub = dim / m;
        let k = 1usize << bits;
        if codebook.len() != m * k * dsub {
            return Err(Error::invalid(format!(
                "a PQ codebook of {m} x {k} x {dsub} needs {} floats, got {}",
                m * k * dsub,
                codebook.len()
            )));
        }
        let packed = codebook
            .chunks_exact(k * dsub)
            .flat_map(|b| kernels::pack(b, dsub))
            .collect();
        Ok(Self {
            m,
            bits,
            dsub,
            codebook,
            packed,
        })
    }

    /// Trains on `data` (rows of `dim`), each sub-space on its own.
    pub fn train(
        data: &[f32],
        dim: usize,
        m: usize,
        bits: u8,
        iters: usize,
        seed: u64,
    ) -> Result<Self> {
        check(dim, m, bits)?;
        let dsub = dim / m;
        let n = data.len() / dim;
        let k = 1usize << bits;
        let mut codebook = Vec::with_capacity(m * k * dsub);
        let mut sub = vec![0f32; n * dsub];
        for s in 0..m {
            for r in 0..n {
                sub[r * dsub..(r + 1) * dsub]
                    .copy_from_slice(&data[r * dim + s * dsub..r * dim + (s + 1) * dsub]);
            }
            codebook.extend(kmeans::train(
                &sub,
                dsub,
                k,
                iters,
                seed.wrapping_add(s as u64),
            )?);
        }
        Self::from_codebook(dim, m, bits, codebook)
    }

    /// The codes of `rows` (rows of `m * dsub`), `m` bytes per row.
    pub fn encode(&self, isa: Isa, rows: &[f32]) -> Result<Vec<u8>> {
        let dim = self.m * self.dsub;
        let n = rows.len() / dim;
        let k = self.k();
        let parts = par_ranges(n, |range| {
            let mut codes = Vec::with_capacity(range.len() * self.m);
            for r in range {
                for s in 0..self.m {
                    let x = &rows[r * dim + s * self.dsub..r * dim + (s + 1) * self.dsub];
                    let ct = &self.packed[s * k * self.dsub..(s + 1) * k * self.dsub];
                    codes.push(kernels::nearest_packed(isa, x, ct, k).0 as u8);
                }
            }
            codes
        })?;
        Ok(parts.concat())
    }

    /// The lookup table of squared L2 distances from `x` (a query residual)
    /// to every sub-centroid: `m` rows of `2^bits`.
    pub fn l2_table(&self, isa: Isa, x: &[f32]) -> Vec<f32> {
        let k = self.k();
        let mut t = vec![0f32; self.m * k];
        for s in 0..self.m {
            let ct = &self.packed[s * k * self.dsub..(s + 1) * k * self.dsub];
            kernels::l2_packed(
                isa,
                &x[s * self.dsub..(s + 1) * self.dsub],
                ct,
                &mut t[s * k..(s + 1) * k],
            );
        }
        t
    }

    /// The lookup table of dot products of `q` with every sub-centroid.
    pub fn dot_table(&self, isa: Isa, q: &[f32]) -> Vec<f32> {
        let k = self.k();
        let mut t = vec![0f32; self.m * k];
        for s in 0..self.m {
            let block = &self.codebook[s * k * self.dsub..(s + 1) * k * self.dsub];
            kernels::dot(
                isa,
                &q[s * self.dsub..(s + 1) * self.dsub],
                block,
                &mut t[s * k..(s + 1) * k],
            );
        }
        t
    }

    /// The table sum for one row's codes.
    #[inline]
    pub fn lookup(&self, table: &[f32], codes: &[u8]) -> f32 {
        let k = self.k();
        codes
            .iter()
            .enumerate()
            .map(|(s, c)| table[s * k + usize::from(*c)])
            .sum()
    }
}

/// `m` must divide `dim`; `bits` is 4 or 8.
fn check(dim: usize, m: usize, bits: u8) -> Result<()> {
    if m == 0 || !dim.is_multiple_of(m) {
        return Err(Error::invalid(format!(
            "num_sub_vectors ({m}) must divide the vector dimension ({dim})"
        )));
    }
    if bits != 4 && bits != 8 {
        return Err(Error::invalid(format!(
            "num_bits must be 4 or 8, got {bits}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_approximate_the_vectors() {
        let mut rng = kmeans::Rng::new(5);
        let dim = 16;
        let data: Vec<f32> = (0..2000 * dim)
            .map(|_| rng.below(1000) as f32 / 1000.0)
            .collect();
        let pq = Pq::train(&data, dim, 4, 8, 20, 1).expect("train");
        let isa = kernels::isa();
        let codes = pq.encode(isa, &data).expect("encode");
        assert_eq!(codes.len(), 2000 * 4);
        // The table distance of a row to itself is its quantisation error:
        // far smaller than the spread of the data (~dim / 6).
        let mut err = 0f32;
        for r in 0..100 {
            let t = pq.l2_table(isa, &data[r * dim..(r + 1) * dim]);
            err += pq.lookup(&t, &codes[r * 4..(r + 1) * 4]);
        }
        assert!(err / 100.0 < 0.5, "mean quantisation error {}", err / 100.0);
        assert!(Pq::train(&data, dim, 3, 8, 5, 1).is_err());
        assert!(Pq::train(&data, dim, 4, 6, 5, 1).is_err());
    }
}
