//! [`Deadline`]: the clock a write or a merge checks between its steps so
//! that a `timeout` gives up before anything is committed.

use std::time::Duration;

use crate::error::Result;

/// A time limit started when a write begins; `None` never expires.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    start: std::time::Instant,
    limit: Option<Duration>,
}

impl Deadline {
    /// Starts a clock with an optional limit.
    pub fn new(limit: Option<Duration>) -> Self {
        Self {
            start: std::time::Instant::now(),
            limit,
        }
    }
    /// `Err(Timeout)` once the limit has passed.
    pub fn check(&self) -> Result<()> {
        if let Some(limit) = self.limit {
            let el = self.start.elapsed();
            if el > limit {
                return Err(crate::Error::Timeout {
                    elapsed_ms: el.as_millis() as u64,
                });
            }
        }
        Ok(())
    }
}
