//! `memwal-server --data DIR [--host 127.0.0.1] [--port N] [--api-key K]
//! [--max-body-bytes N] [--flush-rows N] [--flush-interval-ms N] [--flush-bytes N]
//! [--persist sync|buffer] [--recovery strict|cut]`
//! Prints `memwal-server listening on http://HOST:PORT` once it accepts.

use std::time::Duration;

use memwal_server::{start, ServerConfig};

fn usage() -> ! {
    eprintln!(
        "usage: memwal-server --data DIR [--host 127.0.0.1] [--port 0] [--api-key KEY] \
         [--max-body-bytes N] [--flush-rows N] [--flush-interval-ms N] [--flush-bytes N] [--body-timeout-ms N]\n\
         [--persist sync|buffer] [--recovery strict|cut]\n\
         --persist buffer: acknowledge before the WAL is fsync'ed (measurements only: a crash loses writes)\n\
         --recovery strict (default): a damaged WAL (anything but a torn tail of its last\n\
           segment, or a gap in sequence numbers) fails its table with 503 and keeps the files;\n\
         --recovery cut: cut each damaged WAL at its first bad record (later records are lost;\n\
           later segments are renamed *.wal.cut)\n\
         log level: MEMWAL_LOG (e.g. info, debug; default info)"
    );
    std::process::exit(2)
}

fn parse_args() -> ServerConfig {
    let mut args = std::env::args().skip(1);
    let mut cfg = ServerConfig::new("");
    let mut data = None;
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--data" => data = Some(val()),
            "--host" => cfg.host = val(),
            "--port" => cfg.port = val().parse().unwrap_or_else(|_| usage()),
            "--api-key" => cfg.api_key = Some(val()),
            "--max-body-bytes" => cfg.max_body_bytes = val().parse().unwrap_or_else(|_| usage()),
            "--flush-rows" => cfg.memwal.flush_rows = val().parse().unwrap_or_else(|_| usage()),
            "--flush-interval-ms" => {
                cfg.memwal.flush_interval =
                    Duration::from_millis(val().parse().unwrap_or_else(|_| usage()))
            }
            "--body-timeout-ms" => {
                cfg.body_timeout = Duration::from_millis(val().parse().unwrap_or_else(|_| usage()))
            }
            "--flush-bytes" => cfg.memwal.flush_bytes = val().parse().unwrap_or_else(|_| usage()),
            "--persist" => {
                cfg.memwal.persist = match val().as_str() {
                    "sync" => memwal_server::memwal::PersistMode::SyncData,
                    "buffer" => memwal_server::memwal::PersistMode::Buffer,
                    _ => usage(),
                }
            }
            "--recovery" => {
                cfg.memwal.recovery = match val().as_str() {
                    "strict" => memwal_server::RecoveryMode::Strict,
                    "cut" => memwal_server::RecoveryMode::CutAtFirstBad,
                    _ => usage(),
                }
            }
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    cfg.data_dir = data.unwrap_or_else(|| usage()).into();
    cfg
}

#[tokio::main]
async fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEMWAL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let cfg = parse_args();
    let handle = match start(cfg).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("memwal-server: {e}");
            std::process::exit(1);
        }
    };
    println!("memwal-server listening on {}", handle.url());
    let _ = tokio::signal::ctrl_c().await;
    handle.close().await;
}
