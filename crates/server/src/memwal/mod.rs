//! The MemWAL write path of one table.
//!
//! ```text
//!  request ──validate──► writer thread ──group──► WAL segment (one fdatasync)
//!                              │ apply in seq order
//!                              ▼
//!                     active memtable ──freeze──► frozen queue ──flusher──► base table
//!                                                   (bounded: writers wait)    (one merge per memtable,
//!                                                                              flushed seq in the same commit)
//! ```
//! Segments and memtables are independent: the writer starts a new WAL
//! segment once the current one holds [`SEGMENT_BYTES`], a freeze does not
//! rotate the WAL, and a segment is removed once every record in it is
//! flushed.
//!
//! Reads overlay the memtables (newest first) on the base; a memtable whose
//! last sequence number is at most the base's committed `memwal.flushed_seq`
//! is already in the base and is skipped, so no reader ever counts a row twice.

pub mod memtable;
mod overlay;
pub mod wal;

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use memwal_core::keys::{Key, KeyEncoder};
use memwal_core::{ipc, Data, MergeInsertParams, MergeResult, NativeTable};
use tokio::sync::oneshot;

use crate::error::{Error, Result};
use memtable::Memtable;
use wal::{PersistMode, Segment};

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
    /// Frozen memtables allowed before writers wait (backpressure).
    pub max_frozen: usize,
    /// Most requests committed by one fdatasync.
    pub max_group: usize,
    /// Durability of appends.
    pub persist: PersistMode,
}

impl Default for MemWalConfig {
    fn default() -> Self {
        Self {
            flush_rows: 50_000,
            flush_bytes: 64 << 20,
            flush_interval: Duration::from_secs(2),
            max_frozen: 4,
            max_group: 512,
            persist: PersistMode::SyncData,
        }
    }
}

pub(crate) struct Overlay {
    pub active: Memtable,
    pub frozen: VecDeque<Arc<Memtable>>,
}

enum Job {
    Upsert(Pending),
    /// Freeze whatever is in the active memtable now.
    Freeze,
}

/// Figures for `/health`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Health {
    pub memtable_rows: u64,
    pub frozen_memtables: u64,
    pub wal_bytes: u64,
    pub last_flushed_seq: u64,
    pub last_seq: u64,
    pub flushes: u64,
    pub poisoned: Option<String>,
}

pub(crate) struct Shared {
    name: String,
    base: NativeTable,
    wal_dir: PathBuf,
    cfg: MemWalConfig,
    overlay: RwLock<Overlay>,
    /// Signalled when a frozen memtable is flushed or one is queued.
    changed: Condvar,
    changed_lock: Mutex<()>,
    poisoned: Mutex<Option<String>>,
    last_seq: AtomicU64,
    flushed_seq: AtomicU64,
    flushes: AtomicU64,
    stop: std::sync::atomic::AtomicBool,
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
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
    }
    fn check_poison(&self) -> Result<()> {
        match lock(&self.poisoned).as_ref() {
            Some(m) => Err(Error::Poisoned {
                table: self.name.clone(),
                message: m.clone(),
            }),
            None => Ok(()),
        }
    }
    fn notify(&self) {
        let _g = lock(&self.changed_lock);
        self.changed.notify_all();
    }
    fn wait(&self, timeout: Duration) {
        let g = lock(&self.changed_lock);
        let _ = self.changed.wait_timeout(g, timeout);
    }
}

fn flushed_seq_of(t: &NativeTable) -> Result<u64> {
    let m = t.manifest()?;
    Ok(m.metadata
        .get(FLUSHED_SEQ_KEY)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0))
}

impl MemWalTable {
    /// Opens the MemWAL of `base` under `wal_dir`, replaying every record
    /// past the base's flushed sequence number.
    pub fn open(
        name: &str,
        base: NativeTable,
        wal_dir: PathBuf,
        cfg: MemWalConfig,
    ) -> Result<Arc<Self>> {
        let flushed = flushed_seq_of(&base)?;
        let rec = wal::recover(&wal_dir)?;
        let schema = base.schema_sync()?;
        let mut active = Memtable::new(vec![], schema.clone());
        let mut last_seq = flushed;
        let mut replayed = 0usize;
        for r in rec.records {
            last_seq = last_seq.max(r.seq);
            if r.seq <= flushed {
                continue;
            }
            let corrupt = |what: String| Error::Poisoned {
                table: name.to_string(),
                message: format!("WAL record {} passed its checksum but {what}", r.seq),
            };
            let (on, data) = if r.format == 1 {
                let data = ipc::decode(&r.payload)
                    .map_err(|e| corrupt(format!("is not Arrow IPC: {e}")))?;
                let on: Vec<String> = data
                    .schema
                    .metadata()
                    .get("memwal.on")
                    .and_then(|j| serde_json::from_str(j).ok())
                    .unwrap_or_default();
                (on, data)
            } else {
                let (on, rows) = wal::split_payload(&r.payload)
                    .ok_or_else(|| corrupt("has no key columns".into()))?;
                let data =
                    ipc::decode(rows).map_err(|e| corrupt(format!("is not Arrow IPC: {e}")))?;
                (on, data)
            };
            if active.on.is_empty() {
                active.on = on.clone();
            }
            let b = memwal_core::schema::align_all(&data.batches, &schema)?;
            apply_to(&base, &mut active, &VecDeque::new(), r.seq, b, None, 0)?;
            replayed += 1;
        }
        if replayed > 0 {
            tracing::info!(
                table = name,
                replayed,
                torn_bytes = rec.torn_bytes,
                "replayed MemWAL records"
            );
        }
        let segment = Segment::create(&wal_dir, last_seq + 1, cfg.persist)?;
        let mut frozen = VecDeque::new();
        if !active.is_empty() {
            let on = active.on.clone();
            frozen.push_back(Arc::new(std::mem::replace(
                &mut active,
                Memtable::new(on, schema.clone()),
            )));
        }
        let shared = Arc::new(Shared {
            name: name.to_string(),
            base,
            wal_dir,
            cfg: cfg.clone(),
            overlay: RwLock::new(Overlay { active, frozen }),
            changed: Condvar::new(),
            changed_lock: Mutex::new(()),
            poisoned: Mutex::new(None),
            last_seq: AtomicU64::new(last_seq),
            flushed_seq: AtomicU64::new(flushed),
            flushes: AtomicU64::new(0),
            stop: std::sync::atomic::AtomicBool::new(false),
        });
        let (tx, rx) = mpsc::sync_channel::<Job>(4096);
        let w = shared.clone();
        let writer = std::thread::Builder::new()
            .name(format!("memwal-writer-{name}"))
            .spawn(move || writer_loop(w, rx, segment))?;
        let f = shared.clone();
        let flusher = std::thread::Builder::new()
            .name(format!("memwal-flusher-{name}"))
            .spawn(move || flusher_loop(f))?;
        Ok(Arc::new(Self {
            shared,
            tx,
            threads: Mutex::new(vec![writer, flusher]),
        }))
    }

    /// The base table.
    pub fn base(&self) -> &NativeTable {
        &self.shared.base
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
        self.shared.check_poison()?;
        let manifest = self.shared.base.manifest()?;
        let schema = Arc::new(manifest.schema.clone());
        let num_rows = data.num_rows() as u64;
        let batch = memwal_core::schema::align_all(&data.batches, &schema)?;
        // Key checks before anything is logged: unknown key columns and
        // duplicate keys are the caller's error and must never reach the WAL.
        let enc = KeyEncoder::new(&schema, &on)?;
        let keys = enc.encode(&batch)?;
        let mut seen = hashbrown::HashSet::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if let Some(k) = k {
                if !seen.insert(k) {
                    return Err(memwal_core::Error::invalid(format!(
                        "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on {}",
                        enc.describe(&batch, i)
                    ))
                    .into());
                }
            }
        }
        drop(seen);
        let payload = match raw {
            Some(b) => b,
            None => ipc::encode_stream(&schema, std::slice::from_ref(&batch))?.into(),
        };
        let (reply, rx) = oneshot::channel();
        let job = Job::Upsert(Pending {
            prefix: wal::payload_prefix(&on),
            on,
            batch,
            keys,
            payload,
            reply,
        });
        // The channel is bounded: a full queue makes this request wait
        // (backpressure), on a blocking thread so the runtime goes on.
        match self.tx.try_send(job) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(job)) => {
                let tx = self.tx.clone();
                tokio::task::spawn_blocking(move || tx.send(job).map_err(|_| ()))
                    .await
                    .map_err(|e| memwal_core::Error::internal(e.to_string()))?
                    .map_err(|_| memwal_core::Error::internal("MemWAL writer stopped"))?;
            }
            Err(mpsc::TrySendError::Disconnected(_)) => {
                return Err(memwal_core::Error::internal("MemWAL writer stopped").into())
            }
        }
        let (ins, upd) = rx
            .await
            .map_err(|_| memwal_core::Error::internal("MemWAL writer dropped the request"))??;
        Ok(MergeResult {
            // The base version the rows will be flushed onto (MemWAL writes
            // make no version of their own).
            version: manifest.version,
            num_inserted_rows: ins,
            num_updated_rows: upd,
            num_deleted_rows: 0,
            num_attempts: 1,
            num_rows,
        })
    }

    /// Freezes the active memtable and waits until every memtable is in
    /// the base table (used before direct writes, and on demand).
    pub fn flush_all(&self, timeout: Duration) -> Result<()> {
        let _ = self.tx.send(Job::Freeze);
        let start = Instant::now();
        loop {
            self.shared.check_poison()?;
            {
                let o = self.shared.read();
                if o.active.is_empty() && o.frozen.is_empty() {
                    return Ok(());
                }
                if !o.active.is_empty() && o.frozen.is_empty() {
                    let _ = self.tx.try_send(Job::Freeze);
                }
            }
            if start.elapsed() > timeout {
                return Err(Error::Busy(1));
            }
            self.shared.wait(Duration::from_millis(20));
        }
    }

    /// Figures for `/health`.
    pub fn health(&self) -> Health {
        let o = self.shared.read();
        Health {
            memtable_rows: (o.active.len() + o.frozen.iter().map(|m| m.len()).sum::<usize>())
                as u64,
            frozen_memtables: o.frozen.len() as u64,
            // Segment files on disk, preallocated space included.
            wal_bytes: wal::segments(&self.shared.wal_dir)
                .unwrap_or_default()
                .iter()
                .map(|(_, p)| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
                .sum(),
            last_flushed_seq: self.shared.flushed_seq.load(Ordering::Relaxed),
            last_seq: self.shared.last_seq.load(Ordering::Relaxed),
            flushes: self.shared.flushes.load(Ordering::Relaxed),
            poisoned: lock(&self.shared.poisoned).clone(),
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

/// Applies one record to `active`: counts come from the memtables and the
/// base key index, newest first.
fn apply_to(
    base: &NativeTable,
    active: &mut Memtable,
    frozen: &VecDeque<Arc<Memtable>>,
    seq: u64,
    batch: RecordBatch,
    keys: Option<Vec<Option<Key>>>,
    bytes: usize,
) -> Result<(u64, u64)> {
    let keys = match keys {
        Some(k) => k,
        None => KeyEncoder::new(&active.schema, &active.on)?.encode(&batch)?,
    };
    let mut existed = vec![false; keys.len()];
    let mut ask_base = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if let Some(k) = k {
            if active.contains(k) || frozen.iter().any(|m| m.contains(k)) {
                existed[i] = true;
            } else {
                ask_base.push(i);
            }
        }
    }
    if !ask_base.is_empty() {
        let idx = arrow::array::UInt32Array::from_iter_values(ask_base.iter().map(|i| *i as u32));
        let sub = arrow::compute::take_record_batch(&batch, &idx)?;
        let in_base = base.keys_exist(&active.on, &sub)?;
        for (j, i) in ask_base.iter().enumerate() {
            existed[*i] = in_base[j];
        }
    }
    Ok(active.apply(seq, batch, &keys, &existed, bytes))
}

fn writer_loop(shared: Arc<Shared>, rx: mpsc::Receiver<Job>, mut segment: Segment) {
    let cfg = shared.cfg.clone();
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let first = match rx.recv_timeout(cfg.flush_interval.min(Duration::from_millis(200))) {
            Ok(j) => Some(j),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let mut jobs = Vec::new();
        let mut force_freeze = false;
        if let Some(j) = first {
            jobs.push(j);
            while jobs.len() < cfg.max_group {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
        }
        let mut upserts = Vec::new();
        for j in jobs {
            match j {
                Job::Freeze => force_freeze = true,
                Job::Upsert(p) => upserts.push(p),
            }
        }
        if !upserts.is_empty() {
            commit_group(&shared, &mut segment, upserts);
        }
        maybe_freeze(&shared, force_freeze);
        if segment.len >= SEGMENT_BYTES {
            let next = shared.last_seq.load(Ordering::SeqCst) + 1;
            match Segment::create(&shared.wal_dir, next, cfg.persist) {
                Ok(new) => segment = new,
                Err(e) => shared.poison(format!("cannot start a new WAL segment: {e}")),
            }
        }
    }
}

/// An upsert waiting for the writer.
struct Pending {
    on: Vec<String>,
    batch: RecordBatch,
    /// The batch's keys (encoded once, by the request).
    keys: Vec<Option<Key>>,
    /// The WAL payload: this prefix (key columns), then the rows' IPC.
    prefix: Vec<u8>,
    payload: bytes::Bytes,
    reply: oneshot::Sender<Result<(u64, u64)>>,
}

fn commit_group(shared: &Shared, segment: &mut Segment, upserts: Vec<Pending>) {
    if let Err(e) = shared.check_poison() {
        for p in upserts {
            let _ = p.reply.send(Err(Error::Poisoned {
                table: shared.name.clone(),
                message: e.to_string(),
            }));
        }
        return;
    }
    // A memtable has one key: an upsert on other columns waits for a drain.
    let active_on = shared.read().active.on.clone();
    let mut accepted = Vec::new();
    for p in upserts {
        let same = active_on.is_empty()
            || active_on == p.on
            || shared.read().active.is_empty() && shared.read().frozen.is_empty();
        if !same {
            let _ = p.reply.send(Err(memwal_core::Error::invalid(format!(
                "MemWAL upserts on table '{}' use the key ({}) until their rows are flushed; this one uses ({})",
                shared.name,
                active_on.join(", "),
                p.on.join(", ")
            ))
            .into()));
            continue;
        }
        accepted.push(p);
    }
    if accepted.is_empty() {
        return;
    }
    let first = shared.last_seq.load(Ordering::SeqCst) + 1;
    let records: Vec<(u64, [&[u8]; 2])> = accepted
        .iter()
        .enumerate()
        .map(|(i, p)| (first + i as u64, [&p.prefix[..], &p.payload[..]]))
        .collect();
    match segment.append_records(&records) {
        Ok(_) => {}
        Err(e) => {
            // Not durable: nothing is acknowledged, and the table refuses
            // writes from now on rather than guess what the disk kept
            // (fsync failures may drop dirty pages).
            shared.poison(format!("WAL append failed: {e}"));
            drop(records);
            for p in accepted {
                let _ = p.reply.send(Err(Error::Poisoned {
                    table: shared.name.clone(),
                    message: e.to_string(),
                }));
            }
            return;
        }
    }
    drop(records);
    shared
        .last_seq
        .store(first + accepted.len() as u64 - 1, Ordering::SeqCst);
    let mut o = shared.write();
    let Overlay { active, frozen } = &mut *o;
    for (i, p) in accepted.into_iter().enumerate() {
        if active.on.is_empty() {
            active.on = p.on;
        }
        let r = apply_to(
            &shared.base,
            active,
            frozen,
            first + i as u64,
            p.batch,
            Some(p.keys),
            p.payload.len(),
        );
        if let Err(e) = &r {
            // Durable but not applied: memory no longer matches the log.
            shared.poison(format!(
                "applying WAL record {} failed: {e}",
                first + i as u64
            ));
        }
        let _ = p.reply.send(r);
    }
}

/// Freezes the active memtable when it is due (or `force`d), waiting
/// while too many frozen ones are queued (backpressure, never a drop).
fn maybe_freeze(shared: &Shared, force: bool) {
    let cfg = &shared.cfg;
    {
        let o = shared.read();
        let a = &o.active;
        if a.is_empty() {
            return;
        }
        let due = force
            || a.len() >= cfg.flush_rows
            || a.bytes >= cfg.flush_bytes
            || a.created.elapsed() >= cfg.flush_interval;
        if !due {
            return;
        }
    }
    while shared.read().frozen.len() >= cfg.max_frozen {
        if shared.stop.load(Ordering::SeqCst) || shared.check_poison().is_err() {
            return;
        }
        shared.wait(Duration::from_millis(50));
    }
    {
        let mut o = shared.write();
        let fresh = Memtable::new(o.active.on.clone(), o.active.schema.clone());
        let full = std::mem::replace(&mut o.active, fresh);
        o.frozen.push_back(Arc::new(full));
    }
    shared.notify();
}

fn flusher_loop(shared: Arc<Shared>) {
    loop {
        let next = shared.read().frozen.front().cloned();
        let Some(mt) = next else {
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
            shared.wait(Duration::from_millis(100));
            continue;
        };
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        match flush_one(&shared, &mt) {
            Ok(()) => {
                shared.write().frozen.pop_front();
                shared.flushes.fetch_add(1, Ordering::Relaxed);
                shared.flushed_seq.store(mt.max_seq, Ordering::SeqCst);
                if let Err(e) = truncate_wal(&shared, mt.max_seq) {
                    tracing::warn!(table = %shared.name, error = %e, "could not remove flushed WAL segments");
                }
                shared.notify();
            }
            Err(e) => {
                tracing::error!(table = %shared.name, error = %e, "MemWAL flush failed; retrying");
                shared.wait(Duration::from_millis(500));
            }
        }
    }
}

fn flush_one(shared: &Shared, mt: &Memtable) -> Result<()> {
    let mut p = MergeInsertParams::new(mt.on.clone());
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    p.commit_metadata = BTreeMap::from([(FLUSHED_SEQ_KEY.to_string(), mt.max_seq.to_string())]);
    let rows = mt.rows()?;
    let started = Instant::now();
    let r = shared
        .base
        .merge_insert_sync(&p, Data::new(mt.schema.clone(), vec![rows]))?;
    tracing::info!(
        table = %shared.name, rows = mt.len(), seq = mt.max_seq, version = r.version,
        ms = started.elapsed().as_millis() as u64, "flushed memtable into the base table"
    );
    Ok(())
}

/// Removes the segments every record of which is at most `flushed`.
fn truncate_wal(shared: &Shared, flushed: u64) -> std::io::Result<()> {
    let segs = wal::segments(&shared.wal_dir)?;
    for w in segs.windows(2) {
        let (_, path) = &w[0];
        let (next_first, _) = w[1];
        if next_first <= flushed + 1 {
            std::fs::remove_file(path)?;
        }
    }
    Ok(())
}
