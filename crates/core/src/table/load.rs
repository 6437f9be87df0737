//! Loading a version into memory: its fragments' rows, deletion vectors and
//! indexes, cached in the table state by file. The cache is looked up under
//! the state lock; what it lacks is read and decoded with the lock released
//! ([`NativeTable::load`]), so file I/O and index decoding (a large vector
//! index takes a good part of a second) never hold up the callers that need
//! only the cache: a MemWAL writer reads the table's version under that lock
//! for every group of upserts it logs, and a reader's cached snapshot is one
//! lock away.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::RecordBatch;
use roaring::RoaringBitmap;

use super::indices::{self, cache_key};
use super::{lock, NativeTable, Snapshot, State};
use crate::error::{Error, Result};
use crate::fragment::{read_data_file, read_deletions, LoadedFragment};
use crate::manifest::{FragmentMeta, IndexMeta, Manifest};

/// What the cache lacked for a version, read without the lock.
#[derive(Default)]
struct Fetched {
    batches: Vec<(String, RecordBatch)>,
    deletions: Vec<(String, Arc<RoaringBitmap>)>,
    ann: Vec<(String, indices::IndexData)>,
}

impl Fetched {
    fn into_cache(self, st: &mut State) {
        st.batches.extend(self.batches);
        st.deletions.extend(self.deletions);
        st.ann.extend(self.ann);
    }
}

/// The cache key of a fragment's deletion vector.
fn deletion_key(path: &str, f: &FragmentMeta) -> String {
    format!("{path}@{}", f.deletion_offset)
}

impl NativeTable {
    /// Loads every fragment and index of `m`: the cached ones under the
    /// state lock, the others read with it released, then cached (see the
    /// module doc). Two callers missing the same file may both read it.
    pub(crate) fn load(&self, m: &Arc<Manifest>) -> Result<Snapshot> {
        let missing = {
            let st = lock(&self.inner.state);
            missing_of(&st, m)
        };
        if !missing.is_empty() {
            let fetched = self.fetch(m, &missing)?;
            fetched.into_cache(&mut lock(&self.inner.state));
        }
        let mut st = lock(&self.inner.state);
        self.load_locked(&mut st, m)
    }

    /// Reads the pieces of `m` that `missing` names.
    fn fetch(&self, m: &Manifest, missing: &Missing) -> Result<Fetched> {
        let schema = Arc::new(m.schema.clone());
        let mut out = Fetched::default();
        for &i in &missing.fragments {
            let f = &m.fragments[i];
            out.batches
                .push((f.file.clone(), self.read_fragment(&schema, f)?));
        }
        for &i in &missing.deletions {
            let f = &m.fragments[i];
            if let Some(path) = &f.deletion_file {
                out.deletions
                    .push((deletion_key(path, f), self.read_deletion(path, f)?));
            }
        }
        for &i in &missing.indices {
            let meta = &m.indices[i];
            out.ann.push((cache_key(meta), self.read_index(m, meta)?));
        }
        Ok(out)
    }

    /// Loads every fragment of `m` under the state lock (from the cache
    /// where possible; [`Self::load`] fills the cache first).
    fn load_locked(&self, st: &mut State, m: &Arc<Manifest>) -> Result<Snapshot> {
        let schema = Arc::new(m.schema.clone());
        let mut fragments = Vec::with_capacity(m.fragments.len());
        for f in &m.fragments {
            let batch = match st.batches.get(&f.file) {
                Some(b) => b.clone(),
                None => {
                    let b = self.read_fragment(&schema, f)?;
                    st.batches.insert(f.file.clone(), b.clone());
                    b
                }
            };
            let deleted = match &f.deletion_file {
                None => Arc::new(RoaringBitmap::new()),
                Some(path) => {
                    let key = deletion_key(path, f);
                    match st.deletions.get(&key) {
                        Some(d) => d.clone(),
                        None => {
                            let d = self.read_deletion(path, f)?;
                            st.deletions.insert(key, d.clone());
                            d
                        }
                    }
                }
            };
            fragments.push(LoadedFragment {
                id: f.id,
                batch,
                deleted,
            });
        }
        let indices = self.load_indices_locked(st, m)?;
        Ok(Snapshot {
            manifest: m.clone(),
            fragments,
            indices,
            text_cache: self.inner.text_cache.clone(),
        })
    }

    /// Reads and checks one fragment's data file.
    fn read_fragment(
        &self,
        schema: &arrow_schema::SchemaRef,
        f: &FragmentMeta,
    ) -> Result<RecordBatch> {
        let path = format!("{}/{}", self.dir(), f.file);
        let b = read_data_file(self.storage(), &path, schema, f.crc32c)?;
        crate::fragment::check_rows(&path, &b, f.physical_rows)?;
        Ok(b)
    }

    /// Reads one fragment's deletion vector from `path` (in the table folder).
    fn read_deletion(&self, path: &str, f: &FragmentMeta) -> Result<Arc<RoaringBitmap>> {
        let full = format!("{}/{path}", self.dir());
        Ok(Arc::new(read_deletions(
            self.storage(),
            &full,
            f.deletion_offset,
            f.deletion_len,
            f.deletion_crc32c,
        )?))
    }

    /// Loads the indexes of `m` (from cache where possible).
    fn load_indices_locked(
        &self,
        st: &mut State,
        m: &Manifest,
    ) -> Result<Vec<indices::LoadedIndex>> {
        let mut out = Vec::with_capacity(m.indices.len());
        for meta in &m.indices {
            let key = cache_key(meta);
            let data = match st.ann.get(&key) {
                Some(i) => i.clone(),
                None => {
                    let i = self.read_index(m, meta)?;
                    st.ann.insert(key, i.clone());
                    i
                }
            };
            out.push(indices::LoadedIndex {
                meta: Arc::new(meta.clone()),
                data,
                fragments: Arc::new(meta.fragment_ids.iter().copied().collect()),
            });
        }
        if st.ann.len() > m.indices.len() + 8 {
            // Keep this version's indexes and forget older builds.
            let keep: HashSet<String> = m.indices.iter().map(cache_key).collect();
            st.ann.retain(|k, _| keep.contains(k));
        }
        Ok(out)
    }

    /// Reads the files of the index `meta` of `m`.
    fn read_index(&self, m: &Manifest, meta: &IndexMeta) -> Result<indices::IndexData> {
        use crate::index::store;
        if meta.index_type == crate::index::IndexType::Fts.as_str() {
            let t = crate::index::fts::read(self.storage(), self.dir(), meta)?;
            return Ok(indices::IndexData::Text(Arc::new(t)));
        }
        if !crate::index::IndexType::is_sorted_scalar(&meta.index_type) {
            let v = store::read(self.storage(), self.dir(), meta)?;
            return Ok(indices::IndexData::Vector(Arc::new(v)));
        }
        let field = meta
            .columns
            .first()
            .and_then(|c| m.schema.field_with_name(c).ok())
            .ok_or_else(|| Error::Corrupt {
                path: self.dir().to_string(),
                message: format!("index {:?} names no column of the table", meta.name),
            })?;
        let b = store::read_btree(self.storage(), self.dir(), meta, field.data_type())?;
        Ok(indices::IndexData::Scalar(Arc::new(b)))
    }
}

/// The pieces of a version the cache lacks, by position in its manifest.
#[derive(Default)]
struct Missing {
    fragments: Vec<usize>,
    deletions: Vec<usize>,
    indices: Vec<usize>,
}

impl Missing {
    fn is_empty(&self) -> bool {
        self.fragments.is_empty() && self.deletions.is_empty() && self.indices.is_empty()
    }
}

/// What of `m` the cache in `st` does not hold.
fn missing_of(st: &State, m: &Manifest) -> Missing {
    let mut out = Missing::default();
    let mut seen: HashSet<&str> = HashSet::new();
    for (i, f) in m.fragments.iter().enumerate() {
        if !st.batches.contains_key(&f.file) && seen.insert(&f.file) {
            out.fragments.push(i);
        }
        if let Some(path) = &f.deletion_file {
            if !st.deletions.contains_key(&deletion_key(path, f)) {
                out.deletions.push(i);
            }
        }
    }
    for (i, meta) in m.indices.iter().enumerate() {
        if !st.ann.contains_key(&cache_key(meta)) {
            out.indices.push(i);
        }
    }
    out
}
