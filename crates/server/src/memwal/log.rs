//! Where a table's WAL lives and how the writer appends to it: segment files
//! in a local folder (`wal`, the default) or one object per group commit on
//! an object store (`objwal`). The rest of the MemWAL sees only [`Wal`] and
//! [`WalWriter`].

use std::path::PathBuf;
use std::sync::Arc;

use memwal_core::storage::Storage;

use super::objwal::ObjectWal;
use super::wal::{self, PersistMode, Recovered, RecoveryMode, Segment, WalIo};

/// A table's WAL.
#[derive(Debug)]
pub enum Wal {
    /// Segment files in a local folder, opened through `io`.
    Local {
        /// The folder.
        dir: PathBuf,
        /// How segment files are opened (tests inject faults here).
        io: Arc<dyn WalIo>,
    },
    /// Objects on an object store.
    Object(ObjectWal),
}

/// What opening a WAL found.
pub struct Opened {
    /// Every record recovered.
    pub recovered: Recovered,
    /// The base's flushed sequence number the records were read against.
    pub flushed: u64,
    /// The writer's first sequence number after the records (and fence).
    pub next_seq: u64,
    /// The writer's epoch (0 on a local disk: one process owns it).
    pub epoch: u64,
}

impl Wal {
    /// The WAL of table `name` on `store` (a prefix of one bucket).
    pub fn object(store: Arc<dyn Storage>, name: &str) -> Self {
        Wal::Object(ObjectWal::new(store, name.to_string()))
    }

    /// Recovers the records (and, on an object store, claims the WAL with a
    /// fence). `flushed` reads the base's latest flushed sequence number.
    pub fn open(
        &self,
        mode: RecoveryMode,
        flushed: &dyn Fn() -> std::io::Result<u64>,
        owner: &str,
        floor: u64,
    ) -> std::io::Result<Opened> {
        match self {
            Wal::Local { dir, .. } => {
                let at = flushed()?;
                let recovered = wal::recover(dir, mode, at)?;
                let last = recovered.records.last().map_or(at, |r| r.seq.max(at));
                Ok(Opened {
                    recovered,
                    flushed: at,
                    next_seq: last + 1,
                    epoch: 0,
                })
            }
            Wal::Object(o) => {
                let c = o.claim(mode, flushed, owner, floor)?;
                let last = c
                    .recovered
                    .records
                    .last()
                    .map_or(c.flushed, |r| r.seq.max(c.flushed));
                Ok(Opened {
                    next_seq: last.max(c.fence_seq) + 1,
                    recovered: c.recovered,
                    flushed: c.flushed,
                    epoch: c.epoch,
                })
            }
        }
    }

    /// A writer appending from `first_seq` on.
    pub fn writer(&self, first_seq: u64, persist: PersistMode) -> std::io::Result<WalWriter> {
        Ok(match self {
            Wal::Local { dir, io } => {
                WalWriter::Local(Segment::create(io.as_ref(), dir, first_seq, persist)?)
            }
            Wal::Object(_) => WalWriter::Object,
        })
    }

    /// Removes what every record of which the base holds (`flushed`).
    pub fn truncate(&self, flushed: u64) -> std::io::Result<()> {
        match self {
            Wal::Local { dir, .. } => {
                let segs = wal::segments(dir)?;
                for w in segs.windows(2) {
                    let (_, path) = &w[0];
                    let (next_first, _) = w[1];
                    if next_first <= flushed + 1 {
                        std::fs::remove_file(path)?;
                    }
                }
                Ok(())
            }
            Wal::Object(o) => o.truncate(flushed),
        }
    }

    /// Removes the whole WAL.
    pub fn remove_all(&self) -> std::io::Result<()> {
        match self {
            Wal::Local { dir, .. } => match std::fs::remove_dir_all(dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            Wal::Object(o) => o.remove_all(),
        }
    }

    /// Bytes held on local disk (for `/health`; 0 on an object store).
    pub fn local_bytes(&self) -> u64 {
        match self {
            Wal::Local { dir, .. } => wal::segments(dir)
                .unwrap_or_default()
                .iter()
                .map(|(_, p)| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
                .sum(),
            Wal::Object(_) => 0,
        }
    }

    /// Whether another writer has written past `last` (object stores only).
    pub fn taken_over(&self, last: u64) -> std::io::Result<bool> {
        match self {
            Wal::Local { .. } => Ok(false),
            Wal::Object(o) => o.taken_over(last),
        }
    }
}

/// The writer's end of a WAL.
#[derive(Debug)]
pub enum WalWriter {
    /// The open local segment.
    Local(Segment),
    /// Objects: each group is its own object (see `objwal`).
    Object,
}

impl WalWriter {
    /// Makes a group of records durable; returns the bytes written.
    pub fn append_records(
        &mut self,
        wal: &Wal,
        records: &[(u64, [&[u8]; 2])],
    ) -> std::io::Result<u64> {
        match (self, wal) {
            (WalWriter::Local(s), _) => s.append_records(records),
            (WalWriter::Object, Wal::Object(o)) => o.append(records),
            (WalWriter::Object, Wal::Local { .. }) => Err(std::io::Error::other(
                "internal: an object WAL writer on a local WAL",
            )),
        }
    }

    /// Starts a new local segment past [`super::SEGMENT_BYTES`].
    pub fn roll_if_full(
        &mut self,
        wal: &Wal,
        next_seq: u64,
        persist: PersistMode,
    ) -> std::io::Result<()> {
        if let (WalWriter::Local(s), Wal::Local { dir, io }) = (&*self, wal) {
            if s.len >= super::SEGMENT_BYTES {
                *self = WalWriter::Local(Segment::create(io.as_ref(), dir, next_seq, persist)?);
            }
        }
        Ok(())
    }
}
