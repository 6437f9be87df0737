//! Opening a table's MemWAL: recover the WAL, replay every record past the
//! base's flushed sequence number into a memtable (merging it into the base
//! first wherever the key columns change, as the writer did), then start
//! the writer and flusher threads. Damage the recovery mode does not allow
//! opens the table as failed instead.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{mpsc, Arc, Condvar, Mutex, RwLock};

use memwal_core::manifest::Manifest;
use memwal_core::{ipc, Data, NativeTable};

use super::flusher::{flush_memtable, flusher_loop};
use super::log::{Opened, Wal};
use super::memtable::Memtable;
use super::wal::{self, Record};
use super::writer::{writer_loop, Job};
use super::{
    apply_to, epoch_in, flushed_seq_in, supplied_columns, MemWalConfig, MemWalTable, Overlay,
    Shared, EPOCH_KEY,
};
use crate::error::Result;

/// What replay rebuilt.
struct Replayed {
    active: Memtable,
    last_seq: u64,
}

pub(crate) fn open(
    name: &str,
    base: NativeTable,
    wal: Wal,
    cfg: MemWalConfig,
) -> Result<Arc<MemWalTable>> {
    let opened = recover_and_claim(&base, &wal, &cfg)?;
    let (flushed, rec, epoch) = (opened.flushed, opened.recovered, opened.epoch);
    if epoch > 0 {
        tracing::info!(
            table = name,
            epoch,
            first_seq = opened.next_seq,
            "claimed the table's WAL"
        );
    }
    let replayed = match &rec.damage {
        Some(d) => Err(format!("{d}; the table is not served until an operator repairs the WAL or restarts with --recovery cut (which drops the records from there on)")),
        None => replay(name, &base, rec.records, flushed),
    };
    let (active, last_seq, failed) = match replayed {
        Ok(r) => (r.active, r.last_seq.max(opened.next_seq - 1), None),
        Err(why) => {
            tracing::error!(table = name, reason = %why, "table failed to open");
            (
                Memtable::new(vec![], base.schema_sync()?),
                flushed,
                Some(why),
            )
        }
    };
    if rec.torn_bytes > 0 || !rec.cut.is_empty() {
        tracing::warn!(
            table = name,
            torn_bytes = rec.torn_bytes,
            cut = rec.cut.len(),
            "WAL recovered with losses of unacknowledged or cut records"
        );
    }
    let start = Start {
        active,
        last_seq,
        flushed,
        failed,
    };
    let shared = Arc::new(shared_state(name, base, (wal, epoch), &cfg, start));
    let (tx, rx) = mpsc::sync_channel::<Job>(4096);
    let mut threads = Vec::new();
    if shared.failed.is_none() {
        let segment = shared.wal.writer(last_seq + 1, cfg.persist)?;
        let w = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("memwal-writer-{name}"))
                .spawn(move || writer_loop(w, rx, segment))?,
        );
        let f = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("memwal-flusher-{name}"))
                .spawn(move || flusher_loop(f))?,
        );
    }
    Ok(Arc::new(MemWalTable {
        shared,
        tx,
        threads: Mutex::new(threads),
    }))
}

/// Times the claim of a shared WAL is tried again after a stale writer
/// committed between the recovery and the claim.
const CLAIM_TRIES: usize = 8;

/// Recovers the WAL. A shared one (epoch > 0) is also claimed in the base:
/// the epoch its fence took is committed into the base's metadata
/// (`EPOCH_KEY`), so no commit of a stale writer (a flush, a direct write)
/// lands after it, and this writer's later commits refuse to land after a
/// newer writer's claim. If a stale writer committed between the recovery
/// and the claim, the base moved past what was read: read again.
fn recover_and_claim(base: &NativeTable, wal: &Wal, cfg: &MemWalConfig) -> Result<Opened> {
    let read = || -> std::io::Result<Arc<Manifest>> {
        base.latest_manifest()
            .map_err(|e| std::io::Error::other(e.to_string()))
    };
    let read_flushed = || -> std::io::Result<u64> { Ok(flushed_seq_in(read()?.as_ref())) };
    for _ in 0..CLAIM_TRIES {
        let floor = epoch_in(read()?.as_ref()) + 1;
        let opened = wal.open(cfg.recovery, &read_flushed, &owner(), floor)?;
        if opened.epoch == 0 {
            return Ok(opened); // a local WAL, or damage: nothing claimed
        }
        base.claim_epoch_sync(EPOCH_KEY, opened.epoch)?;
        if read_flushed()? == opened.flushed {
            return Ok(opened);
        }
    }
    Err(std::io::Error::other(format!(
        "could not claim the table after {CLAIM_TRIES} tries: another server keeps committing to it"
    ))
    .into())
}

/// Who claims a shared WAL, for operators reading a fence record.
fn owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{} pid {}", host.trim(), std::process::id())
}

/// Where replay left the table.
struct Start {
    active: Memtable,
    last_seq: u64,
    flushed: u64,
    failed: Option<String>,
}

/// The table's shared state; replayed rows wait in the frozen queue.
fn shared_state(
    name: &str,
    base: NativeTable,
    (wal, epoch): (Wal, u64),
    cfg: &MemWalConfig,
    start: Start,
) -> Shared {
    let Start {
        active,
        last_seq,
        flushed,
        failed,
    } = start;
    let mut frozen = VecDeque::new();
    let schema = active.schema.clone();
    let mut active = active;
    if !active.is_empty() {
        let on = active.on.clone();
        frozen.push_back(Arc::new(std::mem::replace(
            &mut active,
            Memtable::new(on, schema),
        )));
    }
    Shared {
        name: name.to_string(),
        base,
        wal,
        epoch,
        cfg: cfg.clone(),
        overlay: RwLock::new(Overlay { active, frozen }),
        changed: Condvar::new(),
        changed_lock: Mutex::new(()),
        poisoned: Mutex::new(None),
        failed,
        last_seq: AtomicU64::new(last_seq),
        flushed_seq: AtomicU64::new(flushed),
        flushes: AtomicU64::new(0),
        flush_failures: AtomicU32::new(0),
        flush_lock: Mutex::new(()),
        stop: AtomicBool::new(false),
        dropped: AtomicBool::new(false),
        fenced: AtomicBool::new(false),
        views: Mutex::new(None),
    }
}

/// The key columns and rows of one record.
fn decode(r: &Record) -> std::result::Result<(Vec<String>, Data), String> {
    let bad = |what: String| format!("WAL record {} passed its checksum but {what}", r.seq);
    if r.format == 1 {
        let data = ipc::decode(&r.payload).map_err(|e| bad(format!("is not Arrow IPC: {e}")))?;
        let on: Vec<String> = data
            .schema
            .metadata()
            .get("memwal.on")
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default();
        return Ok((on, data));
    }
    let (on, rows) =
        wal::split_payload(&r.payload).ok_or_else(|| bad("has no key columns".into()))?;
    let data = ipc::decode(rows).map_err(|e| bad(format!("is not Arrow IPC: {e}")))?;
    Ok((on, data))
}

/// Applies the records past `flushed` in order. An error (a record that
/// cannot be applied) fails the table: serving without it would hide an
/// acknowledged write.
fn replay(
    name: &str,
    base: &NativeTable,
    records: Vec<Record>,
    flushed: u64,
) -> std::result::Result<Replayed, String> {
    let schema = base.schema_sync().map_err(|e| e.to_string())?;
    let mut active = Memtable::new(vec![], schema.clone());
    let mut last_seq = flushed;
    let mut replayed = 0usize;
    for r in records {
        last_seq = last_seq.max(r.seq);
        if r.seq <= flushed || (r.format == 2 && wal::fence_epoch(&r.payload).is_some()) {
            continue;
        }
        let (on, data) = decode(&r)?;
        let fail =
            |e: &dyn std::fmt::Display| format!("replaying WAL record {} failed: {e}", r.seq);
        if !active.is_empty() && active.on != on {
            // The writer drained before a key change; so does replay.
            flush_memtable(name, base, &active).map_err(|e| fail(&e))?;
            active = Memtable::new(vec![], schema.clone());
        }
        active.on = on;
        let b = memwal_core::schema::align_all(&data.batches, &schema).map_err(|e| fail(&e))?;
        let rec = super::Upsert {
            seq: r.seq,
            batch: b,
            keys: None,
            supplied: supplied_columns(&data),
            bytes: 0,
        };
        apply_to(base, &mut active, &VecDeque::new(), rec).map_err(|e| fail(&e))?;
        replayed += 1;
    }
    if replayed > 0 {
        tracing::info!(table = name, replayed, "replayed MemWAL records");
    }
    Ok(Replayed { active, last_seq })
}
