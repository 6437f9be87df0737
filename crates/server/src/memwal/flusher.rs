//! Merging memtables into the base table: the flusher thread takes the
//! oldest frozen memtable, merges it with one native merge insert that
//! records its last sequence number in the same commit, then drops it and
//! the WAL segments it no longer needs. The writer drains the same way, in
//! its turn, before a direct write. A flush that fails
//! `poison_after_failed_flushes` times in a row poisons the table.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memwal_core::{Data, MergeInsertParams, NativeTable};

use super::memtable::Memtable;
use super::{lock, Shared, FLUSHED_SEQ_KEY};
use crate::error::{Error, Result};

/// Least time between two index folds of one table.
const FOLD_EVERY: Duration = Duration::from_secs(1);

pub(crate) fn flusher_loop(shared: Arc<Shared>) {
    // Background work: below the write path when the cores are contended.
    crate::priority::lower(shared.cfg.background_nice);
    let mut last_fold = Instant::now();
    let mut last_cleanup = Instant::now();
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        match flush_front(&shared) {
            Ok(true) => {}
            Ok(false) => {
                if last_fold.elapsed() >= FOLD_EVERY {
                    last_fold = Instant::now();
                    fold_indices(&shared);
                }
                if last_cleanup.elapsed() >= shared.cfg.cleanup_every {
                    last_cleanup = Instant::now();
                    compact(&shared);
                    cleanup(&shared);
                    shared.cfg.metrics.upkeep_ran();
                }
                shared.wait(Duration::from_millis(100))
            }
            Err(_) if lock(&shared.poisoned).is_some() => shared.wait(Duration::from_secs(5)),
            Err(_) => shared.wait(Duration::from_millis(500)),
        }
    }
}

/// Merges the oldest frozen memtable into the base; `Ok(false)` when
/// there was none.
pub(crate) fn flush_front(shared: &Shared) -> Result<bool> {
    let _flushing = lock(&shared.flush_lock);
    let Some(mt) = shared.read().frozen.front().cloned() else {
        return Ok(false);
    };
    let started = Instant::now();
    if let Err(e) = flush_memtable(&shared.name, &shared.base, &mt) {
        shared.cfg.metrics.flush_failed();
        if let Error::Core(memwal_core::Error::Fenced { .. }) = &e {
            shared.fence(e.to_string());
            return Err(e);
        }
        let n = shared.flush_failures.fetch_add(1, Ordering::SeqCst) + 1;
        tracing::error!(table = %shared.name, error = %e, failures = n, "MemWAL flush failed");
        if n >= shared.cfg.poison_after_failed_flushes {
            shared.poison(format!("{n} flushes in a row failed; the last: {e}"));
        }
        return Err(Error::Unavailable {
            table: shared.name.clone(),
            reason: format!("merging MemWAL rows into the table failed: {e}"),
        });
    }
    shared.flush_failures.store(0, Ordering::SeqCst);
    shared
        .cfg
        .metrics
        .flushed(mt.len() as u64, started.elapsed());
    shared.write().frozen.pop_front();
    shared.flushes.fetch_add(1, Ordering::Relaxed);
    shared.flushed_seq.store(mt.max_seq, Ordering::SeqCst);
    // Truncate only as far as the base records (never past a flush that
    // committed nothing).
    let recorded = shared
        .base
        .manifest()
        .map(|m| super::flushed_seq_in(&m))
        .unwrap_or(0);
    if let Err(e) = truncate_wal(shared, recorded.min(mt.max_seq)) {
        tracing::warn!(table = %shared.name, error = %e, "could not remove flushed WAL segments");
    }
    shared.notify();
    Ok(true)
}

/// When idle: adds the base's unindexed rows to its indexes, as LanceDB
/// Cloud does in the background (the official clients cannot call
/// `optimize`; `waitForIndex` waits for this). A failure is logged and
/// tried again later: searches stay exact meanwhile.
fn fold_indices(shared: &Shared) {
    match shared.base.indices_behind_sync() {
        Ok(false) => {}
        Ok(true) => match shared.base.optimize_indices_sync() {
            Ok(Some(v)) => {
                tracing::info!(table = %shared.name, version = v, "added unindexed rows to the indexes")
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(table = %shared.name, error = %e, "could not update the indexes")
            }
        },
        Err(e) => tracing::warn!(table = %shared.name, error = %e, "could not read the manifest"),
    }
}

/// When idle, at most every `cleanup_every`: compacts the base's small and
/// deletion-heavy fragments (`cfg.compaction`), so a stream's one fragment
/// per flush does not pile up. Run after run, each one bin bounded in bytes
/// (`max_bytes_per_run`), until nothing qualifies, two frozen memtables wait
/// or a quarter of the interval is spent: a flush waits for a run or two at
/// most and upkeep takes a bounded share of the machine. In the
/// flusher's turn (no flush runs beside a run) and beside the writer:
/// upserts are acknowledged meanwhile. A failure is logged, counted and
/// tried again later; it never poisons the table.
fn compact(shared: &Shared) {
    let turn = Instant::now();
    while turn.elapsed() < shared.cfg.cleanup_every / 4 && !shared.stop.load(Ordering::SeqCst) {
        let started = Instant::now();
        match shared.base.compact_sync(&shared.cfg.compaction) {
            Ok(s) if s.fragments_removed > 0 => {
                shared.cfg.metrics.compacted(
                    s.fragments_removed,
                    s.fragments_added,
                    started.elapsed(),
                );
                tracing::info!(table = %shared.name, removed = s.fragments_removed, added = s.fragments_added, "compacted fragments");
            }
            Ok(_) => return,
            Err(e) => {
                shared.cfg.metrics.compaction_failed();
                tracing::warn!(table = %shared.name, error = %e, "could not compact");
                return;
            }
        }
        if shared.read().frozen.len() >= 2 {
            return;
        }
    }
}

/// When idle, at most every `cleanup_every`: removes the base's versions
/// older than the retention (the table's `lance.auto_cleanup.older_than`
/// when its config sets one, files no version names then kept 7 days; else
/// the server's) and the files only they name (beside the writer: upserts are never queued behind it; a flush's
/// commit waits at most for the removals). A failure is logged, counted and
/// tried again at the next turn; it never poisons the table.
fn cleanup(shared: &Shared) {
    let started = Instant::now();
    // The table's own retention keeps files no version names for Lance's
    // 7 days (another process's commit may be in flight); the server's is
    // the operator's word. An unreadable one falls back to the server's.
    let own = shared.base.configured_retention().unwrap_or_else(|e| {
        tracing::warn!(table = %shared.name, error = %e, "the table's retention is unreadable; the server's applies");
        None
    });
    let run = match own {
        Some(r) => shared
            .base
            .cleanup_guarded_sync(r, memwal_core::table::config::UNVERIFIED_MIN_AGE),
        None => shared.base.cleanup_sync(shared.cfg.retention, false),
    };
    match run {
        Ok(s) => {
            shared
                .cfg
                .metrics
                .cleaned(s.old_versions_removed, s.bytes_removed, started.elapsed());
            if s.old_versions_removed > 0 {
                tracing::info!(table = %shared.name, versions = s.old_versions_removed, bytes = s.bytes_removed, "removed old versions");
            }
        }
        Err(e) => {
            shared.cfg.metrics.cleanup_failed();
            tracing::warn!(table = %shared.name, error = %e, "could not remove old versions");
        }
    }
}

/// Freezes the active memtable and merges every frozen one into the base
/// (the writer calls this in its turn, so nothing new arrives meanwhile).
pub(crate) fn drain(shared: &Shared) -> Result<()> {
    shared.freeze();
    while flush_front(shared)? {}
    Ok(())
}

/// One native merge insert of a memtable's rows, recording its last
/// sequence number in the same commit.
pub(crate) fn flush_memtable(name: &str, base: &NativeTable, mt: &Memtable) -> Result<()> {
    let mut p = MergeInsertParams::new(mt.on.clone());
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    p.commit_metadata = BTreeMap::from([(FLUSHED_SEQ_KEY.to_string(), mt.max_seq.to_string())]);
    // Never after a newer writer's flush of later records (see `objwal`):
    // flushing records the base already holds again is harmless.
    p.commit_guard = Some((FLUSHED_SEQ_KEY.to_string(), mt.max_seq));
    let p = p.validate()?;
    let rows = mt.rows()?;
    let started = Instant::now();
    let r = base.merge_insert_sync(&p, Data::new(mt.schema.clone(), vec![rows]))?;
    tracing::info!(
        table = %name, rows = mt.len(), seq = mt.max_seq, version = r.version,
        ms = started.elapsed().as_millis() as u64, "flushed memtable into the base table"
    );
    Ok(())
}

/// Removes the segments (or objects) every record of which is at most `flushed`.
pub(crate) fn truncate_wal(shared: &Shared, flushed: u64) -> std::io::Result<()> {
    shared.wal.truncate(flushed)
}
