//! The MemWAL model test: random sequences of memWal upserts (over random
//! keys and key types), direct merges, add, delete, update, overwrite, drop,
//! flush, restart and crash, run against the served table and, as the
//! reference, the same calls on a native table. After every step both hold
//! the same rows, and every call returned the same counts (or both failed);
//! vector searches (prefiltered and postfiltered) over the served table's
//! memtables and base return what the same search returns natively.
//! Seeds are reproducible (proptest's persistence and `PROPTEST_CASES`).
//!
//! The same model runs a second time with the served table's data on the
//! S3 test server (moto), its WAL on the local disk or on S3 too; with both
//! on S3 a further step starts a second
//! server on the same bucket beside the first (a takeover): every
//! acknowledged row is there, and the first server's next write, whatever
//! its kind, is refused and changes nothing.

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{
    Array, AsArray, FixedSizeListArray, Int64Array, RecordBatch, StringArray, UInt64Array,
};
use arrow::datatypes::{Float32Type, Int64Type, UInt64Type};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memwal_core::{
    AddMode, CompactOptions, CreateMode, CreateOptions, Data, IndexRequest, IndexType, MergeInsert,
    MergeInsertParams, NativeDatabase, NativeTable, QueryRequest, Table, VectorQuery,
};
use memwal_server::memwal::PersistMode;
use memwal_server::state::AppState;
use memwal_server::ServerConfig;
use proptest::prelude::*;

type Row = (u64, Option<String>, i64);

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::UInt64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
        Field::new(
            "e",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), 2),
            true,
        ),
    ]))
}

/// The vector of a row as written: derived from `v` (an update of `v`
/// leaves it as it was, on both sides alike).
fn embed(v: i64) -> Option<Vec<Option<f32>>> {
    Some(vec![Some(v as f32), Some((v % 7) as f32)])
}

fn data(rows: &[Row]) -> Data {
    let b = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter(rows.iter().map(|r| r.1.clone()))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
            Arc::new(
                FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
                    rows.iter().map(|r| embed(r.2)),
                    2,
                ),
            ),
        ],
    )
    .expect("batch");
    Data::new(schema(), vec![b])
}

/// `data(rows)` without the columns `omit` names (bits: 1 name, 2 v, 4 e):
/// what a client sending a subset of the nullable columns (or an older
/// client after `add_columns`) sends. Omitted columns keep their values on
/// matched rows and are null on inserted ones, on both sides alike.
fn data_subset(rows: &[Row], omit: u8) -> Data {
    let full = data(rows);
    let keep: Vec<usize> = (0..4)
        .filter(|i| *i == 0 || omit & (1 << (i - 1)) == 0)
        .collect();
    let b = full.batches[0].project(&keep).expect("project");
    Data::new(b.schema(), vec![b])
}

/// Rows with their vector (as integers), for a search the distance, and
/// the `tmp` column when the table has one. A null `v` reads as `i64::MIN`.
type Seen = (Row, Option<[i64; 2]>, Option<i64>, Option<Option<i64>>);

fn rows_of(batches: &[RecordBatch]) -> Vec<Seen> {
    let mut out = Vec::new();
    for b in batches {
        let id = b.column(0).as_primitive::<UInt64Type>();
        let name = b.column(1).as_string::<i32>();
        let v = b.column(2).as_primitive::<Int64Type>();
        let e = b.column(3).as_fixed_size_list();
        let d = b
            .column_by_name("_distance")
            .map(|c| c.as_primitive::<Float32Type>().clone());
        let tmp = b
            .column_by_name("tmp")
            .map(|c| c.as_primitive::<Int64Type>().clone());
        for i in 0..b.num_rows() {
            let ev = e.is_valid(i).then(|| {
                let x = e.value(i);
                let x = x.as_primitive::<Float32Type>();
                [x.value(0) as i64, x.value(1) as i64]
            });
            out.push((
                (
                    id.value(i),
                    name.is_valid(i).then(|| name.value(i).to_string()),
                    if v.is_valid(i) { v.value(i) } else { i64::MIN },
                ),
                ev,
                d.as_ref().map(|d| d.value(i) as i64),
                tmp.as_ref().map(|t| t.is_valid(i).then(|| t.value(i))),
            ));
        }
    }
    out.sort();
    out
}

/// Vector searches run after every step: (query, k, filter, prefilter).
/// With ties at the k-th distance, which tied rows a postfilter sees first
/// depends on row ids (which differ between the two sides), so postfilters
/// run with a k that covers the table; a small k runs as a prefilter, whose
/// distances are the same whichever tied rows are picked.
const SEARCHES: [([f32; 2], usize, Option<&str>, bool); 5] = [
    ([50.0, 3.0], 1000, None, true),
    ([10.0, 0.0], 1000, Some("v > 20"), true),
    ([0.0, 6.0], 1000, Some("name = 'a'"), false),
    ([30.0, 2.0], 3, Some("name <> 'b'"), true),
    // Small k: goes through the IVF_FLAT index when there is one (every
    // partition probed, so exact; see `search`).
    ([70.0, 1.0], 1, None, true),
];

fn search(q: [f32; 2], k: usize, filter: Option<&str>, prefilter: bool) -> QueryRequest {
    let mut n = VectorQuery::new(q.to_vec());
    n.prefilter = prefilter;
    n.tuning.nprobes = Some(INDEX_PARTITIONS);
    QueryRequest {
        filter: filter.map(str::to_string),
        limit: Some(k),
        nearest: Some(n),
        ..Default::default()
    }
}

/// Distances in answer order.
fn distances(batches: &[RecordBatch]) -> Vec<f32> {
    batches
        .iter()
        .flat_map(|b| {
            b.column_by_name("_distance")
                .map(|c| c.as_primitive::<Float32Type>().values().to_vec())
                .unwrap_or_default()
        })
        .collect()
}

/// Partitions of the IVF_FLAT index the `Index` step builds.
const INDEX_PARTITIONS: u32 = 2;

fn index_request() -> IndexRequest {
    IndexRequest {
        index_type: Some(IndexType::IvfFlat),
        num_partitions: Some(INDEX_PARTITIONS),
        ..IndexRequest::new("e")
    }
}

#[derive(Debug, Clone)]
enum Step {
    Index,
    Optimize,
    /// A memWal upsert of rows without the columns the mask names (see
    /// `data_subset`).
    Upsert(Vec<String>, Vec<Row>, u8),
    Merge(Vec<String>, Vec<Row>, u8),
    Add(Vec<Row>),
    Delete(i64),
    Update(i64, i64),
    Overwrite(Vec<Row>),
    DropAndCreate(Vec<Row>),
    Flush,
    Restart,
    Crash,
    /// A second server takes the table over while the first still runs
    /// (a crash where the WAL is local); the first then tries a write of
    /// this kind (memWal upsert, direct merge, delete, update, add,
    /// optimize, rename), which must be refused.
    Takeover(u8),
    CountWhere(i64),
    /// Restore the state of an earlier `Flush` (picked by this number).
    Restore(usize),
    /// Rename the table away and back (buffered rows must follow).
    Rename,
    /// Schema changes that end where they began: rename a column away and
    /// back (buffered rows must follow).
    Evolve,
    /// Add the column `tmp` (= v + 1) if the table lacks it: later upserts
    /// omit it (their rows keep its value), restores cross the change.
    AddTmp,
    /// Drop `tmp` if the table has it.
    DropTmp,
}

fn key() -> impl Strategy<Value = u64> {
    // Small ids collide often; the big ones cover the top of the u64 range.
    prop_oneof![
        6 => 0u64..8,
        1 => Just(1u64 << 63),
        1 => Just((1u64 << 63) + 5),
        1 => Just(u64::MAX),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (
        key(),
        prop_oneof![5 => "[a-d]".prop_map(Some), 1 => Just(None)],
        0i64..100,
    )
}

fn on() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        4 => Just(vec!["id".to_string()]),
        1 => Just(vec!["name".to_string()]),
        1 => Just(vec!["id".to_string(), "name".to_string()]),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let rows = || prop::collection::vec(row(), 0..6);
    prop_oneof![
        12 => (on(), rows(), omit()).prop_map(|(o, r, m)| Step::Upsert(o, r, m)),
        2 => (on(), rows(), omit()).prop_map(|(o, r, m)| Step::Merge(o, r, m)),
        2 => rows().prop_map(Step::Add),
        2 => (0i64..100).prop_map(Step::Delete),
        2 => (0i64..100, 0i64..100).prop_map(|(a, b)| Step::Update(a, b)),
        1 => rows().prop_map(Step::Overwrite),
        1 => rows().prop_map(Step::DropAndCreate),
        2 => Just(Step::Flush),
        1 => Just(Step::Restart),
        1 => Just(Step::Crash),
        1 => (0u8..7).prop_map(Step::Takeover),
        2 => (0i64..100).prop_map(Step::CountWhere),
        1 => Just(Step::Index),
        1 => Just(Step::Optimize),
        1 => any::<usize>().prop_map(Step::Restore),
        1 => Just(Step::Rename),
        1 => Just(Step::Evolve),
        1 => Just(Step::AddTmp),
        1 => Just(Step::DropTmp),
    ]
}

/// Which nullable columns an upsert leaves out (mostly none).
fn omit() -> impl Strategy<Value = u8> {
    prop_oneof![3 => Just(0u8), 2 => 1u8..8]
}

/// Where the served table's data and WAL live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Local,
    /// Data and WAL on S3.
    S3,
    /// Data on S3, the WAL on the local disk.
    S3Data,
}

struct Harness {
    rt: tokio::runtime::Runtime,
    cfg: ServerConfig,
    place: Place,
    state: Option<Arc<AppState>>,
    native_db: NativeDatabase,
    /// (served version, native version) after each `Flush`: then the
    /// served table's base holds every acknowledged row, as the native one.
    marks: Vec<(u64, u64)>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    /// The local folders of servers started by takeovers.
    _more: Vec<tempfile::TempDir>,
}

fn upsert_params(on: &[String], mem_wal: bool) -> MergeInsert {
    let mut p = MergeInsertParams::new(on.to_vec());
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    p.mem_wal = Some(mem_wal);
    p.validate().expect("a valid upsert")
}

/// The served side's storage on the S3 test server: a fresh prefix for the
/// data and one for the WALs.
fn on_s3(cfg: &mut ServerConfig, wal_too: bool) {
    let options = crate::support::s3_options();
    let (data, wal) = (
        crate::support::s3_uri("model-d"),
        crate::support::s3_uri("model-w"),
    );
    let open = |u: &str| memwal_core::storage::open_uri(u, &options).expect("open s3");
    cfg.storage = Some(open(&data));
    if wal_too {
        cfg.wal_storage = Some(open(&wal));
    }
    cfg.data_uri = Some(data);
}

impl Harness {
    fn new(initial: &[Row], place: Place) -> Self {
        let served_dir = tempfile::tempdir().expect("tmp");
        let native_dir = tempfile::tempdir().expect("tmp");
        let mut cfg = ServerConfig::new(served_dir.path());
        if place != Place::Local {
            on_s3(&mut cfg, place == Place::S3);
        }
        cfg.memwal.persist = PersistMode::Buffer;
        cfg.memwal.flush_rows = 7; // background freezes and flushes happen mid-sequence
        cfg.memwal.flush_interval = Duration::from_millis(30);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let native_db =
            NativeDatabase::open(native_dir.path().to_str().expect("path")).expect("db");
        let mut h = Self {
            rt,
            cfg,
            place,
            state: None,
            native_db,
            marks: Vec::new(),
            _dirs: (served_dir, native_dir),
            _more: Vec::new(),
        };
        h.start();
        h.create(initial);
        h
    }

    fn start(&mut self) {
        self.state = Some(Arc::new(
            AppState::new(self.cfg.clone()).expect("open state"),
        ));
    }

    fn state(&self) -> Arc<AppState> {
        self.state.clone().expect("state")
    }

    fn native(&self) -> NativeTable {
        self.native_db.open_table_sync("t").expect("native")
    }

    fn create(&self, rows: &[Row]) {
        let st = self.state();
        self.rt
            .block_on(st.create_table("t", data(rows), CreateOptions::default()))
            .expect("create served");
        self.native_db
            .create_table_sync("t", data(rows), CreateOptions::default())
            .expect("create native");
    }

    /// Runs one step; returns a description of any difference.
    fn run(&mut self, step: &Step) -> Result<(), String> {
        let st = self.state();
        let served = st.table("t").map_err(|e| format!("open served: {e}"))?;
        let native = self.native();
        let same = |what: &str, a: String, b: String| {
            if a == b {
                Ok(())
            } else {
                Err(format!("{what}: served {a} != native {b}"))
            }
        };
        match step {
            Step::Index => {
                let s = self.rt.block_on(served.build_index(index_request()));
                let n = native.create_index_sync(&index_request());
                same(
                    "index built",
                    format!("{:?}", s.map_err(|_| "error")),
                    format!("{:?}", n.map_err(|_| "error")),
                )?;
            }
            Step::Optimize => {
                self.rt
                    .block_on(served.compact(CompactOptions::default()))
                    .map_err(|e| e.to_string())?;
                native
                    .compact_sync(&CompactOptions::default())
                    .map_err(|e| e.to_string())?;
                native.optimize_indices_sync().map_err(|e| e.to_string())?;
            }
            Step::Upsert(on, rows, omit) | Step::Merge(on, rows, omit) => {
                let memwal = matches!(step, Step::Upsert(..));
                let s = self
                    .rt
                    .block_on(served.merge(upsert_params(on, memwal), data_subset(rows, *omit)))
                    .map(|r| (r.num_inserted_rows, r.num_updated_rows));
                let n = native
                    .merge_insert_sync(&upsert_params(on, false), data_subset(rows, *omit))
                    .map(|r| (r.num_inserted_rows, r.num_updated_rows));
                same(
                    "merge counts",
                    format!("{:?}", s.map_err(|_| "error")),
                    format!("{:?}", n.map_err(|_| "error")),
                )?;
            }
            Step::Add(rows) => {
                self.rt
                    .block_on(served.add_rows(data(rows), AddMode::Append))
                    .map_err(|e| e.to_string())?;
                native
                    .add_sync(data(rows), AddMode::Append)
                    .map_err(|e| e.to_string())?;
            }
            Step::Delete(x) => {
                let p = format!("v < {x}");
                let s = self.rt.block_on(served.delete_rows(p.clone()));
                let n = native.delete_sync(&p);
                same(
                    "deleted",
                    format!(
                        "{:?}",
                        s.map(|r| r.num_deleted_rows).map_err(|e| e.to_string())
                    ),
                    format!(
                        "{:?}",
                        n.map(|r| r.num_deleted_rows).map_err(|e| e.to_string())
                    ),
                )?;
            }
            Step::Update(x, y) => {
                let p = Some(format!("v >= {x}"));
                let vals = vec![("v".to_string(), y.to_string())];
                let s = self
                    .rt
                    .block_on(served.update_rows(p.clone(), vals.clone()));
                let n = native.update_sync(p.as_deref(), &vals);
                same(
                    "updated",
                    format!("{:?}", s.map(|r| r.rows_updated).map_err(|e| e.to_string())),
                    format!("{:?}", n.map(|r| r.rows_updated).map_err(|e| e.to_string())),
                )?;
            }
            Step::Overwrite(rows) => {
                let opts = CreateOptions {
                    mode: CreateMode::Overwrite,
                    exist_ok: false,
                };
                self.rt
                    .block_on(st.create_table("t", data(rows), opts))
                    .map_err(|e| e.to_string())?;
                self.native_db
                    .create_table_sync("t", data(rows), opts)
                    .map_err(|e| e.to_string())?;
            }
            Step::DropAndCreate(rows) => {
                self.marks.clear(); // the old versions are gone
                self.rt
                    .block_on(st.drop_table("t"))
                    .map_err(|e| e.to_string())?;
                self.native_db
                    .drop_table_sync("t")
                    .map_err(|e| e.to_string())?;
                self.create(rows);
            }
            Step::Flush => {
                self.rt
                    .block_on(served.memwal().flush_all())
                    .map_err(|e| e.to_string())?;
                let sv = served.memwal().base().version_sync();
                let nv = native.version_sync();
                self.marks.push((
                    sv.map_err(|e| e.to_string())?,
                    nv.map_err(|e| e.to_string())?,
                ));
            }
            Step::Restore(i) => {
                let Some(&(sv, nv)) = self.marks.get(i % self.marks.len().max(1)) else {
                    return self.check();
                };
                // Rows buffered since are merged first, then superseded.
                self.rt
                    .block_on(served.restore_version(sv))
                    .map_err(|e| e.to_string())?;
                native.restore_sync(Some(nv)).map_err(|e| e.to_string())?;
            }
            Step::Rename => {
                for (from, to) in [("t", "t_moved"), ("t_moved", "t")] {
                    self.rt
                        .block_on(st.rename_table(from, to))
                        .map_err(|e| e.to_string())?;
                    self.native_db
                        .rename_table_sync(from, to)
                        .map_err(|e| e.to_string())?;
                }
            }
            Step::AddTmp | Step::DropTmp => {
                let has = native
                    .schema_sync()
                    .map_err(|e| e.to_string())?
                    .index_of("tmp")
                    .is_ok();
                let (s, n) = match (step, has) {
                    (Step::AddTmp, false) => {
                        let add =
                            memwal_core::NewColumns::Sql(vec![("tmp".into(), "v + 1".into())]);
                        (
                            self.rt.block_on(Table::add_columns(&served, add.clone())),
                            native.add_columns_sync(&add),
                        )
                    }
                    (Step::DropTmp, true) => {
                        let cols = vec!["tmp".to_string()];
                        (
                            self.rt.block_on(Table::drop_columns(&served, cols.clone())),
                            native.drop_columns_sync(&cols),
                        )
                    }
                    _ => return self.check(),
                };
                same(
                    "tmp column",
                    format!("{:?}", s.map(|_| ()).map_err(|e| e.to_string())),
                    format!("{:?}", n.map(|_| ()).map_err(|e| e.to_string())),
                )?;
            }
            Step::Evolve => {
                use memwal_core::ColumnAlteration;
                let rename = |from: &str, to: &str| {
                    vec![ColumnAlteration {
                        path: from.into(),
                        rename: Some(to.into()),
                        ..Default::default()
                    }]
                };
                let s = (
                    self.rt
                        .block_on(Table::alter_columns(&served, rename("v", "v_x"))),
                    self.rt
                        .block_on(Table::alter_columns(&served, rename("v_x", "v"))),
                );
                let n = (
                    native.alter_columns_sync(&rename("v", "v_x")),
                    native.alter_columns_sync(&rename("v_x", "v")),
                );
                let ok = |r: &memwal_core::Result<u64>| {
                    r.as_ref().map(|_| ()).map_err(|e| e.to_string())
                };
                same(
                    "schema changes",
                    format!("{:?}", (ok(&s.0), ok(&s.1))),
                    format!("{:?}", (ok(&n.0), ok(&n.1))),
                )?;
            }
            Step::Restart => {
                // A graceful restart: flush, stop, open again.
                self.rt
                    .block_on(served.memwal().flush_all())
                    .map_err(|e| e.to_string())?;
                st.shutdown();
                drop((st, served));
                self.state = None;
                self.start();
            }
            Step::Takeover(kind) if self.place == Place::S3 => {
                let stale = self.take_over()?;
                let refused = self.stale_write(&stale, *kind);
                stale.shutdown();
                drop((st, served, stale));
                refused?;
            }
            Step::Crash | Step::Takeover(_) => {
                // Memory dropped with nothing flushed: the threads are
                // joined (a dead process runs none), then the WAL replays.
                st.shutdown();
                drop((st, served));
                self.state = None;
                self.start();
            }
            Step::CountWhere(x) => {
                let f = format!("v > {x}");
                let s = self
                    .rt
                    .block_on(served.count(Some(f.clone())))
                    .map_err(|e| e.to_string())?;
                let n = native
                    .count_rows_sync(Some(&f))
                    .map_err(|e| e.to_string())?;
                same("filtered count", s.to_string(), n.to_string())?;
            }
        }
        self.check()
    }

    /// Starts a second server on the same storage (its own empty local
    /// folder) beside the running one, which is returned, still running:
    /// the new one opens the table, claiming it.
    fn take_over(&mut self) -> Result<Arc<AppState>, String> {
        let stale = self.state.take().expect("state");
        let dir = tempfile::tempdir().expect("tmp");
        self.cfg.data_dir = dir.path().to_path_buf();
        self._more.push(dir);
        self.start();
        self.state()
            .table("t")
            .map_err(|e| format!("takeover: {e}"))?;
        Ok(stale)
    }

    /// A write of `kind` on the server that was taken over: refused, and
    /// (checked by the next `check`) without effect.
    fn stale_write(&self, stale: &Arc<AppState>, kind: u8) -> Result<(), String> {
        let t = stale.table("t").map_err(|e| format!("stale open: {e}"))?;
        let rows = vec![(3u64, Some("z".to_string()), 77i64)];
        let r = self.rt.block_on(async {
            match kind {
                0 => t
                    .merge(upsert_params(&["id".into()], true), data(&rows))
                    .await
                    .map(|_| ()),
                1 => t
                    .merge(upsert_params(&["id".into()], false), data(&rows))
                    .await
                    .map(|_| ()),
                2 => t.delete_rows("v >= 0".into()).await.map(|_| ()),
                3 => t
                    .update_rows(None, vec![("v".into(), "77".into())])
                    .await
                    .map(|_| ()),
                4 => t.add_rows(data(&rows), AddMode::Append).await.map(|_| ()),
                5 => t.compact(CompactOptions::default()).await.map(|_| ()),
                _ => stale.rename_table("t", "t_stale").await,
            }
        });
        match r {
            Ok(()) => Err(format!(
                "the taken-over server acknowledged a write of kind {kind}"
            )),
            Err(e) if e.to_string().contains("taken") => Ok(()),
            Err(e) => Err(format!(
                "the taken-over server refused a write of kind {kind} without naming the takeover: {e}"
            )),
        }
    }

    fn check(&self) -> Result<(), String> {
        let served = self.state().table("t").map_err(|e| e.to_string())?;
        let native = self.native();
        let s = self
            .rt
            .block_on(served.scan(QueryRequest::default()))
            .map_err(|e| e.to_string())?;
        let n = native
            .query_sync(&QueryRequest::default())
            .map_err(|e| e.to_string())?;
        let (s, n) = (rows_of(&s), rows_of(&n));
        if s != n {
            return Err(format!("rows differ:\n served {s:?}\n native {n:?}"));
        }
        for (q, k, f, pre) in SEARCHES {
            let req = search(q, k, f, pre);
            let s = self
                .rt
                .block_on(served.scan(req.clone()))
                .map_err(|e| e.to_string())?;
            // The reference searches exactly (no index): the served side's
            // index, probing every partition, must give the same answers.
            let mut exact = req.clone();
            if let Some(v) = exact.nearest.as_mut() {
                v.tuning.bypass_vector_index = true;
            }
            let n = native.query_sync(&exact).map_err(|e| e.to_string())?;
            // Ties may pick different rows at the k-th place: the distances
            // in order must agree, and every row when k covers the table.
            let (sd, nd) = (distances(&s), distances(&n));
            if sd != nd {
                return Err(format!(
                    "search {q:?} {f:?}: distances differ:\n served {sd:?}\n native {nd:?}"
                ));
            }
            if k >= 1000 && rows_of(&s) != rows_of(&n) {
                return Err(format!(
                    "search {q:?} {f:?}: rows differ:\n served {:?}\n native {:?}",
                    rows_of(&s),
                    rows_of(&n)
                ));
            }
        }
        // A limited scan is the full one sliced (the served side
        // materialises only the rows it takes).
        let in_order = |limit: Option<usize>, offset: Option<usize>| -> Result<Vec<u64>, String> {
            let req = QueryRequest {
                filter: Some("v > 30".into()),
                limit,
                offset,
                ..Default::default()
            };
            let b = self
                .rt
                .block_on(served.scan(req))
                .map_err(|e| e.to_string())?;
            Ok(b.iter()
                .flat_map(|b| b.column(0).as_primitive::<UInt64Type>().values().to_vec())
                .collect())
        };
        // A background flush moves rows from the memtables (last) into the
        // base between two scans: compare only when the full scan is the
        // same before and after.
        for _ in 0..20 {
            let full = in_order(None, None)?;
            let part = in_order(Some(3), Some(2))?;
            if in_order(None, None)? != full {
                continue;
            }
            let want: Vec<u64> = full.iter().skip(2).take(3).copied().collect();
            if part != want {
                return Err(format!(
                    "limit 3 offset 2 gave {part:?}, the full scan {full:?}"
                ));
            }
            break;
        }
        let c = self
            .rt
            .block_on(served.count(None))
            .map_err(|e| e.to_string())?;
        if c != n.len() as u64 {
            return Err(format!("count_rows {c} but {} rows", n.len()));
        }
        Ok(())
    }
}

proptest! {
    // 48 sequences of up to 40 steps: over 1,000 steps per CI run.
    #![proptest_config(ProptestConfig {
        cases: 48,
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    })]

    #[test]
    fn memwal_matches_native_merge(
        initial in prop::collection::vec(row(), 0..6),
        steps in prop::collection::vec(step(), 20..40),
    ) {
        run_model(&initial, &steps, Place::Local)?;
    }
}

proptest! {
    // Slower (every object a request to moto): 24 sequences of up to 40 steps.
    #![proptest_config(ProptestConfig {
        cases: 24,
        max_shrink_iters: 100,
        ..ProptestConfig::default()
    })]

    #[test]
    fn memwal_on_s3_matches_native_merge_across_takeovers(
        initial in prop::collection::vec(row(), 0..6),
        steps in prop::collection::vec(step(), 20..40),
        place in prop_oneof![2 => Just(Place::S3), 1 => Just(Place::S3Data)],
    ) {
        run_model(&initial, &steps, place)?;
    }
}

fn run_model(initial: &[Row], steps: &[Step], place: Place) -> Result<(), TestCaseError> {
    let mut h = Harness::new(initial, place);
    if let Err(e) = h.check() {
        return Err(TestCaseError::fail(format!("after create: {e}")));
    }
    for (i, s) in steps.iter().enumerate() {
        if let Err(e) = h.run(s) {
            return Err(TestCaseError::fail(format!("step {i} {s:?}: {e}")));
        }
    }
    Ok(())
}
