//! The writer thread of one table: takes upserts and direct writes from one
//! queue, in order. Consecutive upserts on the table's key are logged as one
//! group (one fdatasync) and applied to the active memtable; an upsert on
//! another key first drains the memtables (so it gets the native result);
//! a direct write runs in its turn (see [`super::Turn`]). Freezing the
//! active memtable never blocks the writer: past `max_frozen` it grows, and
//! past twice its limits upserts are refused as overloaded.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use memwal_core::keys::{Key, KeyEncoder};
use tokio::sync::oneshot;

use super::flusher::{drain, truncate_wal};
use super::log::WalWriter;
use super::memtable::Memtable;
use super::{apply_to, lock, Overlay, RunFn, Shared, Turn, TurnCtx, Upsert, FLUSHED_SEQ_KEY};
use crate::error::{Error, Result};
use crate::metrics::Phase;

/// How often an idle writer on a shared WAL checks it was not taken over.
const TAKEOVER_CHECK_EVERY: Duration = Duration::from_secs(1);

pub(crate) enum Job {
    Upsert(Pending),
    Direct(Turn, RunFn),
    /// Freeze whatever is in the active memtable now.
    Freeze,
}

/// An upsert waiting for the writer.
pub(crate) struct Pending {
    pub on: Vec<String>,
    pub batch: RecordBatch,
    /// The batch's keys (encoded once, by the request).
    pub keys: Vec<Option<Key>>,
    /// The columns the sender supplied (the others keep their values).
    pub supplied: Vec<String>,
    /// The WAL payload: this prefix (key columns), then the rows' IPC.
    pub prefix: Vec<u8>,
    pub payload: bytes::Bytes,
    pub reply: oneshot::Sender<Result<Applied>>,
    /// When it was queued (for `/metrics`' phases).
    pub queued: Instant,
}

/// The writer's answer to an upsert.
pub(crate) struct Applied {
    pub inserted: u64,
    pub updated: u64,
    /// The base version the rows will be flushed onto.
    pub version: u64,
    /// When the writer answered (for `/metrics`' reply phase).
    pub at: Instant,
}

impl Applied {
    fn new((inserted, updated, version): (u64, u64, u64)) -> Self {
        Self {
            inserted,
            updated,
            version,
            at: Instant::now(),
        }
    }
}

/// Whether the writer goes on after a job.
#[derive(PartialEq, Eq)]
enum Next {
    Continue,
    Stop,
}

pub(crate) fn writer_loop(shared: Arc<Shared>, rx: mpsc::Receiver<Job>, mut segment: WalWriter) {
    let cfg = shared.cfg.clone();
    let mut last_check = Instant::now();
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let first = match rx.recv_timeout(cfg.flush_interval.min(Duration::from_millis(200))) {
            Ok(j) => Some(j),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if last_check.elapsed() >= TAKEOVER_CHECK_EVERY {
                    last_check = Instant::now();
                    check_taken_over(&shared);
                }
                None
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let mut jobs = Vec::new();
        if let Some(j) = first {
            jobs.push(j);
            while jobs.len() < cfg.max_group {
                match rx.try_recv() {
                    Ok(j) => jobs.push(j),
                    Err(_) => break,
                }
            }
        }
        let (next, force_freeze) = run_jobs(&shared, &mut segment, jobs);
        if next == Next::Stop {
            refuse_rest(&shared, rx);
            return;
        }
        maybe_freeze(&shared, force_freeze);
        let next = shared.last_seq.load(Ordering::SeqCst) + 1;
        if let Err(e) = segment.roll_if_full(&shared.wal, next, cfg.persist) {
            shared.poison(format!("cannot start a new WAL segment: {e}"));
        }
    }
}

/// When idle, about once a second on a shared WAL (in the writer's thread,
/// so its own next object is never mistaken for another's): whether another server
/// wrote past this writer's last record (it took the table over while this
/// one stalled); if so this one stops serving the table.
fn check_taken_over(shared: &Shared) {
    if lock(&shared.poisoned).is_some() {
        return;
    }
    let last = shared.last_seq.load(Ordering::SeqCst);
    match shared.wal.taken_over(last) {
        Ok(true) => shared.fence(format!(
            "WAL record {} of this table was written by another server, which has taken the table over; this server refuses its reads and writes",
            last + 1
        )),
        Ok(false) => {}
        Err(e) => tracing::warn!(table = %shared.name, error = %e, "could not check the shared WAL"),
    }
}

/// Runs a batch of jobs in order; returns whether to go on and whether a
/// freeze was asked for.
fn run_jobs(shared: &Shared, segment: &mut WalWriter, jobs: Vec<Job>) -> (Next, bool) {
    let mut group: Vec<Pending> = Vec::new();
    let mut force_freeze = false;
    for job in jobs {
        match job {
            Job::Freeze => force_freeze = true,
            Job::Upsert(p) if partial_on_duplicates(shared, &p) => {
                commit_group(shared, segment, std::mem::take(&mut group));
                native_upsert(shared, p);
            }
            Job::Upsert(p) => {
                let key_changes = match group.first() {
                    Some(g) => g.on != p.on,
                    None => memtables_key(shared).is_some_and(|on| on != p.on),
                };
                if key_changes {
                    commit_group(shared, segment, std::mem::take(&mut group));
                    if let Err(e) = drain(shared) {
                        let _ = p.reply.send(Err(e));
                        continue;
                    }
                }
                group.push(p);
            }
            Job::Direct(turn, run) => {
                commit_group(shared, segment, std::mem::take(&mut group));
                if run_turn(shared, turn, run) == Next::Stop {
                    return (Next::Stop, force_freeze);
                }
            }
        }
    }
    commit_group(shared, segment, group);
    (Next::Continue, force_freeze)
}

/// Whether `p` omits columns and matches a key the base holds on several
/// rows (see `fill::hits_base_duplicates`); an error says yes (the native
/// merge then reports it).
fn partial_on_duplicates(shared: &Shared, p: &Pending) -> bool {
    let o = shared.read();
    if super::fill::omitted(&o.active.schema, &p.supplied).is_empty() {
        return false;
    }
    let mems: Vec<&Memtable> = std::iter::once(&o.active)
        .chain(o.frozen.iter().map(|m| m.as_ref()))
        .collect();
    if mems.iter().any(|m| !m.is_empty() && m.on != p.on) {
        // Rows on other key columns are drained into the base before this
        // upsert applies and may hold its keys: merge it natively after them.
        return true;
    }
    super::fill::hits_base_duplicates(&shared.base, &p.on, &mems, &p.batch, &p.keys).unwrap_or(true)
}

/// An upsert merged natively in the writer's turn (after the memtables
/// are drained), with the columns its sender supplied: durable in the base
/// commit, exact as a local merge.
fn native_upsert(shared: &Shared, p: Pending) {
    let run = || -> Result<(u64, u64, u64)> {
        drain(shared)?;
        shared.check_writable()?;
        let cols: Vec<usize> = p
            .supplied
            .iter()
            .filter_map(|c| p.batch.schema().index_of(c).ok())
            .collect();
        let batch = p.batch.project(&cols)?;
        let mut params = memwal_core::MergeInsertParams::new(p.on.clone());
        params.when_matched_update_all = true;
        params.when_not_matched_insert_all = true;
        let params = params.validate()?;
        let data = memwal_core::Data::new(batch.schema(), vec![batch]);
        let r = shared.base.merge_insert_sync(&params, data)?;
        Ok((r.num_inserted_rows, r.num_updated_rows, r.version))
    };
    let _ = p.reply.send(run().map(Applied::new));
}

/// The key of the rows the memtables hold, if they hold any.
fn memtables_key(shared: &Shared) -> Option<Vec<String>> {
    let o = shared.read();
    (!o.active.is_empty() || !o.frozen.is_empty()).then(|| o.active.on.clone())
}

/// After a drop: every job still queued answers "not found".
fn refuse_rest(shared: &Shared, rx: mpsc::Receiver<Job>) {
    while let Ok(job) = rx.try_recv() {
        match job {
            Job::Upsert(p) => {
                let _ = p.reply.send(Err(shared.not_found()));
            }
            Job::Direct(_, run) => {
                run(Err(shared.not_found()));
            }
            Job::Freeze => {}
        }
    }
}

/// A direct write in its turn. On a shared WAL, first whether another
/// server has taken the table over: a drop or a rename commits nothing the
/// base's epoch fence could stop.
fn run_turn(shared: &Shared, turn: Turn, run: RunFn) -> Next {
    if shared.epoch > 0 {
        check_taken_over(shared);
        if let Err(e) = shared.check_readable() {
            run(Err(e));
            return Next::Continue;
        }
    }
    let metadata = std::collections::BTreeMap::from([(
        FLUSHED_SEQ_KEY.to_string(),
        shared.last_seq.load(Ordering::SeqCst).to_string(),
    )]);
    let drained = || {
        drain(shared)
            .and_then(|()| shared.check_writable())
            .map(|()| TurnCtx {
                base: &shared.base,
                metadata: metadata.clone(),
            })
    };
    match turn {
        Turn::Drain => {
            run(drained());
            Next::Continue
        }
        Turn::Replace | Turn::Drop => {
            // No flush may land after this write: hold the flusher off.
            let _flushing = lock(&shared.flush_lock);
            let ctx = shared.check_readable().map(|()| TurnCtx {
                base: &shared.base,
                metadata: metadata.clone(),
            });
            if !run(ctx) {
                return Next::Continue;
            }
            supersede(shared, turn)
        }
        Turn::Reshape => {
            if run(drained()) {
                take_new_schema(shared);
            }
            Next::Continue
        }
        Turn::Retire => {
            if !run(drained()) {
                return Next::Continue;
            }
            // Every row is in the base, which has moved: nothing is left here.
            shared.dropped.store(true, Ordering::SeqCst);
            shared.stop.store(true, Ordering::SeqCst);
            shared.notify();
            Next::Stop
        }
    }
}

/// After a schema change: the memtables are empty (drained in this turn,
/// and only this thread fills them); the next one takes the new schema.
fn take_new_schema(shared: &Shared) {
    match shared.base.schema_sync() {
        Ok(schema) => shared.write().active = Memtable::new(Vec::new(), schema),
        Err(e) => shared.poison(format!("cannot read the schema after a schema change: {e}")),
    }
}

/// Discards the memtables after an overwrite (whose commit recorded the
/// WAL position) or a drop.
fn supersede(shared: &Shared, turn: Turn) -> Next {
    let last = shared.last_seq.load(Ordering::SeqCst);
    if turn == Turn::Drop {
        shared.dropped.store(true, Ordering::SeqCst);
        shared.stop.store(true, Ordering::SeqCst);
    }
    let schema = match shared.base.schema_sync() {
        Ok(s) => s,
        Err(_) if turn == Turn::Drop => shared.read().active.schema.clone(),
        Err(e) => {
            shared.poison(format!("cannot read the schema after an overwrite: {e}"));
            shared.read().active.schema.clone()
        }
    };
    {
        let mut o = shared.write();
        o.active = Memtable::new(Vec::new(), schema);
        o.frozen.clear();
    }
    shared.flushed_seq.store(last, Ordering::SeqCst);
    if turn == Turn::Drop {
        shared.notify();
        return Next::Stop;
    }
    if let Err(e) = truncate_wal(shared, last) {
        tracing::warn!(table = %shared.name, error = %e, "could not remove superseded WAL segments");
    }
    shared.notify();
    Next::Continue
}

/// An upsert's batch and keys for the memtable's schema (an overwrite
/// queued ahead of it may have changed the schema since it was checked).
fn fit(active: &Memtable, p: &mut Pending) -> Result<()> {
    if p.batch.schema().fields() == active.schema.fields() {
        return Ok(());
    }
    p.batch = memwal_core::schema::align_batch(&p.batch, &active.schema)?;
    p.keys = KeyEncoder::new(&active.schema, &p.on)?.encode(&p.batch)?;
    Ok(())
}

/// Logs a group of upserts (one append, one sync), then applies them to
/// the active memtable in order and answers each.
fn commit_group(shared: &Shared, segment: &mut WalWriter, group: Vec<Pending>) {
    let accepted = accept(shared, group);
    if accepted.is_empty() {
        return;
    }
    let metrics = &shared.cfg.metrics;
    let started = Instant::now();
    for p in &accepted {
        metrics.upsert_phase(Phase::Queue, started.saturating_duration_since(p.queued));
    }
    let first = shared.last_seq.load(Ordering::SeqCst) + 1;
    let records: Vec<(u64, [&[u8]; 2])> = accepted
        .iter()
        .enumerate()
        .map(|(i, p)| (first + i as u64, [&p.prefix[..], &p.payload[..]]))
        .collect();
    let written = match segment.append_records(&shared.wal, &records) {
        Ok(n) => n,
        Err(e) => {
            // Not durable: nothing is acknowledged, and the table refuses
            // writes from now on rather than guess what the disk kept
            // (fsync failures may drop dirty pages).
            drop(records);
            return refuse_group(shared, accepted, &e);
        }
    };
    metrics.wal_group(
        records.len() as u64,
        written,
        shared.cfg.persist == super::wal::PersistMode::SyncData,
    );
    let logged = Instant::now();
    for _ in &records {
        metrics.upsert_phase(Phase::Wal, logged - started);
    }
    drop(records);
    shared
        .last_seq
        .store(first + accepted.len() as u64 - 1, Ordering::SeqCst);
    apply_group(shared, accepted, first, logged);
}

/// The upserts of `group` the table can take now (each aligned to the
/// active memtable's schema); the others are answered with their error.
fn accept(shared: &Shared, group: Vec<Pending>) -> Vec<Pending> {
    if group.is_empty() {
        return group;
    }
    if let Err(e) = shared.check_writable() {
        for p in group {
            let _ = p.reply.send(Err(clone_err(&e)));
        }
        return Vec::new();
    }
    let mut accepted = Vec::with_capacity(group.len());
    let o = shared.read();
    for mut p in group {
        match fit(&o.active, &mut p) {
            Ok(()) => accepted.push(p),
            Err(e) => {
                let _ = p.reply.send(Err(e));
            }
        }
    }
    accepted
}

/// Applies logged upserts (sequence numbers from `first`, durable since
/// `logged`) to the active memtable and answers each.
fn apply_group(shared: &Shared, accepted: Vec<Pending>, first: u64, logged: Instant) {
    let metrics = &shared.cfg.metrics;
    let version = shared.base.version_sync().unwrap_or(0);
    let mut o = shared.write();
    let locked = Instant::now();
    for _ in &accepted {
        metrics.upsert_phase(Phase::Lock, locked - logged);
    }
    let Overlay { active, frozen } = &mut *o;
    for (i, p) in accepted.into_iter().enumerate() {
        if active.on != p.on {
            // Only when no memtable holds rows (a key change drained them).
            active.on = p.on;
        }
        let seq = first + i as u64;
        let rec = Upsert {
            seq,
            batch: p.batch,
            keys: Some(p.keys),
            supplied: p.supplied,
            bytes: p.payload.len(),
        };
        let applying = Instant::now();
        let r = apply_to(&shared.base, active, frozen, rec);
        metrics.upsert_phase(Phase::Apply, applying.elapsed());
        if let Err(e) = &r {
            // Durable but not applied: memory no longer matches the log.
            shared.poison(format!("applying WAL record {seq} failed: {e}"));
        }
        let _ = p.reply.send(r.map(|(i, u)| Applied::new((i, u, version))));
    }
}

/// A group whose WAL append failed: the table is poisoned and every
/// request of the group answers so.
fn refuse_group(shared: &Shared, accepted: Vec<Pending>, e: &std::io::Error) {
    if super::objwal::is_fenced(e) {
        shared.fence(e.to_string());
    } else {
        shared.poison(format!("WAL append failed: {e}"));
    }
    for p in accepted {
        let _ = p.reply.send(Err(Error::Poisoned {
            table: shared.name.clone(),
            message: format!("WAL append failed: {e}"),
        }));
    }
}

fn clone_err(e: &Error) -> Error {
    match e {
        Error::Poisoned { table, message } => Error::Poisoned {
            table: table.clone(),
            message: message.clone(),
        },
        Error::Unavailable { table, reason } => Error::Unavailable {
            table: table.clone(),
            reason: reason.clone(),
        },
        other => Error::Unavailable {
            table: String::new(),
            reason: other.to_string(),
        },
    }
}

/// Freezes the active memtable when it is due (or `force`d) and the
/// flusher has room; never waits.
fn maybe_freeze(shared: &Shared, force: bool) {
    let cfg = &shared.cfg;
    {
        let o = shared.read();
        let a = &o.active;
        if a.is_empty() || o.frozen.len() >= cfg.max_frozen {
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
    shared.freeze();
}
