//! An in-memory table of upserted rows: the latest row per key, in arrival
//! batches. Each key remembers how many rows held it before it first
//! reached this memtable (in an older memtable or the base; 0 when new),
//! which makes exact counts O(1): rows = base rows + new keys of unflushed
//! memtables, and an upsert of a key the base holds twice updates two rows,
//! as a native merge does.

use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::compute::interleave_record_batch;
use arrow_schema::SchemaRef;
use hashbrown::HashMap;
use memwal_core::keys::Key;

#[derive(Debug, Clone, Copy)]
struct Entry {
    batch: u32,
    row: u32,
    /// Rows holding the key before this memtable (0: a new key).
    before: u32,
}

/// Upserted rows not yet merged into the base table.
#[derive(Debug)]
pub struct Memtable {
    /// Key columns.
    pub on: Vec<String>,
    /// Schema of the rows (the base table's).
    pub schema: SchemaRef,
    batches: Vec<RecordBatch>,
    map: HashMap<Key, Entry>,
    /// Rows whose key is null: never match, always inserted.
    unkeyed: Vec<(u32, u32)>,
    /// Keys (and unkeyed rows) that did not exist before this memtable.
    pub new_rows: u64,
    /// Payload bytes appended.
    pub bytes: usize,
    /// Smallest and largest WAL sequence number applied.
    pub min_seq: u64,
    /// See `min_seq`.
    pub max_seq: u64,
    /// When the first row arrived.
    pub created: Instant,
}

impl Memtable {
    /// Batches buffered.
    pub fn batch_count(&self) -> usize {
        self.batches.len()
    }

    /// An empty memtable.
    pub fn new(on: Vec<String>, schema: SchemaRef) -> Self {
        Self {
            on,
            schema,
            batches: Vec::new(),
            map: HashMap::new(),
            unkeyed: Vec::new(),
            new_rows: 0,
            bytes: 0,
            min_seq: 0,
            max_seq: 0,
            created: Instant::now(),
        }
    }

    /// Distinct rows held.
    pub fn len(&self) -> usize {
        self.map.len() + self.unkeyed.len()
    }

    /// Whether nothing was applied.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Whether `key` has a row here.
    pub fn contains(&self, key: &Key) -> bool {
        self.map.contains_key(key)
    }

    /// Rows that hold `key` once this memtable is merged (`None`: not here).
    pub fn rows_of(&self, key: &Key) -> Option<u32> {
        self.map.get(key).map(|e| e.before.max(1))
    }

    /// The latest row of `key` here: its batch and row (`None`: not here).
    pub fn row_of(&self, key: &Key) -> Option<(&RecordBatch, usize)> {
        let e = self.map.get(key)?;
        Some((self.batches.get(e.batch as usize)?, e.row as usize))
    }

    /// Applies one upsert. `before[i]` is how many rows held row i's key
    /// before this memtable; returns (inserted, updated).
    pub fn apply(
        &mut self,
        seq: u64,
        batch: RecordBatch,
        keys: &[Option<Key>],
        before: &[u32],
        bytes: usize,
    ) -> (u64, u64) {
        if self.batches.is_empty() {
            self.min_seq = seq;
            self.created = Instant::now();
        }
        self.max_seq = seq;
        self.bytes += bytes;
        let b = self.batches.len() as u32;
        self.batches.push(batch);
        let (mut ins, mut upd) = (0, 0);
        for (i, k) in keys.iter().enumerate() {
            let row = i as u32;
            match k {
                None => {
                    self.unkeyed.push((b, row));
                    self.new_rows += 1;
                    ins += 1;
                }
                Some(k) => match self.map.get_mut(k) {
                    Some(e) => {
                        e.batch = b;
                        e.row = row;
                        upd += u64::from(e.before.max(1));
                    }
                    None => {
                        let before = before[i];
                        self.map.insert(
                            k.clone(),
                            Entry {
                                batch: b,
                                row,
                                before,
                            },
                        );
                        if before == 0 {
                            self.new_rows += 1;
                            ins += 1;
                        } else {
                            upd += u64::from(before);
                        }
                    }
                },
            }
        }
        (ins, upd)
    }

    /// The latest row of every key, plus unkeyed rows, as one batch.
    pub fn rows(&self) -> Result<RecordBatch, arrow_schema::ArrowError> {
        let idx: Vec<(usize, usize)> = self
            .map
            .values()
            .map(|e| (e.batch as usize, e.row as usize))
            .chain(self.unkeyed.iter().map(|(b, r)| (*b as usize, *r as usize)))
            .collect();
        self.take(&idx)
    }

    fn take(&self, idx: &[(usize, usize)]) -> Result<RecordBatch, arrow_schema::ArrowError> {
        if idx.is_empty() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        let refs: Vec<&RecordBatch> = self.batches.iter().collect();
        interleave_record_batch(&refs, idx)
    }

    /// Rows whose key is not in `seen` (which then maps it to the row's
    /// position in the returned batch, counted from `offset`): the overlay
    /// of newer memtables over older ones. Unkeyed rows come last.
    pub fn rows_not_in(
        &self,
        seen: &mut hashbrown::HashMap<Key, usize>,
        offset: usize,
    ) -> Result<RecordBatch, arrow_schema::ArrowError> {
        let mut idx = Vec::new();
        for (k, e) in &self.map {
            if let hashbrown::hash_map::Entry::Vacant(v) = seen.entry(k.clone()) {
                v.insert(offset + idx.len());
                idx.push((e.batch as usize, e.row as usize));
            }
        }
        idx.extend(self.unkeyed.iter().map(|(b, r)| (*b as usize, *r as usize)));
        self.take(&idx)
    }
}
