//! The disk's own floor under the rate sweep (`bench/ratesweep.mjs`): the
//! MemWAL's appends with nothing else, one thread appending records of the
//! loadgen's size to 64 MiB segment files and fdatasyncing once per group,
//! no HTTP, no decoding, no table. What the server's latency cannot go
//! below on this disk, measured the way the loadgen measures it:
//!
//! - closed loop (no rate): `conns` records always outstanding, so every
//!   group is `conns` records; each record's latency is its group's time.
//! - open loop (`rate` records/s): record i is due at start + i / rate; the
//!   writer takes every due record (at most `conns`, the loadgen's in-flight
//!   cap) into one group, and each latency counts from its due time.
//!
//! Segments roll as the WAL's do (a new file past 64 MiB, the folder
//! fsynced, segments two behind removed as a flush would). Prints one JSON
//! line with the loadgen's keys.
//!
//! `cargo run --release -p memwal-server --example walfloor -- DIR BYTES [seconds] [rate] [conns]`

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SEGMENT_BYTES: usize = 64 << 20;

/// Append-only segment files in one folder.
struct Segments {
    dir: PathBuf,
    file: File,
    len: usize,
    index: usize,
}

impl Segments {
    fn open(dir: &Path) -> std::io::Result<Self> {
        fs::create_dir_all(dir)?;
        let file = Self::create(dir, 0)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            file,
            len: 0,
            index: 0,
        })
    }

    fn create(dir: &Path, index: usize) -> std::io::Result<File> {
        let f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(dir.join(format!("{index:020}.wal")))?;
        File::open(dir)?.sync_all()?;
        Ok(f)
    }

    /// Appends one group and makes it durable.
    fn append(&mut self, group: &[u8]) -> std::io::Result<()> {
        if self.len >= SEGMENT_BYTES {
            self.index += 1;
            self.file = Self::create(&self.dir, self.index)?;
            self.len = 0;
            if self.index >= 2 {
                let old = self.dir.join(format!("{:020}.wal", self.index - 2));
                fs::remove_file(old)?;
            }
        }
        self.file.write_all(group)?;
        self.file.sync_data()?;
        self.len += group.len();
        Ok(())
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(args.first().cloned().unwrap_or_else(|| "walfloor".into()));
    let bytes: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(104_000);
    let secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10.0);
    let rate: Option<f64> = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .filter(|r| *r > 0.0);
    let conns: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(8).max(1);
    // Bytes that do not compress or dedupe: a xorshift stream.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let record: Vec<u8> = (0..bytes)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let mut segs = Segments::open(&dir)?;
    let dur = Duration::from_secs_f64(secs);
    let (lat, elapsed) = match rate {
        None => closed(&mut segs, &record, conns, dur)?,
        Some(r) => open(&mut segs, &record, conns, dur, r)?,
    };
    fs::remove_dir_all(&dir)?;
    report(lat, elapsed, rate, conns, bytes);
    Ok(())
}

/// Groups of `conns` records back to back for `dur`.
fn closed(
    segs: &mut Segments,
    record: &[u8],
    conns: usize,
    dur: Duration,
) -> std::io::Result<(Vec<f64>, f64)> {
    let group = record.repeat(conns);
    let start = Instant::now();
    let mut lat = Vec::new();
    while start.elapsed() < dur {
        let t = Instant::now();
        segs.append(&group)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        lat.extend(std::iter::repeat_n(ms, conns));
    }
    Ok((lat, start.elapsed().as_secs_f64()))
}

/// Record i due at i / rate; each group takes every due record, `conns` at most.
fn open(
    segs: &mut Segments,
    record: &[u8],
    conns: usize,
    dur: Duration,
    rate: f64,
) -> std::io::Result<(Vec<f64>, f64)> {
    let total = (dur.as_secs_f64() * rate) as usize;
    let due = |i: usize| Duration::from_secs_f64(i as f64 / rate);
    let mut buf = Vec::with_capacity(record.len() * conns);
    let mut lat = Vec::with_capacity(total);
    let start = Instant::now();
    let mut done = 0;
    while done < total {
        let now = start.elapsed();
        if due(done) > now {
            std::thread::sleep(due(done) - now);
            continue;
        }
        let ready = ((now.as_secs_f64() * rate) as usize + 1).min(total);
        let hi = ready.min(done + conns);
        buf.clear();
        for _ in done..hi {
            buf.extend_from_slice(record);
        }
        segs.append(&buf)?;
        let end = start.elapsed();
        lat.extend((done..hi).map(|i| (end - due(i)).as_secs_f64() * 1e3));
        done = hi;
    }
    Ok((lat, start.elapsed().as_secs_f64()))
}

fn report(mut lat: Vec<f64>, elapsed: f64, rate: Option<f64>, conns: usize, bytes: usize) {
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    println!(
        "{{\"mode\": \"{}\", \"rate\": {:.1}, \"connections\": {conns}, \"record_bytes\": {bytes}, \"upserts\": {}, \"upserts_per_s\": {:.1}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"p999_ms\": {:.3}, \"max_ms\": {:.3}}}",
        if rate.is_some() { "open" } else { "closed" },
        rate.unwrap_or(0.0),
        lat.len(),
        lat.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        pct(0.999),
        pct(1.0),
    );
}
