//! SIGKILL the real binary while clients stream MemWAL upserts; after a
//! restart every acknowledged row is there with its latest value.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::*;

/// Where a spawned server keeps its tables and WALs.
#[derive(Clone, Copy)]
pub enum Place<'a> {
    /// Both in the folder.
    Local,
    /// The tables on an S3 prefix of the test server, the WALs in the folder.
    S3Data(&'a str),
    /// The tables and the WALs on S3 prefixes (the folder is unused).
    S3All(&'a str, &'a str),
}

/// Starts the real binary; answers it and its URL.
pub fn spawn_at(dir: &std::path::Path, place: Place<'_>) -> (Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memwal-server"));
    match place {
        Place::Local => cmd.args(["--data", dir.to_str().expect("p")]),
        Place::S3Data(uri) => cmd
            .args(["--data", uri, "--wal", dir.to_str().expect("p")])
            .envs(s3_env()),
        Place::S3All(data, wal) => cmd.args(["--data", data, "--wal", wal]).envs(s3_env()),
    };
    let mut child = cmd
        .args([
            "--port",
            "0",
            "--api-key",
            "k",
            "--flush-rows",
            "500",
            "--flush-interval-ms",
            "100",
        ])
        .env("MEMWAL_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn memwal-server");
    let url = url_of(&mut child);
    (child, url)
}

/// The URL a started binary prints on its first line of stdout.
fn url_of(child: &mut Child) -> String {
    let out = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).expect("line");
    let url = line.trim().rsplit(' ').next().expect("url").to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_row_survives_sigkill() {
    sigkill_rounds(Place::Local).await;
}

/// The same with the tables on S3 (moto) and the WAL on local disk: a flush that a kill cuts
/// short is replayed from the WAL into the bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_row_survives_sigkill_with_tables_on_s3() {
    sigkill_rounds(Place::S3Data(&s3_uri("sigkill"))).await;
}

/// The same with the WAL on S3 too: each restart replays the objects and fences its
/// predecessor's epoch before serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_row_survives_sigkill_with_the_wal_on_s3() {
    let (data, wal) = (s3_uri("sigkill-d"), s3_uri("sigkill-w"));
    sigkill_rounds(Place::S3All(&data, &wal)).await;
}

async fn sigkill_rounds(place: Place<'_>) {
    let dir = tempfile::tempdir().expect("tmp");
    let spawn = |d: &std::path::Path| spawn_at(d, place);
    let (mut child, mut url) = spawn(dir.path());
    Client::new(&url).create("t", &[]).await;
    // key -> (last acknowledged value, value possibly in flight)
    let acked: Arc<Mutex<HashMap<i64, (i64, i64)>>> = Arc::default();
    for round in 0..3i64 {
        let mut tasks = Vec::new();
        let acks = Arc::new(AtomicUsize::new(0));
        for w in 0..4i64 {
            let (url, acked, acks) = (url.clone(), acked.clone(), acks.clone());
            tasks.push(tokio::spawn(async move {
                let c = Client::new(&url);
                for r in 0..1000i64 {
                    let val = round * 100_000 + r;
                    let rows: Vec<(i64, i64)> = (0..20).map(|i| (w * 10_000 + (r * 20 + i) % 3000, val)).collect();
                    let mut rows = rows;
                    rows.sort();
                    rows.dedup_by_key(|x| x.0);
                    {
                        let mut a = acked.lock().expect("lock");
                        for (k, v) in &rows {
                            let e = a.entry(*k).or_insert((-1, -1));
                            e.1 = *v;
                        }
                    }
                    let path = "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true";
                    let sent = c
                        .http
                        .post(format!("{url}{path}"))
                        .header("x-api-key", "k")
                        .header("content-type", "application/vnd.apache.arrow.stream")
                        .header("x-lancedb-mem-wal-enabled", "true")
                        .body(ipc_rows(&rows))
                        .send()
                        .await;
                    match sent {
                        Ok(resp) if resp.status().is_success() => {
                            acks.fetch_add(1, Ordering::SeqCst);
                            let mut a = acked.lock().expect("lock");
                            for (k, v) in &rows {
                                if let Some(e) = a.get_mut(k) {
                                    e.0 = *v;
                                }
                            }
                        }
                        _ => return, // the server is gone
                    }
                }
            }));
        }
        // Kill at a varying point into the stream: after a number of
        // acknowledgements that grows by round (however slow the machine),
        // then a little later still, mid-stream.
        let want = 5 + 40 * round as usize;
        let start = std::time::Instant::now();
        while acks.load(Ordering::SeqCst) < want {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "round {round}: only {} of {want} writes acknowledged in 60 s",
                acks.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(20 * round as u64)).await;
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        for t in tasks {
            t.await.expect("join");
        }
        let (c2, url2) = spawn(dir.path());
        child = c2;
        let c = Client::new(&url2);
        let rows: HashMap<i64, i64> = c.rows("t", None).await.into_iter().collect();
        let a = acked.lock().expect("lock").clone();
        let mut checked = 0;
        for (k, (ack, inflight)) in a.iter() {
            if *ack < 0 {
                continue;
            }
            let got = rows.get(k).copied();
            assert!(
                got == Some(*ack) || got == Some(*inflight),
                "round {round}: key {k} acked {ack} (in flight {inflight}) but found {got:?}"
            );
            checked += 1;
        }
        assert!(
            checked > 0,
            "round {round}: no write was acknowledged before the kill"
        );
        assert_eq!(c.count("t", None).await, rows.len() as u64);
        eprintln!("round {round}: {checked} acknowledged keys verified after SIGKILL");
        url = url2;
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The binary as operators run it: every option from the environment (the
/// key never on the command line), and SIGTERM merges the buffered rows into
/// the table before exiting, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_flushes_and_options_come_from_the_environment() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut child = Command::new(env!("CARGO_BIN_EXE_memwal-server"))
        .env("MEMWAL_DATA", dir.path())
        .env("MEMWAL_API_KEY", "k")
        .env("MEMWAL_FLUSH_INTERVAL_MS", "3600000")
        .env("MEMWAL_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn memwal-server");
    let url = url_of(&mut child);
    let c = Client::new(&url);
    c.create("t", &[(0, 0)]).await;
    for i in 1..=20 {
        c.upsert("t", &[(i, i)], true).await;
    }
    let mut wrong = Client::new(&url);
    wrong.key = "nope".into();
    let (s, _) = wrong
        .post(
            "/v1/table/t/count_rows/",
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(s, 401, "the key came from MEMWAL_API_KEY");
    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let out = child.wait_with_output().expect("exit");
    assert!(out.status.success(), "{:?}", out.status);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("1 table(s) flushed"), "{err}");
    // The rows are in the table itself now, not only in the WAL.
    let db = memwal_core::NativeDatabase::open(dir.path().to_str().expect("p")).expect("db");
    let t = db.open_table_sync("t").expect("table");
    assert_eq!(t.count_rows_sync(None).expect("count"), 21);
}

/// Each thread of process `pid`: its name and nice value (the 19th field
/// of its stat).
fn thread_nices(pid: u32) -> Vec<(String, i32)> {
    let mut threads = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks") {
        // A thread may end between the listing and the read.
        let Ok(stat) = std::fs::read_to_string(t.expect("task").path().join("stat")) else {
            continue;
        };
        let (head, rest) = stat.rsplit_once(')').expect("comm");
        let name = head.split_once('(').expect("(").1.to_string();
        let nice: i32 = rest
            .split_whitespace()
            .nth(16)
            .expect("nice")
            .parse()
            .expect("int");
        threads.push((name, nice));
    }
    threads
}

/// The binary's query threads run `--read-nice` below the rest and each
/// table's flusher `--background-nice` below (the threads answering HTTP
/// and writing the WAL keep the process's priority); a value out of 0-19
/// is refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_and_background_threads_run_below_the_write_path() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut child = Command::new(env!("CARGO_BIN_EXE_memwal-server"))
        .args(["--data", dir.path().to_str().expect("p"), "--port", "0"])
        .args(["--read-nice", "7", "--background-nice", "3"])
        .env("MEMWAL_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn memwal-server");
    let url = url_of(&mut child);
    // A table and a MemWAL upsert, for its writer and flusher threads.
    let c = Client::new(&url);
    c.create("t", &[(0, 0)]).await;
    c.upsert("t", &[(1, 1)], true).await;
    // A new thread names and lowers itself once it first runs (until then
    // it shows its parent's name and nice): on a busy machine that can take
    // a while, so look until every kind is there as wanted, 10 s at most.
    let pid = child.id();
    let mut tries = 0;
    let (threads, want) = loop {
        let threads = thread_nices(pid);
        let base = threads
            .iter()
            .find(|(n, _)| n == "memwal-server")
            .expect("main")
            .1;
        let want = move |name: &str| {
            if name.starts_with("memwal-read") {
                (base + 7).min(19)
            } else if name.starts_with("memwal-flusher") {
                (base + 3).min(19)
            } else {
                base
            }
        };
        let kinds = ["memwal-read", "memwal-flusher", "memwal-writer", "tokio"];
        let all = kinds
            .iter()
            .all(|k| threads.iter().any(|(n, _)| n.starts_with(k)));
        tries += 1;
        if (all && threads.iter().all(|(n, nice)| *nice == want(n))) || tries == 100 {
            break (threads, want);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = child.kill();
    let _ = child.wait();
    for kind in ["memwal-read", "memwal-flusher", "memwal-writer", "tokio"] {
        assert!(
            threads.iter().any(|(n, _)| n.starts_with(kind)),
            "no {kind}: {threads:?}"
        );
    }
    assert!(
        threads.iter().all(|(n, nice)| *nice == want(n)),
        "{threads:?}"
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_memwal-server"))
        .args([
            "--data",
            dir.path().to_str().expect("p"),
            "--read-nice",
            "20",
        ])
        .output()
        .expect("run");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--read-nice"));
}

/// What the binary refuses before it starts, each by name: an object store without a WAL
/// location, a WAL at the tables' own location, a secret on the command line, an unknown option key.
#[test]
fn object_store_options_are_checked_at_start() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().to_str().expect("p");
    let uri = s3_uri("refused");
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["--data", &uri], "give --wal"),
        (vec!["--data", &uri, "--wal", &uri], "a prefix of their own"),
        (
            vec![
                "--data",
                &uri,
                "--wal",
                d,
                "--storage-option",
                "aws_secret_access_key=x",
            ],
            "MEMWAL_STORAGE_AWS_SECRET_ACCESS_KEY",
        ),
        (
            vec![
                "--data",
                &uri,
                "--wal",
                d,
                "--storage-option",
                "aws_regoin=x",
            ],
            "aws_regoin",
        ),
    ];
    for (args, want) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_memwal-server"))
            .args(&args)
            .envs(s3_env())
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
