//! Network faults between the engine and a real S3 server: every request
//! goes through a TCP proxy in front of moto (one connection per request:
//! `pool_max_idle_per_host = 0`) that cuts some requests in the middle of
//! their upload and holds back the answer of others past the client's
//! timeout (the request itself reaches the store: its answer is lost). The
//! engine retries; every acknowledged write is there exactly once (one
//! version per write), and a failed one changed nothing.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use memwal_core::manifest::list_versions;
use memwal_core::storage::open_uri;
use memwal_core::{AddMode, CreateOptions, NativeDatabase};

use crate::support::{checked, dump, people, s3_endpoint, s3_options, s3_uri};

/// What the proxy does to one connection.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    Pass,
    /// Close both sides 16 bytes into the request's body (or at the end of
    /// its headers when it has none): the store never sees it whole.
    Cut,
    /// Forward the request, hold its answer back for `STALL`.
    Stall,
}

const STALL: Duration = Duration::from_millis(1500);

/// A proxy to `upstream` whose n-th connection gets `plan(n)`.
struct Proxy {
    addr: String,
    stop: Arc<AtomicBool>,
    faults: Arc<[AtomicUsize; 2]>,
}

impl Proxy {
    fn start(upstream: String, plan: fn(usize) -> Fault) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = format!("http://{}", listener.local_addr().expect("addr"));
        let stop = Arc::new(AtomicBool::new(false));
        let faults: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let (s, f) = (stop.clone(), faults.clone());
        std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = conn else { continue };
                let fault = plan(n);
                match fault {
                    Fault::Cut => f[0].fetch_add(1, Ordering::SeqCst),
                    Fault::Stall => f[1].fetch_add(1, Ordering::SeqCst),
                    Fault::Pass => 0,
                };
                let up = upstream.clone();
                std::thread::spawn(move || relay(client, &up, fault));
            }
        });
        Self { addr, stop, faults }
    }

    fn faults(&self) -> (usize, usize) {
        (
            self.faults[0].load(Ordering::SeqCst),
            self.faults[1].load(Ordering::SeqCst),
        )
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr.trim_start_matches("http://"));
    }
}

fn relay(client: TcpStream, upstream: &str, fault: Fault) {
    let Ok(server) = TcpStream::connect(upstream) else {
        return;
    };
    let (mut c_in, mut s_out) = (
        client.try_clone().expect("clone"),
        server.try_clone().expect("clone"),
    );
    let (c2, s2) = (
        client.try_clone().expect("clone"),
        server.try_clone().expect("clone"),
    );
    let up = std::thread::spawn(move || {
        let mut seen: Vec<u8> = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = c_in.read(&mut buf) {
            let mut chunk = &buf[..n];
            if fault == Fault::Cut {
                let before = seen.len();
                seen.extend_from_slice(chunk);
                if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                    let cut_at = (end + 4 + 16).min(seen.len());
                    chunk = &chunk[..cut_at.saturating_sub(before).min(chunk.len())];
                    let _ = s_out.write_all(chunk);
                    let _ = c2.shutdown(Shutdown::Both);
                    let _ = s2.shutdown(Shutdown::Both);
                    return;
                }
            }
            if s_out.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = s_out.shutdown(Shutdown::Write);
    });
    let (mut s_in, mut c_out) = (server, client);
    if fault == Fault::Stall {
        std::thread::sleep(STALL);
    }
    let _ = std::io::copy(&mut s_in, &mut c_out);
    let _ = c_out.shutdown(Shutdown::Both);
    let _ = up.join();
}

fn through(proxy: &Proxy) -> memwal_core::storage::StorageOptions {
    let mut o = s3_options();
    o.insert("aws_endpoint".into(), proxy.addr.clone());
    o.insert("timeout".into(), "700ms".into());
    o.insert("pool_max_idle_per_host".into(), "0".into());
    o.insert("client_max_retries".into(), "12".into());
    o
}

/// Writes through a proxy that cuts one connection in 6 and stalls one in
/// 9: the table then holds exactly the acknowledged writes, one version
/// each, read through a clean connection.
#[test]
fn cut_uploads_and_lost_answers_lose_and_double_nothing() {
    let upstream = s3_endpoint().trim_start_matches("http://").to_string();
    let proxy = Proxy::start(upstream, |n| match n % 18 {
        4 | 11 | 16 => Fault::Cut,
        7 | 14 => Fault::Stall,
        _ => Fault::Pass,
    });
    let uri = s3_uri("chaos");
    let db = NativeDatabase::open_with(&uri, &through(&proxy)).expect("open through the proxy");
    let t = db
        .create_table_sync("t", people(&[(0, 0)]), CreateOptions::default())
        .expect("create");
    let mut want: std::collections::BTreeMap<i64, i64> = [(0, 0)].into();
    let mut acknowledged = 1u64; // the create
    let mut p = memwal_core::MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    for i in 1..=24i64 {
        let r = match i % 4 {
            0 => t.delete_sync(&format!("id = {}", i - 2)).map(|_| {
                want.remove(&(i - 2));
            }),
            1 => t.add_sync(people(&[(i, i)]), AddMode::Append).map(|_| {
                want.insert(i, i);
            }),
            _ => t
                .merge_insert_sync(&checked(&p), people(&[(i, i), (i - 1, 100 + i)]))
                .map(|_| {
                    want.insert(i, i);
                    want.insert(i - 1, 100 + i);
                }),
        };
        match r {
            Ok(()) => acknowledged += 1,
            Err(e) => panic!("write {i} failed through faults the client retries: {e}"),
        }
    }
    let (cuts, stalls) = proxy.faults();
    assert!(
        cuts >= 5 && stalls >= 3,
        "faults injected: {cuts} cuts, {stalls} stalls"
    );
    let clean = NativeDatabase::open_with(&uri, &s3_options()).expect("clean");
    let got: std::collections::BTreeMap<i64, i64> = dump(&clean.open_table_sync("t").expect("t"))
        .into_iter()
        .map(|r| (r.0, r.1.expect("age")))
        .collect();
    assert_eq!(got, want, "the acknowledged writes, each once");
    let st = open_uri(&uri, &s3_options()).expect("storage");
    assert_eq!(
        list_versions(st.as_ref(), "t.lance").expect("versions"),
        (1..=acknowledged).collect::<Vec<_>>(),
        "one version per acknowledged write"
    );
}
