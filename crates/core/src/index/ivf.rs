//! The IVF vector index: rows split into partitions by their nearest
//! k-means centroid; each partition's rows stored together, either as the
//! vectors themselves (IVF_FLAT), as product-quantiser codes of their
//! residual to the centroid (IVF_PQ), as RaBitQ codes of it (IVF_RQ, [`super::rq`]),
//! or as scalar-quantised vectors linked by HNSW graphs (IVF_HNSW_SQ). A search ranks the centroids, scans
//! the nearest partitions (`nprobes`) and returns candidate row ids, nearest
//! first by the index's (approximate) distance; the caller re-ranks them
//! exactly. Cosine indexes hold unit vectors (cosine is then L2 / 2).

use super::hierarchy;
use super::hnsw::{self, Graph, HnswParams, Space as _, Sq};
use super::kmeans::{self, par_ranges, Rng};
use super::pq::Pq;
use super::rq::{self, Rq};
use crate::error::{Error, Result};
use crate::query::{DistanceType, IndexTuning};
use crate::vector::kernels::{self, Isa};
use crate::vector::topk::{Hit, TopK};
use crate::vector::AnnIndex;

/// Partitions probed when the query does not say (Lance's default).
pub const DEFAULT_NPROBES: usize = 20;
/// HNSW search width when the query does not say.
pub const DEFAULT_EF: usize = 64;
/// Iterations of k-means when the request does not say.
pub const DEFAULT_MAX_ITERATIONS: usize = 50;
/// Most k-means iterations a request may ask for.
pub const MAX_ITERATIONS_LIMIT: usize = 10_000;
/// Training rows per centroid when the request does not say.
pub const DEFAULT_SAMPLE_RATE: usize = 256;

/// What a partition stores per row.
#[derive(Debug, Clone)]
pub enum Payload {
    /// The vectors (index space), `dim` floats per row.
    Flat(Vec<f32>),
    /// Product-quantiser codes of the residuals, `pq.m` bytes per row.
    Pq {
        /// The quantiser.
        pq: Pq,
        /// The codes.
        codes: Vec<u8>,
    },
    /// RaBitQ codes of the residuals, `rq.code_width()` bytes per row.
    Rq {
        /// The quantiser (its centroids attached).
        rq: Rq,
        /// The codes.
        codes: Vec<u8>,
    },
    /// Scalar-quantised vectors (`dim` bytes per row) and one HNSW graph
    /// per partition (IVF_HNSW_SQ).
    Hnsw {
        /// The quantiser.
        sq: Sq,
        /// The codes.
        codes: Vec<u8>,
        /// Partition `p`'s graph, over its rows in order.
        graphs: Vec<Graph>,
        /// How the graphs are built.
        params: HnswParams,
    },
}

/// A built IVF index.
#[derive(Debug, Clone)]
pub struct IvfIndex {
    /// The distance it was built for.
    pub distance: DistanceType,
    /// Vector dimension.
    pub dim: usize,
    /// Centroids, `dim` floats each.
    pub centroids: Vec<f32>,
    centroids_packed: Vec<f32>,
    /// Partition `p` holds rows `offsets[p]..offsets[p + 1]`.
    pub offsets: Vec<usize>,
    /// Row ids, partition by partition.
    pub row_ids: Vec<u64>,
    /// Per-row payload, in the order of `row_ids`.
    pub payload: Payload,
}

/// How to build an IVF index.
#[derive(Debug, Clone, PartialEq)]
pub struct IvfParams {
    /// The distance.
    pub distance: DistanceType,
    /// Partitions (from the row count when `None`).
    pub num_partitions: Option<usize>,
    /// Rows per partition wanted (used when `num_partitions` is `None`).
    pub target_partition_size: Option<usize>,
    /// Training rows per centroid.
    pub sample_rate: usize,
    /// k-means iterations.
    pub max_iterations: usize,
    /// Product quantisation `(num_sub_vectors, num_bits)`; flat when `None`.
    pub pq: Option<(usize, u8)>,
    /// HNSW graphs over scalar-quantised vectors (IVF_HNSW_SQ).
    pub hnsw: Option<HnswParams>,
    /// RaBitQ bits per dimension (IVF_RQ).
    pub rq: Option<u8>,
}

/// Rows to index: their ids and vectors (already in index space, see
/// [`to_index_space`]).
#[derive(Debug, Clone, Default)]
pub struct Vectors {
    /// Row ids.
    pub row_ids: Vec<u64>,
    /// `dim` floats per row.
    pub data: Vec<f32>,
}

/// Rows added to an index without rewriting it (a delta file): their ids,
/// partitions and payload (flat vectors or PQ codes).
#[derive(Debug, Clone)]
pub struct Delta {
    /// Row ids.
    pub row_ids: Vec<u64>,
    /// Each row's partition.
    pub parts: Vec<u32>,
    /// The rows' payload, in the order of `row_ids`.
    pub payload: Payload,
}

impl Delta {
    /// This delta's rows, then `next`'s (as applying the two in turn); both
    /// must carry the same kind of payload.
    pub fn then(mut self, next: Delta) -> Result<Delta> {
        match (&mut self.payload, next.payload) {
            (Payload::Flat(a), Payload::Flat(b)) => a.extend(b),
            (Payload::Pq { codes: a, .. }, Payload::Pq { codes: b, .. })
            | (Payload::Rq { codes: a, .. }, Payload::Rq { codes: b, .. })
            | (Payload::Hnsw { codes: a, .. }, Payload::Hnsw { codes: b, .. }) => a.extend(b),
            _ => return Err(Error::internal("deltas of different payloads")),
        }
        self.row_ids.extend(next.row_ids);
        self.parts.extend(next.parts);
        Ok(self)
    }
}

/// Vectors as an index of `distance` holds them: unit length for cosine (a
/// zero vector stays zero: its cosine is undefined and never returned). The
/// norm is taken in f64: in f32 a row of 1e19s would overflow it to inf and
/// become a zero vector, one of 1e-20s lose its precision.
pub fn to_index_space(distance: DistanceType, data: &mut [f32], dim: usize) {
    if distance != DistanceType::Cosine {
        return;
    }
    for row in data.chunks_exact_mut(dim) {
        let n = row
            .iter()
            .map(|x| f64::from(*x).powi(2))
            .sum::<f64>()
            .sqrt();
        if n > 0.0 {
            row.iter_mut().for_each(|x| *x = (f64::from(*x) / n) as f32);
        }
    }
}

impl IvfParams {
    /// Partitions for `n` rows: as asked, or `n / target_partition_size`,
    /// or about `sqrt(n)`.
    pub fn partitions_for(&self, n: usize) -> usize {
        match (self.num_partitions, self.target_partition_size) {
            (Some(p), _) => p,
            (None, Some(t)) if t > 0 => n.div_ceil(t).max(1),
            _ => ((n as f64).sqrt().round() as usize).max(1),
        }
    }
}

/// Builds an index over `v` (`dim`-float rows).
pub fn build(v: &Vectors, dim: usize, p: &IvfParams) -> Result<IvfIndex> {
    let n = v.row_ids.len();
    let nlist = p.partitions_for(n);
    if nlist == 0 || n < nlist {
        return Err(Error::invalid(format!(
            "an IVF index with {nlist} partitions needs at least {nlist} rows with a vector to train on, the table has {n}; add rows or ask for fewer partitions (num_partitions)"
        )));
    }
    if let Some((_, bits)) = p.pq {
        let need = 1usize << bits;
        if n < need {
            return Err(Error::invalid(format!(
                "product quantisation with num_bits = {bits} needs at least {need} rows with a vector to train on, the table has {n}; add rows or use IVF_FLAT"
            )));
        }
    }
    let isa = kernels::isa();
    let mut rng = Rng::new(0x6d65_6d77_616c);
    let train = gather(
        &v.data,
        dim,
        &kmeans::sample(n, nlist.saturating_mul(p.sample_rate.max(1)), &mut rng),
    );
    let centroids = hierarchy::train(&train, dim, nlist, p.max_iterations, rng.next_u64())?;
    let centroids_packed = kernels::pack(&centroids, dim);
    let (parts, _) = kmeans::assign(isa, &v.data, dim, &centroids_packed, nlist)?;
    let payload = match (p.pq, p.hnsw, p.rq) {
        (_, _, Some(bits)) => Payload::Rq {
            rq: Rq::new(dim, bits, rng.next_u64())?.attach(&centroids),
            codes: Vec::new(),
        },
        (_, Some(params), None) => Payload::Hnsw {
            sq: Sq::train(&v.data, dim),
            codes: Vec::new(),
            graphs: Vec::new(),
            params,
        },
        (None, None, None) => Payload::Flat(Vec::new()),
        (Some((m, bits)), None, None) => {
            let sample =
                kmeans::sample(n, p.sample_rate.max(1).saturating_mul(1 << bits), &mut rng);
            let mut res = gather(&v.data, dim, &sample);
            for (row, &r) in res.chunks_exact_mut(dim).zip(&sample) {
                subtract(row, &centroids, dim, parts[r] as usize);
            }
            let pq = Pq::train(&res, dim, m, bits, p.max_iterations, rng.next_u64())?;
            Payload::Pq {
                pq,
                codes: Vec::new(),
            }
        }
    };
    let empty = IvfIndex {
        distance: p.distance,
        dim,
        centroids,
        centroids_packed,
        offsets: vec![0; nlist + 1],
        row_ids: Vec::new(),
        payload,
    };
    empty.with_rows(&|_| true, v, &parts)
}

/// Rows `idx` of `data`, concatenated.
fn gather(data: &[f32], dim: usize, idx: &[usize]) -> Vec<f32> {
    let mut out = Vec::with_capacity(idx.len() * dim);
    for &r in idx {
        out.extend_from_slice(&data[r * dim..(r + 1) * dim]);
    }
    out
}

/// `row -= centroid c`.
fn subtract(row: &mut [f32], centroids: &[f32], dim: usize, c: usize) {
    for (x, m) in row.iter_mut().zip(&centroids[c * dim..(c + 1) * dim]) {
        *x -= m;
    }
}

impl Payload {
    /// Whether this payload fits `rows` rows of `dim` in partitions `offsets`
    /// (sizes, code ranges, finite factors, graph shapes).
    fn check(&self, dim: usize, offsets: &[usize], rows: usize) -> std::result::Result<(), String> {
        let nlist = offsets.len() - 1;
        match self {
            Payload::Flat(v) if v.len() != rows * dim => {
                return Err(format!("{} vector floats for {} rows", v.len(), rows));
            }
            Payload::Pq { pq, codes } => {
                if pq.m * pq.dsub != dim || codes.len() != rows * pq.m {
                    return Err(format!(
                        "{} code bytes for {} rows of {} sub-vectors",
                        codes.len(),
                        rows,
                        pq.m
                    ));
                }
                if codes.iter().any(|c| usize::from(*c) >= pq.k()) {
                    return Err(format!("a code is out of range for {} bits", pq.bits));
                }
            }
            Payload::Rq { rq, codes } => {
                if rq.dim != dim || codes.len() != rows * rq.code_width() {
                    return Err(format!(
                        "{} code bytes for {} rows of {} bytes",
                        codes.len(),
                        rows,
                        rq.code_width()
                    ));
                }
                if !rq.codes_valid(codes) {
                    return Err("a row's norm or factor is not a finite number".into());
                }
            }
            Payload::Hnsw {
                codes, graphs, sq, ..
            } => {
                if sq.min.len() != dim || sq.step.len() != dim || codes.len() != rows * dim {
                    return Err(format!(
                        "{} code bytes for {} rows of dimension {dim}",
                        codes.len(),
                        rows
                    ));
                }
                if graphs.len() != nlist
                    || graphs
                        .iter()
                        .enumerate()
                        .any(|(p, g)| g.links.len() != offsets[p + 1] - offsets[p])
                {
                    return Err("the graphs do not match the partitions".into());
                }
            }
            Payload::Flat(_) => {}
        }
        Ok(())
    }

    /// The same model (quantiser, graph parameters) holding `floats` (IVF_FLAT) or `bytes`
    /// (codes); an IVF_HNSW_SQ payload with no graphs.
    fn holding(&self, floats: Vec<f32>, bytes: Vec<u8>) -> Payload {
        match self {
            Payload::Flat(_) => Payload::Flat(floats),
            Payload::Pq { pq, .. } => Payload::Pq {
                pq: pq.clone(),
                codes: bytes,
            },
            Payload::Rq { rq, .. } => Payload::Rq {
                rq: rq.clone(),
                codes: bytes,
            },
            Payload::Hnsw { sq, params, .. } => Payload::Hnsw {
                sq: sq.clone(),
                codes: bytes,
                graphs: Vec::new(),
                params: *params,
            },
        }
    }
}

impl IvfIndex {
    /// An index from stored parts, checked for consistency (a damaged file
    /// must not make a search read out of bounds).
    pub fn from_parts(
        distance: DistanceType,
        dim: usize,
        centroids: Vec<f32>,
        offsets: Vec<usize>,
        row_ids: Vec<u64>,
        payload: Payload,
    ) -> std::result::Result<Self, String> {
        let nlist = offsets.len().saturating_sub(1);
        if dim == 0 || nlist == 0 || centroids.len() != nlist * dim {
            return Err(format!(
                "{} centroid floats for {nlist} partitions of dimension {dim}",
                centroids.len()
            ));
        }
        if offsets[0] != 0
            || offsets.windows(2).any(|w| w[0] > w[1])
            || offsets[nlist] != row_ids.len()
        {
            return Err("partition offsets are not increasing up to the row count".into());
        }
        payload.check(dim, &offsets, row_ids.len())?;
        let centroids_packed = kernels::pack(&centroids, dim);
        let payload = match payload {
            Payload::Rq { rq, codes } => Payload::Rq {
                rq: rq.attach(&centroids),
                codes,
            },
            other => other,
        };
        Ok(Self {
            distance,
            dim,
            centroids,
            centroids_packed,
            offsets,
            row_ids,
            payload,
        })
    }

    /// Partitions.
    pub fn num_partitions(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The index with the rows `keep` accepts, plus `add` (assigned to the
    /// existing centroids and encoded with the existing quantiser: no
    /// training). `parts` gives `add`'s partitions when already known.
    pub fn with_rows(
        &self,
        keep: &dyn Fn(u64) -> bool,
        add: &Vectors,
        parts: &[u32],
    ) -> Result<IvfIndex> {
        let isa = kernels::isa();
        let parts = if parts.len() == add.row_ids.len() {
            parts.to_vec()
        } else {
            let nlist = self.num_partitions();
            kmeans::assign(isa, &add.data, self.dim, &self.centroids_packed, nlist)?.0
        };
        let new_payload = self.encode(isa, &add.data, &parts)?;
        self.merged(Some(keep), add, &parts, &new_payload)
    }

    /// `add` assigned and encoded as this index would hold it, for a delta
    /// file (vectors, PQ codes, or SQ codes that no graph links yet).
    pub fn encode_delta(&self, add: &Vectors) -> Result<Delta> {
        let isa = kernels::isa();
        let nlist = self.num_partitions();
        let parts = kmeans::assign(isa, &add.data, self.dim, &self.centroids_packed, nlist)?.0;
        let payload = self.encode(isa, &add.data, &parts)?;
        Ok(Delta {
            row_ids: add.row_ids.clone(),
            parts,
            payload,
        })
    }

    /// The index with a delta's rows added as they are (nothing re-encoded);
    /// its partitions must be in range (the reader checks them). For
    /// IVF_HNSW_SQ the graphs stay as they are: a partition's rows past its
    /// graph's nodes (its tail) are searched by a scan of their codes until
    /// a rewrite links them.
    pub fn with_delta(&self, d: &Delta) -> Result<IvfIndex> {
        let nlist = self.num_partitions() as u32;
        if d.parts.len() != d.row_ids.len() || d.parts.iter().any(|p| *p >= nlist) {
            return Err(Error::internal("a delta that does not fit its index"));
        }
        let add = Vectors {
            row_ids: d.row_ids.clone(),
            data: Vec::new(),
        };
        self.merged(None, &add, &d.parts, &d.payload)
    }

    /// The rows `keep` accepts (`None`: every row, copied a partition at a
    /// time) plus `add`'s, in partitions `parts`, with their payload
    /// `new_payload`. HNSW graphs: relinked over every row when `keep` is
    /// given; else kept (each partition's rows keep their places, the new
    /// ones follow as its unlinked tail).
    fn merged(
        &self,
        keep: Option<&dyn Fn(u64) -> bool>,
        add: &Vectors,
        parts: &[u32],
        new_payload: &Payload,
    ) -> Result<IvfIndex> {
        let nlist = self.num_partitions();
        let width = self.row_width();
        let rows = self.row_ids.len() + parts.len();
        let mut offsets = Vec::with_capacity(nlist + 1);
        let mut row_ids = Vec::with_capacity(rows);
        let (mut bytes, mut floats): (Vec<u8>, Vec<f32>) = match &self.payload {
            Payload::Flat(_) => (Vec::new(), Vec::with_capacity(rows * width)),
            _ => (Vec::with_capacity(rows * width), Vec::new()),
        };
        let mut by_part: Vec<Vec<usize>> = vec![Vec::new(); nlist];
        for (r, &p) in parts.iter().enumerate() {
            by_part[p as usize].push(r);
        }
        offsets.push(0);
        for (p, new_rows) in by_part.iter().enumerate() {
            let (lo, hi) = (self.offsets[p], self.offsets[p + 1]);
            match keep {
                None => {
                    row_ids.extend_from_slice(&self.row_ids[lo..hi]);
                    self.copy_rows(lo, hi, &mut floats, &mut bytes);
                }
                Some(keep) => {
                    for r in lo..hi {
                        if keep(self.row_ids[r]) {
                            row_ids.push(self.row_ids[r]);
                            self.copy_rows(r, r + 1, &mut floats, &mut bytes);
                        }
                    }
                }
            }
            for &r in new_rows {
                row_ids.push(add.row_ids[r]);
                match new_payload {
                    Payload::Flat(v) => floats.extend_from_slice(&v[r * width..(r + 1) * width]),
                    Payload::Pq { codes, .. }
                    | Payload::Rq { codes, .. }
                    | Payload::Hnsw { codes, .. } => {
                        bytes.extend_from_slice(&codes[r * width..(r + 1) * width])
                    }
                }
            }
            offsets.push(row_ids.len());
        }
        let mut payload = self.payload.holding(floats, bytes);
        if let (Payload::Hnsw { graphs, params, .. }, Payload::Hnsw { graphs: old, .. }) =
            (&mut payload, &self.payload)
        {
            *graphs = match keep {
                None => old.clone(),
                Some(keep) => {
                    let exact = self.graph_vectors(&by_part, add, &row_ids, keep);
                    let isa = kernels::isa();
                    build_graphs(isa, self.distance, self.dim, &offsets, &exact, *params)?
                }
            };
        }
        Ok(IvfIndex {
            offsets,
            row_ids,
            payload,
            ..self.clone_model()
        })
    }

    /// The same index with each row id mapped by `map` (`None`: the row is
    /// gone), nothing re-encoded: when every row stays (and every graph
    /// links all its partition's rows: a file holds no unlinked tail), the
    /// payload (graphs included) is kept as it is; otherwise the rows that
    /// stay are copied and, for IVF_HNSW_SQ, the graphs relinked over them.
    pub fn remapped(&self, map: &dyn Fn(u64) -> Option<u64>) -> Result<IvfIndex> {
        let mut out = if self.row_ids.iter().all(|&id| map(id).is_some()) && !self.has_tails() {
            self.clone()
        } else {
            let keep = |id: u64| map(id).is_some();
            self.with_rows(&keep, &Vectors::default(), &[])?
        };
        for id in &mut out.row_ids {
            *id = map(*id).ok_or_else(|| Error::internal("a dropped row stayed in the index"))?;
        }
        Ok(out)
    }

    /// The entries `to` moves (`Some(new id)`), under their new ids, in
    /// their partitions, their payload copied (nothing re-encoded): a
    /// compaction's delta. Their old entries stay, dead (their fragments
    /// leave the table, and searches take only rows of the table's
    /// fragments), until the index is written whole again.
    pub fn relocated(&self, to: &dyn Fn(u64) -> Option<u64>) -> Delta {
        let (mut row_ids, mut parts) = (Vec::new(), Vec::new());
        let (mut floats, mut bytes) = (Vec::new(), Vec::new());
        for p in 0..self.num_partitions() {
            for r in self.offsets[p]..self.offsets[p + 1] {
                if let Some(n) = to(self.row_ids[r]) {
                    row_ids.push(n);
                    parts.push(p as u32);
                    self.copy_rows(r, r + 1, &mut floats, &mut bytes);
                }
            }
        }
        let payload = self.payload.holding(floats, bytes);
        Delta {
            row_ids,
            parts,
            payload,
        }
    }

    /// Whether some IVF_HNSW_SQ partition holds rows its graph does not
    /// link (a delta's), which a whole index file cannot hold.
    pub fn has_tails(&self) -> bool {
        match &self.payload {
            Payload::Hnsw { graphs, .. } => graphs
                .iter()
                .enumerate()
                .any(|(p, g)| g.links.len() < self.offsets[p + 1] - self.offsets[p]),
            _ => false,
        }
    }

    /// Whether rows are found by scanning partitions (IVF_FLAT, IVF_PQ), so
    /// dead entries cost a scan each; an IVF_HNSW_SQ graph full of dead
    /// nodes would have to be walked whole.
    pub fn scans_partitions(&self) -> bool {
        !matches!(self.payload, Payload::Hnsw { .. })
    }

    /// The trained parts alone (no rows).
    fn clone_model(&self) -> IvfIndex {
        IvfIndex {
            distance: self.distance,
            dim: self.dim,
            centroids: self.centroids.clone(),
            centroids_packed: self.centroids_packed.clone(),
            offsets: Vec::new(),
            row_ids: Vec::new(),
            payload: Payload::Flat(Vec::new()),
        }
    }

    /// Floats (flat) or bytes (PQ, SQ) per row.
    fn row_width(&self) -> usize {
        match &self.payload {
            Payload::Flat(_) | Payload::Hnsw { .. } => self.dim,
            Payload::Pq { pq, .. } => pq.m,
            Payload::Rq { rq, .. } => rq.code_width(),
        }
    }

    /// The vectors to link graphs with, in the order `with_rows` lays rows
    /// out: kept rows decoded from their codes, new rows as given.
    fn graph_vectors(
        &self,
        by_part: &[Vec<usize>],
        add: &Vectors,
        row_ids: &[u64],
        keep: &dyn Fn(u64) -> bool,
    ) -> Vec<f32> {
        let dim = self.dim;
        let mut out = Vec::with_capacity(row_ids.len() * dim);
        let mut buf = vec![0f32; dim];
        for (p, new_rows) in by_part.iter().enumerate() {
            if let Payload::Hnsw { sq, codes, .. } = &self.payload {
                for r in self.offsets[p]..self.offsets[p + 1] {
                    if keep(self.row_ids[r]) {
                        sq.decode(&codes[r * dim..(r + 1) * dim], &mut buf);
                        out.extend_from_slice(&buf);
                    }
                }
            }
            for &r in new_rows {
                out.extend_from_slice(&add.data[r * dim..(r + 1) * dim]);
            }
        }
        out
    }

    /// Appends rows `lo..hi`'s payload to `floats` (flat) or `bytes` (codes).
    fn copy_rows(&self, lo: usize, hi: usize, floats: &mut Vec<f32>, bytes: &mut Vec<u8>) {
        let w = self.row_width();
        match &self.payload {
            Payload::Flat(v) => floats.extend_from_slice(&v[lo * w..hi * w]),
            Payload::Pq { codes, .. } | Payload::Rq { codes, .. } | Payload::Hnsw { codes, .. } => {
                bytes.extend_from_slice(&codes[lo * w..hi * w])
            }
        }
    }

    /// The payload of `data` (rows in partitions `parts`).
    fn encode(&self, isa: Isa, data: &[f32], parts: &[u32]) -> Result<Payload> {
        match &self.payload {
            Payload::Flat(_) => Ok(Payload::Flat(data.to_vec())),
            Payload::Pq { pq, .. } => {
                let mut res = data.to_vec();
                for (row, &p) in res.chunks_exact_mut(self.dim).zip(parts) {
                    subtract(row, &self.centroids, self.dim, p as usize);
                }
                Ok(Payload::Pq {
                    pq: pq.clone(),
                    codes: pq.encode(isa, &res)?,
                })
            }
            Payload::Rq { rq, .. } => Ok(Payload::Rq {
                rq: rq.clone(),
                codes: rq.encode(data, parts)?,
            }),
            Payload::Hnsw { sq, params, .. } => {
                let mut codes = Vec::with_capacity(data.len());
                for row in data.chunks_exact(self.dim) {
                    sq.encode(row, &mut codes);
                }
                Ok(Payload::Hnsw {
                    sq: sq.clone(),
                    codes,
                    graphs: Vec::new(),
                    params: *params,
                })
            }
        }
    }

    /// Partitions nearest `q` first (by the index's distance to centroids).
    fn partition_order(&self, isa: Isa, q: &[f32]) -> Vec<usize> {
        let nlist = self.num_partitions();
        let mut score = vec![0f32; nlist];
        match self.distance {
            DistanceType::Dot => {
                kernels::dot(isa, q, &self.centroids, &mut score);
                score.iter_mut().for_each(|s| *s = -*s);
            }
            _ => kernels::l2_packed(isa, q, &self.centroids_packed, &mut score),
        }
        let mut order: Vec<usize> = (0..nlist).collect();
        order.sort_by(|a, b| score[*a].total_cmp(&score[*b]));
        order
    }

    /// Ranks partition `p`'s rows that the probe's `keep` accepts into its top.
    fn scan(&self, p: usize, probe: &mut Probe) {
        let rows = self.offsets[p]..self.offsets[p + 1];
        if rows.is_empty() {
            return;
        }
        match &self.payload {
            Payload::Hnsw { .. } => return self.scan_graph(p, probe),
            Payload::Rq { rq, codes } => return self.scan_rq(rq, codes, p, probe),
            _ => {}
        }
        let Probe {
            isa,
            q,
            keep,
            top,
            scratch,
            ..
        } = probe;
        scratch.resize(rows.len(), 0.0);
        self.distances(*isa, q, p, scratch);
        for (d, r) in scratch.iter().zip(rows) {
            let id = self.row_ids[r];
            if top.worst().is_some_and(|w| f64::from(*d) > w) || !keep(id) {
                continue;
            }
            top.push(Hit {
                dist: f64::from(*d),
                row_id: id,
                tier: 0,
                row: 0,
            });
        }
    }

    /// The index distances of partition `p`'s rows (IVF_FLAT, IVF_PQ) to
    /// `q`, into `out`.
    fn distances(&self, isa: Isa, q: &[f32], p: usize, out: &mut [f32]) {
        let rows = self.offsets[p]..self.offsets[p + 1];
        match &self.payload {
            Payload::Flat(v) => {
                let block = &v[rows.start * self.dim..rows.end * self.dim];
                match self.distance {
                    DistanceType::Dot => {
                        kernels::dot(isa, q, block, out);
                        out.iter_mut().for_each(|s| *s = -*s);
                    }
                    _ => kernels::l2_sq(isa, q, block, out),
                }
            }
            Payload::Pq { pq, codes } => {
                let c = &self.centroids[p * self.dim..(p + 1) * self.dim];
                let (table, base) = match self.distance {
                    DistanceType::Dot => {
                        let mut qc = [0f32];
                        kernels::dot(isa, q, c, &mut qc);
                        (pq.dot_table(isa, q), qc[0])
                    }
                    _ => {
                        let r: Vec<f32> = q.iter().zip(c).map(|(a, b)| a - b).collect();
                        (pq.l2_table(isa, &r), 0.0)
                    }
                };
                let m = pq.m;
                for (s, r) in out.iter_mut().zip(rows) {
                    let d = pq.lookup(&table, &codes[r * m..(r + 1) * m]);
                    *s = if self.distance == DistanceType::Dot {
                        -(base + d)
                    } else {
                        d
                    };
                }
            }
            Payload::Hnsw { .. } | Payload::Rq { .. } => {}
        }
    }

    /// Ranks partition `p`'s rows (IVF_RQ) by their estimated distances into
    /// the probe's top: one table of the query serves every partition (see
    /// [`super::rq`]). With more than one bit, a row whose top plane's lower
    /// bound is past the top's worst is skipped before its other planes are read.
    fn scan_rq(&self, rq: &Rq, codes: &[u8], p: usize, probe: &mut Probe) {
        let Probe {
            q,
            keep,
            top,
            rq: sc,
            ..
        } = probe;
        let rows = self.offsets[p]..self.offsets[p + 1];
        let sum = match sc.sum {
            Some(s) => s,
            None => *sc.sum.insert(rq.table(&sc.turned, &mut sc.table)),
        };
        let dot = self.distance == DistanceType::Dot;
        // Dot: -(<c, q> + <r, q>); else |x - q|^2 = base + |q - c|^2 - 2 f <u, q>.
        let (offset, norm) = if dot {
            let c = &self.centroids[p * self.dim..(p + 1) * self.dim];
            let qc: f32 = q.iter().zip(c).map(|(a, b)| a * b).sum();
            (qc, q.iter().map(|x| x * x).sum::<f32>().sqrt())
        } else {
            let qc: f32 = sc
                .turned
                .iter()
                .zip(rq.centroid(p))
                .map(|(a, b)| (a - b) * (a - b))
                .sum();
            (qc, qc.sqrt())
        };
        let dist = |base: f32, ip: f32| {
            if dot {
                -(offset + ip)
            } else {
                base + offset - 2.0 * ip
            }
        };
        let w = rq.code_width();
        for (r, code) in rows.zip(codes[p_range(&self.offsets, p, w)].chunks_exact(w)) {
            let worst = top.worst();
            if let (Some(worst), true) = (worst, rq.bits > 1) {
                let (base, ip, err) = rq.first_stage(&sc.table, sum, code);
                let slack = rq::BOUND * err * norm * if dot { 1.0 } else { 2.0 };
                if f64::from(dist(base, ip) - slack) > worst {
                    continue;
                }
            }
            let (base, ip) = rq.estimate(&sc.table, sum, code);
            let d = f64::from(dist(base, ip));
            let id = self.row_ids[r];
            if worst.is_some_and(|w| d > w) || !keep(id) {
                continue;
            }
            top.push(Hit {
                dist: d,
                row_id: id,
                tier: 0,
                row: 0,
            });
        }
    }

    /// Ranks partition `p`'s rows through its HNSW graph: the `ef`
    /// nearest (at least as many as `top` holds), widened while a filter
    /// leaves too few.
    fn scan_graph(&self, p: usize, probe: &mut Probe) {
        let Probe {
            isa,
            q,
            ef,
            keep,
            top,
            graph: sc,
            ..
        } = probe;
        let (isa, q) = (*isa, q.as_slice());
        let Payload::Hnsw {
            sq, codes, graphs, ..
        } = &self.payload
        else {
            return;
        };
        let rows = self.offsets[p]..self.offsets[p + 1];
        let dot = self.distance == DistanceType::Dot;
        let codes = &codes[rows.start * self.dim..rows.end * self.dim];
        let space = hnsw::Quantised::new(codes, sq, q, dot, isa);
        let (graph, len) = (&graphs[p], graphs[p].links.len().min(rows.len()));
        let id = |n: &hnsw::Near32| self.row_ids[rows.start + n.1 as usize];
        // The tail (rows a delta added, no graph links yet): every row scanned.
        for i in len..rows.len() {
            let n = hnsw::Near32(space.dist(q, i as u32, &mut []), i as u32);
            if top.worst().is_none_or(|w| f64::from(n.0) <= w) && keep(id(&n)) {
                top.push(Hit {
                    dist: f64::from(n.0),
                    row_id: id(&n),
                    tier: 0,
                    row: 0,
                });
            }
        }
        if len == 0 {
            return;
        }
        let mut ef = (*ef).max(top.cap()).min(len);
        loop {
            let found = hnsw::search(graph, &space, q, ef, sc);
            let kept = found.iter().filter(|n| keep(id(n))).count();
            if kept >= top.cap().min(len) || ef >= len {
                for n in found.iter().filter(|n| keep(id(n))) {
                    top.push(Hit {
                        dist: f64::from(n.0),
                        row_id: id(n),
                        tier: 0,
                        row: 0,
                    });
                }
                return;
            }
            ef = (ef * 4).min(len);
        }
    }
}

/// The byte range of partition `p`'s codes (`w` bytes per row).
fn p_range(offsets: &[usize], p: usize, w: usize) -> std::ops::Range<usize> {
    offsets[p] * w..offsets[p + 1] * w
}

/// One HNSW graph per partition (`offsets`), linked over `exact` (rows
/// of `dim` in partition order); partitions are built on all cores.
fn build_graphs(
    isa: Isa,
    distance: DistanceType,
    dim: usize,
    offsets: &[usize],
    exact: &[f32],
    params: HnswParams,
) -> Result<Vec<Graph>> {
    let nlist = offsets.len() - 1;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let parts = par_ranges(offsets[nlist].max(nlist), |_| {
        let mut done = Vec::new();
        loop {
            let p = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if p >= nlist {
                return done;
            }
            let space = hnsw::Exact {
                data: &exact[offsets[p] * dim..offsets[p + 1] * dim],
                dim,
                dot: distance == DistanceType::Dot,
                isa,
            };
            done.push((p, hnsw::build(&space, dim, params, 0x686e_7377 ^ p as u64)));
        }
    })?;
    let mut graphs = vec![Graph::default(); nlist];
    for (p, g) in parts.into_iter().flatten() {
        graphs[p] = g;
    }
    Ok(graphs)
}

/// One query's search through the partitions: the query (in index space),
/// the rows it may return, the best so far, and reusable buffers.
struct Probe<'a> {
    isa: Isa,
    q: Vec<f32>,
    /// HNSW search width.
    ef: usize,
    keep: &'a dyn Fn(u64) -> bool,
    top: TopK,
    /// Distances of one partition (IVF_FLAT, IVF_PQ).
    scratch: Vec<f32>,
    /// HNSW visited marks and decode buffer.
    graph: hnsw::Scratch,
    /// IVF_RQ: the query rotated, and buffers.
    rq: RqScratch,
}

/// One IVF_RQ query's rotation and lookup table.
#[derive(Default)]
struct RqScratch {
    /// The query rotated.
    turned: Vec<f32>,
    /// The query's lookup table, built at the first partition scanned.
    table: Vec<f32>,
    /// The sum of the rotated query (`Some` once `table` is built).
    sum: Option<f32>,
}

/// `(minimum, maximum)` partitions to probe.
fn probes(t: &IndexTuning, nlist: usize) -> (usize, usize) {
    let to = |x: u32| (x as usize).clamp(1, nlist);
    match t.nprobes {
        Some(n) => (to(n), to(n)),
        None => {
            let min = t.minimum_nprobes.map_or(DEFAULT_NPROBES.min(nlist), to);
            let max = match t.maximum_nprobes {
                None | Some(0) => nlist,
                Some(m) => to(m).max(min),
            };
            (min, max)
        }
    }
}

impl AnnIndex for IvfIndex {
    fn candidates(
        &self,
        q: &[f32],
        tuning: &IndexTuning,
        n: usize,
        keep: &dyn Fn(u64) -> bool,
    ) -> Vec<u64> {
        let mut q = q.to_vec();
        to_index_space(self.distance, &mut q, self.dim);
        let (min, max) = probes(tuning, self.num_partitions());
        let isa = kernels::isa();
        let mut rq = RqScratch::default();
        if let Payload::Rq { rq: quantiser, .. } = &self.payload {
            rq.turned.resize(self.dim, 0.0);
            quantiser.rotate(&q, &mut rq.turned);
        }
        let mut probe = Probe {
            isa,
            q,
            ef: tuning.ef.map_or(DEFAULT_EF, |e| e as usize),
            keep,
            top: TopK::new(n),
            scratch: Vec::new(),
            graph: hnsw::Scratch::new(self.dim),
            rq,
        };
        for (i, p) in self
            .partition_order(probe.isa, &probe.q)
            .into_iter()
            .enumerate()
        {
            if i >= max || (i >= min && probe.top.len() >= n) {
                break;
            }
            self.scan(p, &mut probe);
        }
        probe
            .top
            .into_sorted()
            .into_iter()
            .map(|h| h.row_id)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_parts_are_checked_before_use() {
        let pq = Pq::from_codebook(4, 2, 4, vec![0.0; 2 * 16 * 2]).expect("pq");
        let ok = |offsets: Vec<usize>, ids: Vec<u64>, codes: Vec<u8>| {
            IvfIndex::from_parts(
                DistanceType::L2,
                4,
                vec![0.0; 8],
                offsets,
                ids,
                Payload::Pq {
                    pq: pq.clone(),
                    codes,
                },
            )
        };
        assert!(ok(vec![0, 1, 2], vec![1, 2], vec![0, 1, 2, 3]).is_ok());
        // Offsets past the rows, decreasing, not starting at 0.
        assert!(ok(vec![0, 1, 3], vec![1, 2], vec![0; 4]).is_err());
        assert!(ok(vec![0, 2, 1], vec![1, 2], vec![0; 4]).is_err());
        assert!(ok(vec![1, 1, 2], vec![1, 2], vec![0; 4]).is_err());
        // A code past 2^bits, too few codes, centroids of the wrong size.
        assert!(ok(vec![0, 1, 2], vec![1, 2], vec![0, 16, 0, 0])
            .is_err_and(|e| e.contains("out of range")));
        assert!(ok(vec![0, 1, 2], vec![1, 2], vec![0; 3]).is_err());
        let flat = IvfIndex::from_parts(
            DistanceType::L2,
            4,
            vec![0.0; 7],
            vec![0, 0],
            vec![],
            Payload::Flat(vec![]),
        );
        assert!(flat.is_err());
    }

    /// A compaction's delta holds the moved entries alone, under their new
    /// ids, in their partitions, with their codes; merged, the old entries
    /// stay (dead) until a whole rewrite's map drops them.
    #[test]
    fn relocated_entries_keep_partition_and_payload() {
        let ix = IvfIndex::from_parts(
            DistanceType::L2,
            2,
            vec![0.0, 0.0, 5.0, 5.0],
            vec![0, 2, 3],
            vec![10, 11, 20],
            Payload::Flat(vec![0.1, 0.2, 0.3, 0.4, 5.1, 5.2]),
        )
        .expect("index");
        // Fragment 0's rows 10 and 20 move to 100 and 200; 11 stays.
        let to = |id: u64| match id {
            10 => Some(100),
            20 => Some(200),
            _ => None,
        };
        let d = ix.relocated(&to);
        assert_eq!(
            (d.row_ids.clone(), d.parts.clone()),
            (vec![100, 200], vec![0, 1])
        );
        let Payload::Flat(v) = &d.payload else {
            panic!("flat")
        };
        assert_eq!(v, &vec![0.1, 0.2, 5.1, 5.2]);
        let merged = ix.with_delta(&d).expect("merge");
        assert_eq!(merged.row_ids, vec![10, 11, 100, 20, 200]);
        // A whole rewrite drops the dead entries (10, 20: gone from the table).
        let live = |id: u64| (id == 11 || id >= 100).then_some(id);
        assert_eq!(
            merged.remapped(&live).expect("remap").row_ids,
            vec![11, 100, 200]
        );
    }

    #[test]
    fn probes_follow_the_tuning() {
        let t = |n: Option<u32>, min: Option<u32>, max: Option<u32>| {
            probes(
                &IndexTuning {
                    nprobes: n,
                    minimum_nprobes: min,
                    maximum_nprobes: max,
                    ..Default::default()
                },
                50,
            )
        };
        assert_eq!(t(None, None, None), (20, 50));
        assert_eq!(t(Some(7), None, None), (7, 7));
        assert_eq!(t(Some(700), None, None), (50, 50));
        assert_eq!(t(None, Some(3), Some(5)), (3, 5));
        assert_eq!(t(None, Some(9), Some(5)), (9, 9));
        assert_eq!(t(None, Some(0), Some(0)), (1, 50));
    }
}
