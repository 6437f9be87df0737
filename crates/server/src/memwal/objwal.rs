//! A table's WAL on an object store (`--wal s3://...`): one object per
//! group commit, so an acknowledged write survives the loss of the machine.
//!
//! ```text
//! {table}/{first_seq:020}.wal   "MWALSEG2" then the group's records, in the
//!                               segment format of `wal` (checksummed, consecutive)
//! ```
//! An object is put **create-only** (S3 `If-None-Match: *`, GCS and Azure
//! preconditions) and the group is acknowledged only when the put returns.
//! Its name is its first sequence number, so two writers can never both
//! write a record number: the second put answers "exists".
//!
//! **Fencing.** A writer that opens the table (a restart, or a second server
//! taking over from one that died or stalled) reads every object, then puts
//! a *fence*: one record at the next sequence number whose payload claims a
//! new epoch ([`wal::fence_payload`]). A stale writer's next put is at that
//! very number (it had written everything before it, or the new writer read
//! more and fenced later), so it fails, and the stale writer refuses writes
//! from then on. If the fence's put finds the number taken (the old writer
//! got one more group in), the new writer reads again and fences after it.
//! A fence object is never removed: a writer stalled for a week must still
//! find it. Its flushes are fenced apart (`MergeInsertParams::commit_guard`):
//! a flush never lands after a newer writer's flush of later records; and
//! the new writer records its epoch in the base (`replay::recover_and_claim`),
//! after which no commit of the stale writer lands at all.
//!
//! Recovery skips objects wholly merged into the base (at most the fence
//! objects remain of those), then needs the rest consecutive from the base's
//! flushed number on. An object is never torn (a put is all or nothing):
//! any bad record is damage, under the same [`RecoveryMode`] rules as on disk.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use memwal_core::storage::{PutNew, Storage};

use super::wal::{self, Damage, Recovered, RecoveryMode, Stop, MAGIC};

/// Times a fence is put again after finding its number taken.
const FENCE_TRIES: usize = 16;

/// Why a write was refused: another writer took the table over.
#[derive(Debug)]
pub struct Fenced(pub String);

impl std::fmt::Display for Fenced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Fenced {}

/// Whether `e` is a [`Fenced`] refusal.
pub fn is_fenced(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<Fenced>())
}

fn io(e: memwal_core::Error) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// One table's WAL objects.
#[derive(Debug)]
pub struct ObjectWal {
    store: Arc<dyn Storage>,
    dir: String,
    /// Sequence numbers of fence objects seen or written (never removed).
    fences: Mutex<BTreeSet<u64>>,
}

/// What [`ObjectWal::claim`] found and took.
#[derive(Debug)]
pub struct Claimed {
    /// The records, as recovery gives them (fences included).
    pub recovered: Recovered,
    /// The base's flushed sequence number recovery ran against.
    pub flushed: u64,
    /// This writer's epoch.
    pub epoch: u64,
    /// The sequence number of this writer's fence.
    pub fence_seq: u64,
}

impl ObjectWal {
    /// The WAL of the table whose objects live under `dir` in `store`.
    pub fn new(store: Arc<dyn Storage>, dir: String) -> Self {
        Self {
            store,
            dir,
            fences: Mutex::new(BTreeSet::new()),
        }
    }

    fn name(&self, seq: u64) -> String {
        format!("{}/{seq:020}.wal", self.dir)
    }

    /// The objects, ascending by first sequence number.
    fn objects(&self) -> std::io::Result<Vec<(u64, String)>> {
        let mut out: Vec<(u64, String)> = self
            .store
            .list(&self.dir)
            .map_err(io)?
            .into_iter()
            .filter_map(|n| {
                let seq = n.strip_suffix(".wal")?.parse::<u64>().ok()?;
                Some((seq, format!("{}/{n}", self.dir)))
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// Reads every object (see the module doc). `flushed` is the last
    /// sequence number the base holds.
    pub fn recover(&self, mode: RecoveryMode, flushed: u64) -> std::io::Result<Recovered> {
        let objs = self.objects()?;
        let mut rec = Recovered::default();
        let mut expect: Option<u64> = None;
        for (i, (first, path)) in objs.iter().enumerate() {
            let Some(damage) = self.recover_object(&mut rec, &mut expect, *first, path, flushed)?
            else {
                continue;
            };
            match mode {
                RecoveryMode::Strict => rec.damage = Some(damage),
                RecoveryMode::CutAtFirstBad => {
                    tracing::error!(%damage, "object WAL cut at the first bad record (--recovery cut)");
                    for (_, p) in &objs[i..] {
                        self.set_aside(p)?;
                    }
                    rec.cut.push(damage);
                }
            }
            return Ok(rec);
        }
        Ok(rec)
    }

    /// Reads one object into `rec`; returns the damage that stops recovery.
    fn recover_object(
        &self,
        rec: &mut Recovered,
        expect: &mut Option<u64>,
        first: u64,
        path: &str,
        flushed: u64,
    ) -> std::io::Result<Option<Damage>> {
        let damage = |offset: usize, what: String| Damage {
            segment: path.into(),
            offset: offset as u64,
            what,
        };
        // Gone since the listing: removed after a flush that covers it.
        let Some(bytes) = self.store.get(path).map_err(io)? else {
            return Ok(None);
        };
        if bytes.get(..MAGIC.len()) != Some(MAGIC.as_slice()) {
            return Ok(Some(damage(0, "bad WAL object header (magic)".into())));
        }
        let d = wal::decode_records(&bytes[MAGIC.len()..], 2, first);
        if d.stop != Stop::Clean || d.records.is_empty() {
            let what = match d.stop {
                Stop::Bad(w) => w,
                _ => "a short or failing record (an object is written whole)".into(),
            };
            return Ok(Some(damage(MAGIC.len() + d.end, what)));
        }
        let last = first + d.records.len() as u64 - 1;
        for r in &d.records {
            if wal::fence_epoch(&r.payload).is_some() {
                super::lock(&self.fences).insert(r.seq);
            }
        }
        if last <= flushed && expect.is_none() {
            // Wholly in the base (a fence object, or one not yet removed).
            rec.records.extend(d.records);
            return Ok(None);
        }
        match *expect {
            None if first > flushed + 1 => {
                return Ok(Some(damage(0, format!(
                    "the WAL resumes at record {first} but the base table holds records up to {flushed} only: records {} to {} are missing",
                    flushed + 1,
                    first - 1
                ))))
            }
            Some(e) if first != e => {
                return Ok(Some(damage(
                    0,
                    format!("the object starts at record {first} where record {e} was due"),
                )))
            }
            _ => {}
        }
        *expect = Some(last + 1);
        rec.records.extend(d.records);
        Ok(None)
    }

    /// Keeps a damaged object as `*.wal.cut` evidence and removes it.
    fn set_aside(&self, path: &str) -> std::io::Result<()> {
        if let Some(bytes) = self.store.get(path).map_err(io)? {
            self.store.put(&format!("{path}.cut"), &bytes).map_err(io)?;
        }
        self.store.delete(path).map_err(io)
    }

    /// Recovers the WAL and claims it for this writer with a fence (see
    /// the module doc). `flushed` reads the base's latest flushed number:
    /// it is read again when a removal raced the listing.
    pub fn claim(
        &self,
        mode: RecoveryMode,
        flushed: &dyn Fn() -> std::io::Result<u64>,
        owner: &str,
        floor: u64,
    ) -> std::io::Result<Claimed> {
        let mut last_err = String::new();
        for _ in 0..FENCE_TRIES {
            let at = flushed()?;
            let rec = self.recover(mode, at)?;
            if let Some(d) = &rec.damage {
                // Objects removed between reading the base and listing
                // them look like a gap; the base then holds them.
                if flushed()? != at {
                    last_err = d.to_string();
                    continue;
                }
                return Ok(Claimed {
                    recovered: rec,
                    flushed: at,
                    epoch: 0,
                    fence_seq: 0,
                });
            }
            let last = rec.records.last().map_or(at, |r| r.seq.max(at));
            let epoch = rec
                .records
                .iter()
                .filter_map(|r| wal::fence_epoch(&r.payload))
                .max()
                .unwrap_or(0)
                .saturating_add(1)
                .max(floor);
            let fence_seq = last + 1;
            let mut body = MAGIC.to_vec();
            wal::encode_record(fence_seq, &wal::fence_payload(epoch, owner), &mut body);
            match self
                .store
                .put_new(&self.name(fence_seq), &body)
                .map_err(io)?
            {
                PutNew::Created => {
                    super::lock(&self.fences).insert(fence_seq);
                    return Ok(Claimed {
                        recovered: rec,
                        flushed: at,
                        epoch,
                        fence_seq,
                    });
                }
                PutNew::AlreadyExists => {
                    last_err = format!("record {fence_seq} was written meanwhile");
                }
            }
        }
        Err(std::io::Error::other(format!(
            "could not claim the table's WAL after {FENCE_TRIES} tries (another writer keeps writing; {last_err})"
        )))
    }

    /// Puts one group of records (the first numbers the object) and returns
    /// the bytes written; an existing object means another writer took over.
    pub fn append(&self, records: &[(u64, [&[u8]; 2])]) -> std::io::Result<u64> {
        let Some((first, _)) = records.first() else {
            return Ok(0);
        };
        let mut body = MAGIC.to_vec();
        for (seq, parts) in records {
            wal::encode_record(*seq, &parts.concat(), &mut body);
        }
        match self.store.put_new(&self.name(*first), &body).map_err(io)? {
            PutNew::Created => Ok(body.len() as u64),
            PutNew::AlreadyExists => Err(self.fenced(*first)),
        }
    }

    fn fenced(&self, seq: u64) -> std::io::Error {
        std::io::Error::other(Fenced(format!(
            "WAL record {seq} of this table was written by another server, which has taken the table over; this server refuses its writes"
        )))
    }

    /// Whether another writer has written past `last` (a fence or records):
    /// a cheap check an idle writer makes to stop serving stale reads.
    pub fn taken_over(&self, last: u64) -> std::io::Result<bool> {
        self.store.exists(&self.name(last + 1)).map_err(io)
    }

    /// Removes the objects every record of which is at most `flushed`,
    /// except fences and the newest object.
    pub fn truncate(&self, flushed: u64) -> std::io::Result<()> {
        let objs = self.objects()?;
        let fences = super::lock(&self.fences).clone();
        for w in objs.windows(2) {
            let ((first, path), (next_first, _)) = (&w[0], &w[1]);
            if *next_first <= flushed + 1 && !fences.contains(first) {
                self.store.delete(path).map_err(io)?;
            }
        }
        Ok(())
    }

    /// Removes the whole WAL (the table is dropped or renamed).
    pub fn remove_all(&self) -> std::io::Result<()> {
        self.store.delete_dir(&self.dir).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use memwal_core::storage::{FaultyStorage, MemoryStorage, Op};

    use super::*;

    fn store() -> Arc<dyn Storage> {
        Arc::new(MemoryStorage::default())
    }

    fn claim(w: &ObjectWal, flushed: u64) -> Claimed {
        w.claim(RecoveryMode::Strict, &|| Ok(flushed), "test", 0)
            .expect("claim")
    }

    fn put(w: &ObjectWal, seqs: std::ops::RangeInclusive<u64>) -> std::io::Result<u64> {
        let payloads: Vec<Vec<u8>> = seqs.clone().map(|s| s.to_le_bytes().to_vec()).collect();
        let recs: Vec<(u64, [&[u8]; 2])> = seqs
            .zip(&payloads)
            .map(|(s, p)| (s, [p.as_slice(), &[][..]]))
            .collect();
        w.append(&recs)
    }

    /// The data records' numbers (fences left out).
    fn data_seqs(r: &Recovered) -> Vec<u64> {
        r.records
            .iter()
            .filter(|r| wal::fence_epoch(&r.payload).is_none())
            .map(|r| r.seq)
            .collect()
    }

    #[test]
    fn a_second_writer_fences_the_first() {
        let s = store();
        let a = ObjectWal::new(s.clone(), "t".into());
        let ca = claim(&a, 0);
        assert_eq!((ca.epoch, ca.fence_seq), (1, 1));
        put(&a, 2..=4).expect("a writes");
        put(&a, 5..=5).expect("a writes");
        let b = ObjectWal::new(s.clone(), "t".into());
        let cb = claim(&b, 0);
        assert_eq!(data_seqs(&cb.recovered), vec![2, 3, 4, 5]);
        assert_eq!((cb.epoch, cb.fence_seq), (2, 6));
        let e = put(&a, 6..=7).expect_err("a is fenced");
        assert!(is_fenced(&e), "{e}");
        assert!(a.taken_over(5).expect("head"));
        assert!(!b.taken_over(6).expect("head"));
        put(&b, 7..=8).expect("b writes");
        // A third claim sees both writers' records, and the next epoch.
        let c = claim(&ObjectWal::new(s, "t".into()), 0);
        assert_eq!(data_seqs(&c.recovered), vec![2, 3, 4, 5, 7, 8]);
        assert_eq!((c.epoch, c.fence_seq), (3, 9));
    }

    #[test]
    fn a_write_racing_the_fence_moves_the_fence_after_it() {
        let inner = store();
        let a = Arc::new(ObjectWal::new(inner.clone(), "t".into()));
        claim(&a, 0);
        put(&a, 2..=3).expect("a writes");
        // Between B's listing and its fence, A gets one more group in at B's fence number.
        let raced = Arc::new(AtomicBool::new(false));
        let (a2, r2) = (a.clone(), raced.clone());
        let faulty = FaultyStorage::new(inner.clone(), move |op, path| {
            if op == Op::PutNew && path.ends_with("04.wal") && !r2.swap(true, Ordering::SeqCst) {
                put(&a2, 4..=5).expect("a's racing write");
            }
            false
        });
        let b = ObjectWal::new(Arc::new(faulty), "t".into());
        let cb = claim(&b, 0);
        assert!(raced.load(Ordering::SeqCst));
        assert_eq!(
            data_seqs(&cb.recovered),
            vec![2, 3, 4, 5],
            "a's racing write is recovered"
        );
        assert_eq!(cb.fence_seq, 6);
        assert!(is_fenced(&put(&a, 6..=6).expect_err("fenced")));
    }

    #[test]
    fn truncation_keeps_fences_and_the_newest_object() {
        let s = store();
        let a = ObjectWal::new(s.clone(), "t".into());
        claim(&a, 0);
        put(&a, 2..=3).expect("w");
        put(&a, 4..=6).expect("w");
        a.truncate(6).expect("truncate");
        let mut left = s.list("t").expect("list");
        left.sort();
        assert_eq!(
            left,
            vec![format!("{:020}.wal", 1), format!("{:020}.wal", 4)]
        );
        // Reopened against a base holding 1..=6: nothing to replay, the next fence at 7.
        let c = claim(&ObjectWal::new(s, "t".into()), 6);
        assert!(data_seqs(&c.recovered).iter().all(|&q| q <= 6));
        assert_eq!((c.epoch, c.fence_seq), (2, 7));
        assert!(is_fenced(&put(&a, 7..=7).expect_err("fenced")));
    }

    #[test]
    fn a_missing_or_damaged_object_is_damage() {
        let s = store();
        let a = ObjectWal::new(s.clone(), "t".into());
        claim(&a, 0);
        put(&a, 2..=3).expect("w");
        put(&a, 4..=4).expect("w");
        put(&a, 5..=6).expect("w");
        s.delete(&a.name(4)).expect("delete");
        let rec = a.recover(RecoveryMode::Strict, 0).expect("recover");
        let d = rec.damage.expect("a gap is damage");
        assert!(d.what.contains("record 4 was due"), "{d}");
        // A claim on a damaged WAL does not fence (it is not served).
        let c = claim(&ObjectWal::new(s.clone(), "t".into()), 0);
        assert_eq!(c.epoch, 0);
        assert!(c.recovered.damage.is_some());
        // A flipped byte in a record is damage too.
        let mut bytes = s.get(&a.name(2)).expect("get").expect("there").to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        s.put(&a.name(2), &bytes).expect("put");
        let rec = a.recover(RecoveryMode::Strict, 0).expect("recover");
        assert!(rec.damage.is_some());
        assert_eq!(data_seqs(&rec), Vec::<u64>::new());
        // Cut mode sets the bad objects aside and keeps what came before.
        let rec = a.recover(RecoveryMode::CutAtFirstBad, 0).expect("recover");
        assert_eq!(rec.cut.len(), 1);
        assert!(s.exists(&format!("{}.cut", a.name(2))).expect("head"));
        assert!(!s.exists(&a.name(5)).expect("head"));
    }

    #[test]
    fn a_base_ahead_of_the_wal_start_is_fine_but_behind_it_is_a_gap() {
        let s = store();
        let a = ObjectWal::new(s.clone(), "t".into());
        claim(&a, 0);
        put(&a, 2..=3).expect("w");
        put(&a, 4..=5).expect("w");
        s.delete(&a.name(2)).expect("flushed and removed");
        let rec = a.recover(RecoveryMode::Strict, 3).expect("recover");
        assert!(rec.damage.is_none(), "{:?}", rec.damage);
        assert_eq!(data_seqs(&rec), vec![4, 5]);
        let rec = a.recover(RecoveryMode::Strict, 2).expect("recover");
        assert!(
            rec.damage.is_some(),
            "record 3 is neither in the base nor the WAL"
        );
    }
}
