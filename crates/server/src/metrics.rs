//! What `GET /metrics` reports, in the OpenMetrics text format Prometheus
//! scrapes (through the `prometheus-client` crate). Counters are updated
//! where things happen: HTTP requests by the router's middleware, WAL group
//! commits by the table writers, flushes by the flushers; gauges (memtable
//! rows, poisoned tables, ...) are read from the open tables at each scrape.
//! One [`Metrics`] per server, shared through [`crate::MemWalConfig`].

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Figures for `/health`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Health {
    pub memtable_rows: u64,
    pub frozen_memtables: u64,
    pub wal_bytes: u64,
    pub last_flushed_seq: u64,
    pub last_seq: u64,
    pub flushes: u64,
    /// Why writes are refused (a failed fsync, a flush that keeps failing).
    pub poisoned: Option<String>,
    /// Why the table is not served at all (a damaged WAL found at open).
    pub failed: Option<String>,
}

/// The content type of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The route label of a request no route matched.
pub const UNMATCHED_ROUTE: &str = "unmatched";

/// One request: its route template (never the table name, so the label
/// set stays small), method and status.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: &'static str,
    status: u16,
}

/// A route and method, for latency.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
    method: &'static str,
}

/// One phase of an upsert on the server (see [`Phase`]).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: &'static str,
}

/// Where a MemWAL upsert's time goes on the server, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading the request body off the connection (every `merge_insert`
    /// request: the route is known before the body is read).
    Body,
    /// From the handler's start until the upsert is queued: decoding the
    /// body, aligning it to the schema, encoding and checking its keys.
    Prep,
    /// In the writer's queue, behind other jobs (direct writes included).
    Queue,
    /// Appending its group to the WAL, the sync included.
    Wal,
    /// After the WAL, until the memtables' write lock is held: the base's
    /// version is read, and readers copying memtable rows hold the lock.
    Lock,
    /// Applying to the memtable: filling omitted columns, counting keys in
    /// the base (its key index, built when missing).
    Apply,
    /// From the writer's answer until the request's task runs again (a
    /// group's later upserts wait for the earlier ones' apply first).
    Reply,
}

impl Phase {
    fn label(self) -> &'static str {
        match self {
            Phase::Body => "body",
            Phase::Prep => "prep",
            Phase::Queue => "queue",
            Phase::Wal => "wal",
            Phase::Lock => "lock",
            Phase::Apply => "apply",
            Phase::Reply => "reply",
        }
    }
}

/// Latency buckets: 100 µs to about 26 s, doubling.
fn seconds_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 19))
}

/// Phase buckets: 10 µs to about 10 s, doubling.
fn phase_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.00001, 2.0, 21))
}

/// The server's counters and gauges.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    phases: Family<PhaseLabels, Histogram>,
    wal_bytes: Counter,
    wal_records: Counter,
    wal_groups: Counter,
    wal_fsyncs: Counter,
    flushes: Counter,
    flush_failures: Counter,
    flushed_rows: Counter,
    flush_seconds: Histogram,
    compactions: Counter,
    compaction_failures: Counter,
    fragments_compacted: Counter,
    compaction_seconds: Histogram,
    last_upkeep: Gauge,
    cleanups: Counter,
    cleanup_failures: Counter,
    cleanup_versions: Counter,
    cleanup_bytes: Counter,
    cleanup_seconds: Histogram,
    tables_open: Gauge,
    memtable_rows: Gauge,
    frozen_memtables: Gauge,
    wal_unflushed_bytes: Gauge,
    tables_poisoned: Gauge,
    tables_failed: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric at zero, registered under `memwal_`.
    pub fn new() -> Self {
        let mut m = Self {
            registry: Registry::with_prefix("memwal"),
            requests: Family::default(),
            latency: Family::new_with_constructor(seconds_histogram),
            phases: Family::new_with_constructor(phase_histogram),
            wal_bytes: Counter::default(),
            wal_records: Counter::default(),
            wal_groups: Counter::default(),
            wal_fsyncs: Counter::default(),
            flushes: Counter::default(),
            flush_failures: Counter::default(),
            flushed_rows: Counter::default(),
            flush_seconds: seconds_histogram(),
            compactions: Counter::default(),
            compaction_failures: Counter::default(),
            fragments_compacted: Counter::default(),
            compaction_seconds: seconds_histogram(),
            last_upkeep: Gauge::default(),
            cleanups: Counter::default(),
            cleanup_failures: Counter::default(),
            cleanup_versions: Counter::default(),
            cleanup_bytes: Counter::default(),
            cleanup_seconds: seconds_histogram(),
            tables_open: Gauge::default(),
            memtable_rows: Gauge::default(),
            frozen_memtables: Gauge::default(),
            wal_unflushed_bytes: Gauge::default(),
            tables_poisoned: Gauge::default(),
            tables_failed: Gauge::default(),
        };
        m.register();
        m
    }

    fn register(&mut self) {
        let r = &mut self.registry;
        r.register(
            "http_requests",
            "HTTP requests answered, by route template, method and status",
            self.requests.clone(),
        );
        r.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its response, by route template and method",
            self.latency.clone(),
        );
        r.register(
            "upsert_phase_duration_seconds",
            "Where MemWAL upserts spend their time on the server: body (reading a merge_insert body), prep (decoding it, keys), queue (behind other jobs in the writer), wal (the group's append and sync), lock (reading the base version, then waiting for the memtables' write lock), apply (the memtable update), reply (the writer's answer until the request runs again); observed per upsert, the group's wal time for each of its upserts",
            self.phases.clone(),
        );
        r.register(
            "wal_bytes",
            "Bytes appended to MemWAL logs",
            self.wal_bytes.clone(),
        );
        r.register(
            "wal_records",
            "Upserts logged (each acknowledged only after its group is durable)",
            self.wal_records.clone(),
        );
        r.register(
            "wal_group_commits",
            "Groups of upserts appended to a WAL together",
            self.wal_groups.clone(),
        );
        r.register(
            "wal_fsyncs",
            "fdatasync calls that made a WAL group durable",
            self.wal_fsyncs.clone(),
        );
        r.register(
            "flushes",
            "Memtables merged into their base table",
            self.flushes.clone(),
        );
        r.register(
            "flush_failures",
            "Memtable merges into the base table that failed (retried; repeated failures poison the table)",
            self.flush_failures.clone(),
        );
        r.register(
            "flushed_rows",
            "Rows merged into base tables by flushes",
            self.flushed_rows.clone(),
        );
        r.register(
            "flush_duration_seconds",
            "Time one flush took",
            self.flush_seconds.clone(),
        );
        self.register_gauges();
        self.register_upkeep();
    }

    fn register_gauges(&mut self) {
        let r = &mut self.registry;
        r.register(
            "tables_open",
            "Tables the server has opened since it started (each with its MemWAL; a table opens at its first request)",
            self.tables_open.clone(),
        );
        r.register(
            "memtable_rows",
            "Rows in memtables not yet merged into their base (active and frozen)",
            self.memtable_rows.clone(),
        );
        r.register(
            "frozen_memtables",
            "Frozen memtables waiting for the flusher",
            self.frozen_memtables.clone(),
        );
        r.register(
            "wal_unflushed_bytes",
            "Bytes of WAL segments kept because their rows are not all flushed",
            self.wal_unflushed_bytes.clone(),
        );
        r.register(
            "tables_poisoned",
            "Tables refusing writes after a failed WAL append or repeated failed flushes",
            self.tables_poisoned.clone(),
        );
        r.register(
            "tables_failed",
            "Tables not served because their WAL was damaged at open",
            self.tables_failed.clone(),
        );
    }

    /// The background upkeep's counters (compaction and cleanup).
    fn register_upkeep(&mut self) {
        let r = &mut self.registry;
        r.register(
            "compactions",
            "Background compactions that rewrote fragments",
            self.compactions.clone(),
        );
        r.register(
            "compaction_failures",
            "Background compactions that failed (logged, tried again later)",
            self.compaction_failures.clone(),
        );
        r.register(
            "fragments_compacted",
            "Fragments rewritten (small or deletion-heavy) by background compaction",
            self.fragments_compacted.clone(),
        );
        r.register(
            "compaction_duration_seconds",
            "Time one background compaction run took (a flush waits for one run at most)",
            self.compaction_seconds.clone(),
        );
        r.register(
            "upkeep_last_run_timestamp_seconds",
            "When a table's background upkeep (compaction and cleanup) last ran, in Unix seconds",
            self.last_upkeep.clone(),
        );
        r.register(
            "cleanups",
            "Background cleanups of old versions run (per table, every cleanup interval when idle)",
            self.cleanups.clone(),
        );
        r.register(
            "cleanup_failures",
            "Background cleanups that failed (logged, tried again later)",
            self.cleanup_failures.clone(),
        );
        r.register(
            "cleanup_versions_removed",
            "Versions removed by background cleanup (older than the retention, untagged)",
            self.cleanup_versions.clone(),
        );
        r.register(
            "cleanup_bytes_removed",
            "Bytes of manifests and files removed by background cleanup",
            self.cleanup_bytes.clone(),
        );
        r.register(
            "cleanup_duration_seconds",
            "Time one background cleanup took",
            self.cleanup_seconds.clone(),
        );
    }

    /// Counts one answered request.
    pub fn request(&self, route: &str, method: &str, status: u16, took: Duration) {
        let method = known_method(method);
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_string(),
                method,
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                route: route.to_string(),
                method,
            })
            .observe(took.as_secs_f64());
    }

    /// Records `took` for one upsert's `phase`.
    pub fn upsert_phase(&self, phase: Phase, took: Duration) {
        self.phases
            .get_or_create(&PhaseLabels {
                phase: phase.label(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts one WAL group commit of `records` upserts and `bytes` bytes;
    /// `synced` when it ended with an fdatasync.
    pub fn wal_group(&self, records: u64, bytes: u64, synced: bool) {
        self.wal_groups.inc();
        self.wal_records.inc_by(records);
        self.wal_bytes.inc_by(bytes);
        if synced {
            self.wal_fsyncs.inc();
        }
    }

    /// Counts one flush of `rows` rows.
    pub fn flushed(&self, rows: u64, took: Duration) {
        self.flushes.inc();
        self.flushed_rows.inc_by(rows);
        self.flush_seconds.observe(took.as_secs_f64());
    }

    /// Counts one background compaction of `removed` fragments into `added`.
    pub fn compacted(&self, removed: u64, _added: u64, took: Duration) {
        self.compactions.inc();
        self.fragments_compacted.inc_by(removed);
        self.compaction_seconds.observe(took.as_secs_f64());
    }

    /// Records that a table's background upkeep ran now.
    pub fn upkeep_ran(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.last_upkeep.set(i64::try_from(now).unwrap_or(i64::MAX));
    }

    /// Counts one failed background compaction.
    pub fn compaction_failed(&self) {
        self.compaction_failures.inc();
    }

    /// Counts one background cleanup that removed `versions` versions and
    /// `bytes` bytes.
    pub fn cleaned(&self, versions: u64, bytes: u64, took: Duration) {
        self.cleanups.inc();
        self.cleanup_versions.inc_by(versions);
        self.cleanup_bytes.inc_by(bytes);
        self.cleanup_seconds.observe(took.as_secs_f64());
    }

    /// Counts one failed background cleanup.
    pub fn cleanup_failed(&self) {
        self.cleanup_failures.inc();
    }

    /// Counts one failed flush.
    pub fn flush_failed(&self) {
        self.flush_failures.inc();
    }

    /// The text a scrape gets: the gauges read from `tables` (each open
    /// table's figures), then every metric.
    pub fn render(&self, tables: &BTreeMap<String, Health>) -> Result<String, fmt::Error> {
        let sum = |f: fn(&Health) -> u64| -> i64 {
            let total: u64 = tables.values().map(f).sum();
            i64::try_from(total).unwrap_or(i64::MAX)
        };
        self.tables_open.set(tables.len() as i64);
        self.memtable_rows.set(sum(|h| h.memtable_rows));
        self.frozen_memtables.set(sum(|h| h.frozen_memtables));
        self.wal_unflushed_bytes.set(sum(|h| h.wal_bytes));
        self.tables_poisoned
            .set(sum(|h| u64::from(h.poisoned.is_some())));
        self.tables_failed
            .set(sum(|h| u64::from(h.failed.is_some())));
        let mut out = String::new();
        encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// The method as a label: one of the standard ones, else `other` (a client
/// inventing methods cannot grow the label set).
fn known_method(m: &str) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE",
    ];
    KNOWN.iter().find(|k| **k == m).copied().unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_bounded_labels() {
        let m = Metrics::new();
        m.request(
            "/v1/table/{name}/query/",
            "POST",
            200,
            Duration::from_millis(3),
        );
        m.request(UNMATCHED_ROUTE, "BREW", 501, Duration::from_micros(50));
        m.wal_group(3, 300, true);
        m.wal_group(1, 100, false);
        m.flushed(4, Duration::from_millis(20));
        m.flush_failed();
        let health = Health {
            memtable_rows: 7,
            frozen_memtables: 1,
            wal_bytes: 400,
            last_flushed_seq: 0,
            last_seq: 4,
            flushes: 1,
            poisoned: Some("disk full".into()),
            failed: None,
        };
        let text = m
            .render(&BTreeMap::from([("t".to_string(), health)]))
            .expect("render");
        for line in [
            "memwal_http_requests_total{route=\"/v1/table/{name}/query/\",method=\"POST\",status=\"200\"} 1",
            "memwal_http_requests_total{route=\"unmatched\",method=\"other\",status=\"501\"} 1",
            "memwal_wal_bytes_total 400",
            "memwal_wal_records_total 4",
            "memwal_wal_group_commits_total 2",
            "memwal_wal_fsyncs_total 1",
            "memwal_flushes_total 1",
            "memwal_flush_failures_total 1",
            "memwal_flushed_rows_total 4",
            "memwal_tables_open 1",
            "memwal_memtable_rows 7",
            "memwal_frozen_memtables 1",
            "memwal_wal_unflushed_bytes 400",
            "memwal_tables_poisoned 1",
            "memwal_tables_failed 0",
            "memwal_http_request_duration_seconds_count{route=\"/v1/table/{name}/query/\",method=\"POST\"} 1",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }
}
