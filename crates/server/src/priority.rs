//! Thread priorities: the write path (HTTP workers, the WAL writers) runs
//! at the process's priority; queries (`reads`) and background work (each
//! table's flusher: flushes, compaction, index folds, cleanup) can run a
//! Linux nice increment below it, so when the cores are contended the
//! scheduler serves acknowledged upserts first, and idle cores still go to
//! the rest. A niced thread cannot be made un-niced again without a
//! privilege, so only threads of their own are niced (never tokio's pools).

/// Lowers the calling thread's priority by `nice` (Linux: nice is per
/// thread; elsewhere nothing). A refusal is logged, never fatal.
pub fn lower(nice: i32) {
    #[cfg(target_os = "linux")]
    if nice > 0 {
        // SAFETY: gettid, getpriority and setpriority take plain integers
        // and touch no memory of ours. Linux's nice is per thread (the
        // `who` of PRIO_PROCESS may be a thread id), inherited by the
        // threads this one starts.
        #[allow(unsafe_code)]
        let r = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            libc::setpriority(libc::PRIO_PROCESS, tid, (now + nice).min(19))
        };
        if r != 0 {
            tracing::warn!(nice, error = %std::io::Error::last_os_error(), "could not lower a thread's priority");
        }
    }
}

/// Whether per-thread priorities are applied here (Linux); elsewhere the
/// server says at start that a nice it was given is not applied.
pub const SUPPORTED: bool = cfg!(target_os = "linux");

/// The calling thread's nice value, from `/proc/thread-self/stat` (the
/// 19th field; the command name before it may hold spaces).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn nice_here() -> i32 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("stat");
    let after = stat.rsplit_once(')').expect("comm").1;
    after
        .split_whitespace()
        .nth(16)
        .expect("nice")
        .parse()
        .expect("int")
}
