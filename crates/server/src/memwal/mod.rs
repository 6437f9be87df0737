//! The MemWAL write path of one table, and the one order of its writes.
//!
//! ```text
//!  upsert ──validate──► writer thread ──group──► WAL segment (one fdatasync)
//!  direct write ──────►   │ apply in seq order; a direct write (add, delete,
//!  (add, delete, ...)     │ update, merge, overwrite, drop) runs in its turn
//!                         ▼
//!             active memtable ──freeze──► frozen queue ──flusher──► base table
//!                                                        (one merge per memtable,
//!                                                         flushed seq in the same commit)
//! ```
//! Every write of a table passes through its writer thread's queue, so the
//! writes take one order: a direct write first drains the memtables ahead
//! of it into the base (in the writer's turn), an overwrite or a drop
//! supersedes them, and an upsert queued after either applies after it.
//!
//! Modules: [`wal`] (segment format, recovery, fault-injectable files),
//! [`memtable`], `writer` (the writer thread), `flusher` (merging memtables
//! into the base, poisoning after repeated failures), `replay` (opening a
//! table from its WAL), `overlay` (reads).
//!
//! Reads overlay the memtables (newest first) on the base; a memtable whose
//! last sequence number is at most the base's committed `memwal.flushed_seq`
//! is already in the base and is skipped, so no reader ever counts a row twice.

mod fill;
mod flusher;
pub mod log;
pub mod memtable;
pub mod objwal;
mod overlay;
mod replay;
pub mod wal;
mod writer;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, RwLock};
use std::time::Duration;

use arrow::array::RecordBatch;
use memwal_core::keys::{Key, KeyEncoder};
use memwal_core::manifest::Manifest;
use memwal_core::{ipc, Data, MergeResult, NativeTable};
use tokio::sync::oneshot;

use crate::error::{Error, Result, RETRY_AFTER_SECS};
pub use crate::metrics::Health;
use crate::metrics::Phase;
use memtable::Memtable;
pub use wal::{OsWalIo, PersistMode, RecoveryMode, WalIo};
use writer::{Job, Pending};

/// A WAL segment is closed (and a new one started) past this size.
pub const SEGMENT_BYTES: u64 = 64 << 20;

/// Manifest metadata key holding the last WAL sequence merged into the base.
pub const FLUSHED_SEQ_KEY: &str = "memwal.flushed_seq";

/// Tuning of the MemWAL path.
#[derive(Debug, Clone)]
pub struct MemWalConfig {
    /// Freeze the active memtable at this many rows.
    pub flush_rows: usize,
    /// ... or at this many payload bytes.
    pub flush_bytes: usize,
    /// ... or when its oldest row is this old.
    pub flush_interval: Duration,
    /// Frozen memtables queued for the flusher before the active one is
    /// left to grow; past twice the row or byte threshold on top of that,
    /// upserts answer 503 (overloaded) with `retry-after`.
    pub max_frozen: usize,
    /// Most requests committed by one fdatasync.
    pub max_group: usize,
    /// Durability of appends.
    pub persist: PersistMode,
    /// What recovery does with a damaged WAL.
    pub recovery: RecoveryMode,
    /// Consecutive failed flushes after which the table is poisoned.
    pub poison_after_failed_flushes: u32,
    /// How segment files are opened (tests inject faults here).
    pub io: Arc<dyn WalIo>,
    /// Where WAL group commits and flushes are counted (one per server).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Versions of a table older than this are removed in the background
    /// (with the files only they name), as LanceDB Cloud does; default 7 days.
    pub retention: Duration,
    /// Least time between two background cleanups of one table.
    pub cleanup_every: Duration,
    /// Background compaction (at the cleanup's pace): how small a fragment
    /// must be, how many must qualify, when deleted rows force a rewrite.
    pub compaction: memwal_core::table::compact::CompactOptions,
    /// How much lower than the write path each table's flusher thread
    /// (flushes, compaction, index folds, cleanup) runs: a Linux nice
    /// increment, 0-19 (see [`crate::priority`]).
    pub background_nice: i32,
}

/// The deleted share past which background compaction rewrites a fragment. Each rewrite's
/// old file stays for the retention period, so an update stream spread over the table makes
/// about `1 / threshold` times its own bytes of rewrites: 0.5 rewrites 1.7x less than 0.3
/// for a quarter more deleted rows on disk (run 32 of bench/RESULTS.md).
pub const BACKGROUND_DELETIONS_THRESHOLD: f64 = 0.5;

/// Fragments of at least this many rows are not merged further in the background (Lance's
/// `target_rows_per_fragment`; a run's byte budget caps a merge's size before it in practice).
pub const BACKGROUND_TARGET_ROWS: u64 = 1024 * 1024;

/// The most bytes of live rows one background compaction run rewrites.
pub const BACKGROUND_RUN_BYTES: u64 = 64 << 20;

impl Default for MemWalConfig {
    fn default() -> Self {
        Self {
            flush_rows: 50_000,
            flush_bytes: 64 << 20,
            flush_interval: Duration::from_secs(2),
            max_frozen: 4,
            max_group: 512,
            persist: PersistMode::SyncData,
            recovery: RecoveryMode::Strict,
            poison_after_failed_flushes: 5,
            io: Arc::new(OsWalIo),
            metrics: Arc::default(),
            retention: Duration::from_millis(memwal_core::protocol::DEFAULT_CLEANUP_OLDER_THAN_MS),
            cleanup_every: Duration::from_secs(60),
            compaction: memwal_core::table::compact::CompactOptions {
                min_fragments: 8,
                target_rows_per_fragment: BACKGROUND_TARGET_ROWS,
                materialize_deletions_threshold: BACKGROUND_DELETIONS_THRESHOLD,
                max_bytes_per_run: BACKGROUND_RUN_BYTES,
            },
            background_nice: crate::DEFAULT_READ_NICE,
        }
    }
}

pub(crate) struct Overlay {
    pub active: Memtable,
    pub frozen: VecDeque<Arc<Memtable>>,
}

/// How a direct write takes its turn in the writer (see [`MemWalTable::direct`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Merge every memtable into the base first (add, delete, update,
    /// direct merge, optimize, flush).
    Drain,
    /// The write replaces every row (overwrite): the memtables are
    /// superseded, and the write records the WAL position in its commit
    /// (the metadata handed to it).
    Replace,
    /// The table is dropped: the memtables are discarded and the writer stops.
    Drop,
    /// The write changes the schema (schema evolution): the memtables are
    /// merged into the base first, and the (empty) memtable then takes the
    /// new schema, so later upserts are checked against it.
    Reshape,
    /// The table leaves this name (rename): the memtables are merged into
    /// the base first, and once the write succeeds the writer stops (later
    /// requests on the old name find no table).
    Retire,
}

/// What a direct write is handed in its turn.
pub struct TurnCtx<'a> {
    /// The base table.
    pub base: &'a NativeTable,
    /// Metadata a [`Turn::Replace`] write must commit (the WAL position).
    pub metadata: BTreeMap<String, String>,
}

pub(crate) type RunFn = Box<dyn for<'a> FnOnce(Result<TurnCtx<'a>>) -> bool + Send>;

pub(crate) struct Shared {
    name: String,
    base: NativeTable,
    wal: log::Wal,
    /// This writer's epoch on a shared WAL (0 on a local disk).
    epoch: u64,
    cfg: MemWalConfig,
    overlay: RwLock<Overlay>,
    /// Signalled when a frozen memtable is flushed or one is queued.
    changed: Condvar,
    changed_lock: Mutex<()>,
    /// Why writes are refused, once something could not be made durable.
    poisoned: Mutex<Option<String>>,
    /// Why nothing is served (set at open, never cleared).
    failed: Option<String>,
    last_seq: AtomicU64,
    flushed_seq: AtomicU64,
    flushes: AtomicU64,
    flush_failures: AtomicU32,
    /// Held while a memtable is merged into the base (by the flusher, or
    /// by the writer draining), and by the writer while an overwrite or a
    /// drop runs, so that no flush lands after either.
    flush_lock: Mutex<()>,
    stop: AtomicBool,
    dropped: AtomicBool,
    /// Another server took the table's shared WAL over: reads are refused
    /// too (this server's memtables may miss its writes).
    fenced: AtomicBool,
    /// The last read's view, for the reads after it while nothing changed.
    views: Mutex<Option<Arc<overlay::CachedView>>>,
}

/// A table with a MemWAL in front of its base.
pub struct MemWalTable {
    shared: Arc<Shared>,
    tx: mpsc::SyncSender<Job>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for MemWalTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemWalTable")
            .field("name", &self.shared.name)
            .finish()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The base metadata key of the epoch of the server that last claimed the
/// table (a shared WAL only; see `replay::recover_and_claim`).
pub const EPOCH_KEY: &str = "memwal.epoch";

/// The number a manifest records under `key` (0: none).
fn recorded(m: &Manifest, key: &str) -> u64 {
    m.metadata
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The epoch the base records (0: never claimed).
pub(crate) fn epoch_in(m: &Manifest) -> u64 {
    recorded(m, EPOCH_KEY)
}

/// The flushed sequence number a manifest records (0: none yet).
pub(crate) fn flushed_seq_in(m: &Manifest) -> u64 {
    recorded(m, FLUSHED_SEQ_KEY)
}

impl Shared {
    /// Moves the active memtable to the frozen queue (nothing when it is empty).
    fn freeze(&self) {
        {
            let mut o = self.write();
            if o.active.is_empty() {
                return;
            }
            let fresh = Memtable::new(o.active.on.clone(), o.active.schema.clone());
            let full = std::mem::replace(&mut o.active, fresh);
            o.frozen.push_back(Arc::new(full));
        }
        self.notify();
    }
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Overlay> {
        self.overlay.read().unwrap_or_else(|p| p.into_inner())
    }
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Overlay> {
        self.overlay.write().unwrap_or_else(|p| p.into_inner())
    }
    fn poison(&self, message: String) {
        tracing::error!(table = %self.name, %message, "MemWAL poisoned: refusing writes");
        let mut p = lock(&self.poisoned);
        if p.is_none() {
            *p = Some(message);
        }
        drop(p);
        self.notify();
    }
    /// Stops serving the table: another writer has claimed its WAL.
    fn fence(&self, why: String) {
        self.fenced.store(true, Ordering::SeqCst);
        self.poison(why);
    }
    /// Reads are refused by a failed open (memory would miss records) and
    /// once another server took the table over.
    fn check_readable(&self) -> Result<()> {
        if self.dropped.load(Ordering::SeqCst) {
            return Err(self.not_found());
        }
        if self.fenced.load(Ordering::SeqCst) {
            return Err(Error::Unavailable {
                table: self.name.clone(),
                reason: lock(&self.poisoned).clone().unwrap_or_default(),
            });
        }
        match &self.failed {
            Some(m) => Err(Error::Unavailable {
                table: self.name.clone(),
                reason: m.clone(),
            }),
            None => Ok(()),
        }
    }
    /// Writes are refused by a failed open and by poisoning.
    fn check_writable(&self) -> Result<()> {
        self.check_readable()?;
        match lock(&self.poisoned).as_ref() {
            Some(m) => Err(Error::Poisoned {
                table: self.name.clone(),
                message: m.clone(),
            }),
            None => Ok(()),
        }
    }
    fn not_found(&self) -> Error {
        memwal_core::Error::TableNotFound {
            name: self.name.clone(),
        }
        .into()
    }
    fn notify(&self) {
        let _g = lock(&self.changed_lock);
        self.changed.notify_all();
    }
    fn wait(&self, timeout: Duration) {
        let g = lock(&self.changed_lock);
        let _ = self.changed.wait_timeout(g, timeout);
    }
    /// Whether upserts should be refused for now (the flusher is behind).
    fn overloaded(&self) -> bool {
        let o = self.read();
        o.frozen.len() >= self.cfg.max_frozen
            && (o.active.len() >= 2 * self.cfg.flush_rows
                || o.active.bytes >= 2 * self.cfg.flush_bytes)
    }
}

impl MemWalTable {
    /// Opens the MemWAL of `base` in `wal`, replaying every record
    /// past the base's flushed sequence number. A damaged WAL (see
    /// [`wal::recover`]) opens the table as failed: every request answers
    /// 503 naming the damage, and the files are left as they are.
    pub fn open(
        name: &str,
        base: NativeTable,
        wal: log::Wal,
        cfg: MemWalConfig,
    ) -> Result<Arc<Self>> {
        // Upkeep cleans up (`flusher::cleanup`), under the table's own
        // retention when its config sets one, off the writer's path: its
        // commits run no cleanup of their own.
        base.set_auto_cleanup(false);
        replay::open(name, base, wal, cfg)
    }

    /// The base table.
    pub fn base(&self) -> &NativeTable {
        &self.shared.base
    }

    /// Why the table is not served, if it failed to open.
    pub fn failed(&self) -> Option<&str> {
        self.shared.failed.as_deref()
    }

    fn send(&self, job: Job) -> Result<()> {
        match self.tx.try_send(job) {
            Ok(()) => Ok(()),
            Err(mpsc::TrySendError::Full(_)) => Err(Error::Busy(RETRY_AFTER_SECS)),
            Err(mpsc::TrySendError::Disconnected(_)) => Err(self.gone()),
        }
    }

    /// The error for a request the writer did not answer.
    fn gone(&self) -> Error {
        if self.shared.dropped.load(Ordering::SeqCst) {
            return self.shared.not_found();
        }
        if let Err(e) = self.shared.check_writable() {
            return e;
        }
        Error::Unavailable {
            table: self.shared.name.clone(),
            reason: "the server is shutting down".into(),
        }
    }

    /// Validates and appends an upsert; resolves once it is durable and
    /// applied, with exact inserted/updated counts. `raw` is the Arrow IPC
    /// `data` was decoded from, if the caller has it: it is logged as it
    /// is (otherwise `data` is encoded).
    pub async fn upsert(
        &self,
        on: Vec<String>,
        data: Data,
        raw: Option<bytes::Bytes>,
    ) -> Result<MergeResult> {
        let started = std::time::Instant::now();
        self.shared.check_writable()?;
        if self.shared.overloaded() {
            return Err(Error::Busy(RETRY_AFTER_SECS));
        }
        let manifest = self.shared.base.manifest()?;
        let schema = Arc::new(manifest.schema.clone());
        let num_rows = data.num_rows() as u64;
        if num_rows == 0 {
            // Nothing to make durable; the columns are still checked.
            memwal_core::schema::align_all(&data.batches, &schema)?;
            KeyEncoder::new(&schema, &on)?;
            return Ok(MergeResult {
                version: manifest.version,
                num_attempts: 1,
                ..Default::default()
            });
        }
        let supplied = supplied_columns(&data);
        let batch = memwal_core::schema::align_new_rows(&data.batches, &schema)?;
        // Key checks before anything is logged: unknown key columns and
        // duplicate keys are the caller's error and must never reach the WAL.
        let enc = KeyEncoder::new(&schema, &on)?;
        let keys = enc.encode(&batch)?;
        check_unique(&enc, &batch, &keys)?;
        // The log keeps the columns as sent: replay fills the omitted ones
        // as the writer does (see `fill`).
        let payload = match raw {
            Some(b) => b,
            None => ipc::encode_stream(&data.schema, &data.batches)?.into(),
        };
        let (reply, rx) = oneshot::channel();
        let queued = std::time::Instant::now();
        let metrics = &self.shared.cfg.metrics;
        metrics.upsert_phase(Phase::Prep, queued - started);
        self.send(Job::Upsert(Pending {
            prefix: wal::payload_prefix(&on),
            on,
            batch,
            keys,
            supplied,
            payload,
            reply,
            queued,
        }))?;
        let a = rx.await.map_err(|_| self.gone())??;
        metrics.upsert_phase(Phase::Reply, a.at.elapsed());
        Ok(MergeResult {
            // MemWAL writes make no version of their own.
            version: a.version,
            num_inserted_rows: a.inserted,
            num_updated_rows: a.updated,
            num_deleted_rows: 0,
            num_attempts: 1,
            num_rows,
        })
    }

    /// Runs `f` on the base table in the writer's turn (see [`Turn`]):
    /// every write acknowledged before this call is ordered before it, every
    /// upsert sent after it is applied after it.
    pub async fn direct<T: Send + 'static>(
        &self,
        turn: Turn,
        f: impl FnOnce(&TurnCtx<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        if turn == Turn::Drop {
            self.shared.check_readable()?;
        } else {
            self.shared.check_writable()?;
        }
        let (tx, rx) = oneshot::channel();
        let run: RunFn = Box::new(move |ctx: Result<TurnCtx<'_>>| {
            let r = ctx.and_then(|c| f(&c));
            let ok = r.is_ok();
            let _ = tx.send(r);
            ok
        });
        self.send(Job::Direct(turn, run))?;
        let r = rx.await.map_err(|_| self.gone())?;
        if let Err(Error::Core(memwal_core::Error::Fenced { message, .. })) = &r {
            self.shared.fence(message.clone());
        }
        r
    }

    /// Merges every memtable into the base (in the writer's turn).
    pub async fn flush_all(&self) -> Result<()> {
        self.direct(Turn::Drain, |_| Ok(())).await
    }

    /// The MemWAL as the official clients' `getLsmStats` reads it: one
    /// bucket; the memtables not merged yet (sealed oldest first, then the
    /// active one), numbered as generations after the flushes so far.
    pub fn lsm_stats(&self) -> Result<memwal_core::LsmStats> {
        use memwal_core::stats::{BucketStats, MemtableStats};
        let version = self.shared.base.version_sync()?;
        let flushes = self.shared.flushes.load(Ordering::Relaxed);
        let o = self.shared.read();
        let all: Vec<&Memtable> = o
            .frozen
            .iter()
            .map(Arc::as_ref)
            .chain(std::iter::once(&o.active))
            .collect();
        let memtables = all
            .iter()
            .enumerate()
            .map(|(i, m)| MemtableStats {
                generation: flushes + 1 + i as u64,
                rows: m.len() as u64,
                bytes: m.bytes as u64,
                batches: m.batch_count() as u64,
                indexes: Vec::new(),
            })
            .collect::<Vec<_>>();
        Ok(memwal_core::LsmStats {
            buckets: vec![BucketStats {
                shard_id: "0".into(),
                status: if self.shared.fenced.load(Ordering::Relaxed) {
                    "Fenced".into()
                } else {
                    "Active".into()
                },
                // A local WAL has one writer, epoch 1; a shared one counts takeovers.
                writer_epoch: self.shared.epoch.max(1),
                manifest_version: version,
                current_generation: flushes + all.len() as u64,
                replay_after_wal_entry_position: self.shared.flushed_seq.load(Ordering::Relaxed),
                wal_entry_position_last_seen: self.shared.last_seq.load(Ordering::Relaxed),
                generations: Vec::new(),
                compacting: !o.frozen.is_empty(),
                memtables: Some(memtables),
            }],
        })
    }

    /// Figures for `/health`.
    pub fn health(&self) -> Health {
        let o = self.shared.read();
        Health {
            memtable_rows: (o.active.len() + o.frozen.iter().map(|m| m.len()).sum::<usize>())
                as u64,
            frozen_memtables: o.frozen.len() as u64,
            wal_bytes: self.shared.wal.local_bytes(),
            last_flushed_seq: self.shared.flushed_seq.load(Ordering::Relaxed),
            last_seq: self.shared.last_seq.load(Ordering::Relaxed),
            flushes: self.shared.flushes.load(Ordering::Relaxed),
            poisoned: lock(&self.shared.poisoned).clone(),
            failed: self.shared.failed.clone(),
        }
    }

    /// Stops the threads (the WAL keeps every acknowledged record).
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = self.tx.try_send(Job::Freeze);
        self.shared.notify();
        let threads: Vec<_> = lock(&self.threads).drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

impl Drop for MemWalTable {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.notify();
    }
}

/// Two source rows with one key: the caller's error, never logged.
fn check_unique(enc: &KeyEncoder, batch: &RecordBatch, keys: &[Option<Key>]) -> Result<()> {
    let mut seen = hashbrown::HashSet::with_capacity(keys.len());
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            if !seen.insert(k) {
                return Err(memwal_core::Error::invalid(format!(
                    "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on {}",
                    enc.describe(batch, i)
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// The columns an upsert's rows carry, by name.
pub(crate) fn supplied_columns(data: &Data) -> Vec<String> {
    data.schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect()
}

/// One WAL record for [`apply_to`]: its rows aligned to the table, their
/// keys if known, and the columns the sender supplied.
pub(crate) struct Upsert {
    pub seq: u64,
    pub batch: RecordBatch,
    pub keys: Option<Vec<Option<Key>>>,
    pub supplied: Vec<String>,
    pub bytes: usize,
}

/// Applies one record to `active`: omitted columns keep the key's newest
/// values (`fill`); counts come from the memtables and the base key index,
/// newest first.
pub(crate) fn apply_to(
    base: &NativeTable,
    active: &mut Memtable,
    frozen: &VecDeque<Arc<Memtable>>,
    rec: Upsert,
) -> Result<(u64, u64)> {
    let Upsert {
        seq,
        batch,
        keys,
        supplied,
        bytes,
    } = rec;
    let keys = match keys {
        Some(k) => k,
        None => KeyEncoder::new(&active.schema, &active.on)?.encode(&batch)?,
    };
    let omitted = fill::omitted(&active.schema, &supplied);
    let batch = fill::fill_omitted(base, active, frozen, batch, &keys, &omitted)?;
    let mut before = vec![0u32; keys.len()];
    let mut ask_base = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            if active.contains(k) {
                continue; // the memtable knows its own count
            }
            match frozen.iter().rev().find_map(|m| m.rows_of(k)) {
                Some(n) => before[i] = n,
                None => ask_base.push(i),
            }
        }
    }
    if !ask_base.is_empty() {
        let idx = arrow::array::UInt32Array::from_iter_values(ask_base.iter().map(|i| *i as u32));
        let sub = arrow::compute::take_record_batch(&batch, &idx)?;
        let in_base = base.key_counts(&active.on, &sub)?;
        for (j, i) in ask_base.iter().enumerate() {
            before[*i] = in_base[j];
        }
    }
    Ok(active.apply(seq, batch, &keys, &before, bytes))
}
