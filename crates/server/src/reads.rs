//! The threads queries run on: a fixed pool whose threads (and the worker
//! threads a search spawns from them, which inherit it) run at a lower
//! scheduling priority than the write path (`--read-nice`, a Linux nice
//! increment), so a search that takes both cores for 100 ms delays the
//! MemWAL's acknowledged upserts (the HTTP workers, the WAL writer) by
//! little: the scheduler hands the cores to the writers first when both
//! want them. Reads still get every idle cycle. A niced thread cannot be
//! made un-niced again (that needs a privilege), hence threads of their own
//! rather than tokio's blocking pool, which the writes share.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A pool of query threads at one nice increment.
#[derive(Debug)]
pub struct ReadPool {
    tx: Sender<Job>,
    nice: i32,
}

impl ReadPool {
    /// `threads` threads (at least one), each niced by `nice` (0: none).
    /// They end when the pool is dropped (after the job they run).
    pub fn new(threads: usize, nice: i32) -> std::io::Result<Arc<Self>> {
        #[cfg(not(target_os = "linux"))]
        if nice > 0 {
            tracing::warn!(
                nice,
                "query threads run at the write path's priority: a per-thread nice is Linux only"
            );
        }
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("memwal-read-{i}"))
                .spawn(move || {
                    crate::priority::lower(nice);
                    loop {
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                })?;
        }
        Ok(Arc::new(Self { tx, nice }))
    }

    /// The nice increment its threads run at.
    pub fn nice(&self) -> i32 {
        self.nice
    }

    /// Runs `f` on a pool thread; a panic in it is an internal error.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (done, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .unwrap_or_else(|_| Err(internal("a query thread panicked")));
            let _ = done.send(out);
        });
        if self.tx.send(job).is_err() {
            return Err(internal("the query threads are gone"));
        }
        answer
            .await
            .unwrap_or_else(|_| Err(internal("a query thread dropped its answer")))
    }
}

fn internal(m: &str) -> Error {
    Error::Core(memwal_core::Error::internal(m))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    use crate::priority::nice_here;

    /// A job's answer comes back; a panicking job is an error, and the
    /// pool goes on; the job runs niced, and so do the threads it starts
    /// (a search's workers).
    #[tokio::test]
    async fn jobs_answer_panics_are_errors_and_priority_is_inherited() {
        let base = nice_here();
        let pool = ReadPool::new(2, 5).expect("pool");
        assert_eq!(pool.run(|| Ok(41 + 1)).await.expect("job"), 42);
        let e = pool
            .run(|| -> Result<()> { panic!("boom") })
            .await
            .expect_err("a panic");
        assert!(e.to_string().contains("panicked"), "{e}");
        let (own, child) = pool
            .run(|| {
                let child = std::thread::scope(|s| s.spawn(nice_here).join());
                Ok((nice_here(), child.expect("join")))
            })
            .await
            .expect("niced job");
        assert_eq!((own, child), ((base + 5).min(19), (base + 5).min(19)));
        let same = ReadPool::new(1, 0).expect("pool");
        assert_eq!(same.run(|| Ok(nice_here())).await.expect("job"), base);
    }
}
