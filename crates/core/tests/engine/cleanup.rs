//! Version cleanup and compaction against a plain reference: random
//! appends, deletes, upserts, compactions (whole, or of the small and
//! deletion-heavy fragments), index builds, tags and cleanups at random
//! cutoffs. After every step the table holds the reference's rows (a plain
//! list, so a compaction that loses or duplicates a row, or a stale key
//! index after one, shows). After each cleanup every kept version reads exactly as
//! it read when it was committed, every removed one is VersionNotFound
//! (naming the oldest kept), and the table folder holds exactly the files
//! the kept versions name (none missing, none left over). The history also
//! holds schema changes (a column added from an expression and dropped
//! again), upserts of a subset of the columns and restores of older
//! versions, so cleanups meet versions of other schemas and files a restore
//! brought back into use. A cleanup that
//! fails half-way (a crash at its n-th removal) loses nothing, and the next
//! one finishes the job.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, AsArray, Int64Array, RecordBatch};
use arrow::datatypes::Int64Type;
use arrow_schema::{DataType, Field, Schema};
use memwal_core::manifest::{list_versions, read_manifest};
use memwal_core::storage::{FaultyStorage, LocalStorage, Op, Storage};
use memwal_core::{
    AddMode, ErrorCode, IndexRequest, IndexType, NativeDatabase, NativeTable, NewColumns,
};
use proptest::prelude::*;

use crate::support::{checked, dump, people, rows};

type Rows = Vec<(i64, Option<i64>, Option<String>)>;

/// The `x` column by id, sorted.
type Xs = Vec<(i64, Option<i64>)>;

/// `t`'s rows, and its `x` column when it has one.
fn read(t: &NativeTable) -> (Rows, Option<Xs>) {
    let batches = t
        .query_sync(&memwal_core::QueryRequest::default())
        .expect("query");
    let has_x = t
        .schema_sync()
        .expect("schema")
        .field_with_name("x")
        .is_ok();
    let xs = has_x.then(|| {
        let mut out = Vec::new();
        for b in &batches {
            let id = b
                .column_by_name("id")
                .expect("id")
                .as_primitive::<Int64Type>();
            let x = b
                .column_by_name("x")
                .expect("x")
                .as_primitive::<Int64Type>();
            out.extend((0..b.num_rows()).map(|i| (id.value(i), x.is_valid(i).then(|| x.value(i)))));
        }
        out.sort();
        out
    });
    (dump(t), xs)
}

/// `id` and `age` only (no name).
fn ages(pairs: &[(i64, i64)]) -> memwal_core::Data {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("age", DataType::Int64, true),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(pairs.iter().map(|p| p.0))),
            Arc::new(Int64Array::from_iter_values(pairs.iter().map(|p| p.1))),
        ],
    )
    .expect("batch");
    memwal_core::Data::new(schema, vec![b])
}

#[derive(Debug, Clone)]
enum Step {
    Add(Vec<(i64, i64)>),
    Delete(i64),
    Upsert(Vec<(i64, i64)>),
    Compact,
    /// Compact the fragments under this many rows (and those with over a
    /// tenth of their rows deleted).
    CompactSmall(u64),
    Index,
    Tag,
    /// Clean up with the cutoff at the commit time of the version this many
    /// from the latest (0: only the latest and tagged versions stay).
    Cleanup(usize),
    /// An upsert of `id` and `age` only: matched rows keep their name,
    /// inserted ones have none.
    Partial(Vec<(i64, i64)>),
    /// Add the column `x = age * 2` when the table lacks it.
    AddX,
    /// Drop `x` when the table has it.
    DropX,
    /// Restore the kept version this many before the latest.
    Restore(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let rows = || prop::collection::vec((0i64..12, 0i64..100), 1..5);
    prop_oneof![
        3 => rows().prop_map(Step::Add),
        2 => (0i64..100).prop_map(Step::Delete),
        3 => rows().prop_map(Step::Upsert),
        1 => Just(Step::Compact),
        2 => (1u64..8).prop_map(Step::CompactSmall),
        1 => Just(Step::Index),
        1 => Just(Step::Tag),
        2 => (0usize..6).prop_map(Step::Cleanup),
        2 => rows().prop_map(Step::Partial),
        1 => Just(Step::AddX),
        1 => Just(Step::DropX),
        1 => (1usize..5).prop_map(Step::Restore),
    ]
}

/// Every file a version names, relative to the table folder.
pub(crate) fn named(st: &dyn Storage, versions: &[u64]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for v in versions {
        let m = read_manifest(st, "t.lance", *v)
            .expect("read")
            .expect("kept");
        for f in &m.fragments {
            out.insert(f.file.clone());
            out.extend(f.deletion_file.clone());
        }
        for ix in &m.indices {
            out.extend(ix.files.iter().map(|f| f.path.clone()));
        }
    }
    out
}

/// Every file in the table's file folders, descending into the per-index
/// folders of `_indices` (an empty one is listed as itself, so a folder
/// cleanup leaves behind shows up as a file no version names).
pub(crate) fn on_disk(st: &dyn Storage) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for dir in ["data", "_deletions", "_indices"] {
        for n in st.list(&format!("t.lance/{dir}")).expect("list") {
            let rel = format!("{dir}/{n}");
            let inside = match dir == "_indices" && !n.contains('.') {
                true => st.list(&format!("t.lance/{rel}")).expect("list"),
                false => vec![],
            };
            out.extend(inside.iter().map(|f| format!("{rel}/{f}")));
            if inside.is_empty() {
                out.insert(rel);
            }
        }
    }
    out
}

struct Harness {
    t: NativeTable,
    st: Arc<dyn Storage>,
    /// Every version ever committed, as it read then (its rows, and the
    /// `x` column by id when it had one).
    seen: BTreeMap<u64, (Rows, Option<Xs>)>,
    tags: HashSet<u64>,
    /// The rows the latest version must hold, by plain list operations.
    reference: Rows,
    _db: NativeDatabase,
}

fn sorted(mut r: Rows) -> Rows {
    r.sort();
    r
}

impl Harness {
    fn record(&mut self) {
        let v = self.t.version_sync().expect("version");
        self.seen.entry(v).or_insert_with(|| read(&self.t));
    }

    fn run(&mut self, s: &Step) -> Result<(), String> {
        let t = &self.t;
        let err = |e: memwal_core::Error| e.to_string();
        match s {
            Step::Add(r) => {
                t.add_sync(people(r), AddMode::Append).map_err(err)?;
                let named = |id: i64| Some(format!("n{id}"));
                self.reference
                    .extend(r.iter().map(|(id, age)| (*id, Some(*age), named(*id))));
            }
            Step::Delete(x) => {
                t.delete_sync(&format!("age < {x}")).map_err(err)?;
                self.reference.retain(|r| r.1.is_none_or(|a| a >= *x));
            }
            Step::Upsert(r) => self.upsert(r, true)?,
            Step::Compact => {
                t.optimize_sync().map_err(err)?;
            }
            Step::CompactSmall(target) => {
                let o = memwal_core::table::compact::CompactOptions {
                    target_rows_per_fragment: *target,
                    ..Default::default()
                };
                t.compact_sync(&o).map_err(err)?;
            }
            Step::Index => {
                let req = IndexRequest {
                    index_type: Some(IndexType::BTree),
                    replace: true,
                    ..IndexRequest::new("age")
                };
                t.create_index_sync(&req).map_err(err)?;
            }
            Step::Tag => {
                let v = t.version_sync().map_err(err)?;
                if self.tags.insert(v) {
                    t.set_tag_sync(&format!("v{v}"), v, false).map_err(err)?;
                }
            }
            Step::Cleanup(back) => return self.cleanup(*back),
            Step::Partial(r) => self.upsert(r, false)?,
            Step::AddX => {
                if !self.has_x() {
                    let x = vec![("x".to_string(), "age * 2".to_string())];
                    t.add_columns_sync(&NewColumns::Sql(x)).map_err(err)?;
                }
            }
            Step::DropX => {
                if self.has_x() {
                    t.drop_columns_sync(&["x".to_string()]).map_err(err)?;
                }
            }
            Step::Restore(back) => self.restore(*back)?,
        }
        self.record();
        let (have, want) = (sorted(dump(&self.t)), sorted(self.reference.clone()));
        if have != want {
            return Err(format!("rows {have:?}, the reference holds {want:?}"));
        }
        Ok(())
    }

    fn has_x(&self) -> bool {
        let schema = self.t.schema_sync().expect("schema");
        schema.field_with_name("x").is_ok()
    }

    /// An upsert on `id` of `(id, age)` rows (the last of a repeated id wins): `full` sends the name
    /// `n{id}` too; otherwise matched rows keep their name and inserted ones have none.
    fn upsert(&mut self, r: &[(i64, i64)], full: bool) -> Result<(), String> {
        let mut dedup = BTreeMap::new();
        dedup.extend(r.iter().copied());
        let r: Vec<(i64, i64)> = dedup.into_iter().collect();
        let mut p = memwal_core::MergeInsertParams::new(vec!["id".into()]);
        p.when_matched_update_all = true;
        p.when_not_matched_insert_all = true;
        let data = if full { people(&r) } else { ages(&r) };
        self.t
            .merge_insert_sync(&checked(&p), data)
            .map_err(|e| e.to_string())?;
        for (id, age) in &r {
            let name = full.then(|| format!("n{id}"));
            let mut hit = false;
            for row in self.reference.iter_mut().filter(|row| row.0 == *id) {
                row.1 = Some(*age);
                if full {
                    row.2 = name.clone();
                }
                hit = true;
            }
            if !hit {
                self.reference.push((*id, Some(*age), name));
            }
        }
        Ok(())
    }

    /// Restores the recorded, kept version `back` before the latest (when
    /// there is one): the table then reads as that version did.
    fn restore(&mut self, back: usize) -> Result<(), String> {
        let kept = list_versions(self.st.as_ref(), "t.lance").map_err(|e| e.to_string())?;
        let known: Vec<u64> = kept
            .into_iter()
            .filter(|v| self.seen.contains_key(v))
            .collect();
        let Some(v) = known.len().checked_sub(1 + back).map(|i| known[i]) else {
            return Ok(());
        };
        self.t.restore_sync(Some(v)).map_err(|e| e.to_string())?;
        self.reference = self.seen[&v].0.clone();
        Ok(())
    }

    fn cleanup(&mut self, back: usize) -> Result<(), String> {
        let versions = list_versions(self.st.as_ref(), "t.lance").map_err(|e| e.to_string())?;
        let pick = versions[versions.len().saturating_sub(1 + back)];
        let ts = |v: u64| {
            read_manifest(self.st.as_ref(), "t.lance", v)
                .expect("read")
                .expect("exists")
                .timestamp_ms
        };
        let cutoff = ts(pick);
        // Versions committed in the same millisecond as `pick` stay too.
        let want: Vec<u64> = versions
            .iter()
            .copied()
            .filter(|v| ts(*v) >= cutoff || self.tags.contains(v) || Some(v) == versions.last())
            .collect();
        let r = self
            .t
            .cleanup_before_sync(cutoff, false)
            .map_err(|e| e.to_string())?;
        let kept = list_versions(self.st.as_ref(), "t.lance").map_err(|e| e.to_string())?;
        // Removal may keep a version whose timestamp equals the cutoff after
        // rounding; it never removes one the rule keeps.
        for v in &want {
            if !kept.contains(v) {
                return Err(format!("version {v} should be kept (cutoff at {pick})"));
            }
        }
        if r.old_versions_removed as usize != versions.len() - kept.len() {
            return Err(format!(
                "{r:?} but {} -> {} versions",
                versions.len(),
                kept.len()
            ));
        }
        self.check(&kept)
    }

    fn check(&self, kept: &[u64]) -> Result<(), String> {
        for (v, rows) in &self.seen {
            match self.t.checkout_sync(Some(*v)) {
                Ok(old) if kept.contains(v) => {
                    let now = read(&old);
                    if &now != rows {
                        return Err(format!("version {v} reads {now:?}, was {rows:?}"));
                    }
                }
                Ok(_) => return Err(format!("version {v} was removed but checks out")),
                Err(e) if kept.contains(v) => return Err(format!("kept version {v}: {e}")),
                Err(e) => {
                    let oldest = kept[0];
                    let msg = e.to_string();
                    if e.code() != ErrorCode::VersionNotFound
                        || (oldest > *v
                            && !msg.contains(&format!("oldest version kept is {oldest}")))
                    {
                        return Err(format!("removed version {v}: {msg}"));
                    }
                }
            }
        }
        let (want, have) = (named(self.st.as_ref(), kept), on_disk(self.st.as_ref()));
        if want != have {
            return Err(format!(
                "files: kept versions name {want:?}, disk holds {have:?}"
            ));
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 100, ..ProptestConfig::default() })]

    #[test]
    fn cleanup_keeps_every_kept_version_exact_and_leaves_no_file_behind(
        steps in prop::collection::vec(step(), 10..30),
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let st: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).expect("storage"));
        let db = NativeDatabase::with_storage(dir.path().to_str().expect("p"), st.clone());
        let t = db
            .create_table_sync("t", people(&[(1, 10), (2, 20)]), Default::default())
            .expect("create");
        let reference = vec![(1, Some(10), Some("n1".into())), (2, Some(20), Some("n2".into()))];
        let mut h = Harness { t, st, seen: BTreeMap::new(), tags: HashSet::new(), reference, _db: db };
        h.record();
        for (i, s) in steps.iter().enumerate() {
            if let Err(e) = h.run(s) {
                return Err(TestCaseError::fail(format!("step {i} {s:?}: {e}")));
            }
        }
        // Last: a cleanup at "now" keeps only the latest and tagged versions.
        h.cleanup(0).map_err(|e| TestCaseError::fail(format!("final cleanup: {e}")))?;
    }
}

/// A crash at each removal of a cleanup (the storage refuses the n-th delete
/// as a dead process would not make it): every kept version still reads,
/// and the next cleanup removes what the broken one left.
#[test]
fn a_cleanup_cut_short_loses_nothing_and_the_next_one_finishes() {
    for fail_at in 0..6u32 {
        let dir = tempfile::tempdir().expect("tmp");
        let local: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).expect("storage"));
        let count = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (c, a) = (count.clone(), armed.clone());
        let st: Arc<dyn Storage> = Arc::new(FaultyStorage::new(local.clone(), move |op, _| {
            op == Op::Delete
                && a.load(std::sync::atomic::Ordering::SeqCst)
                && c.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == fail_at
        }));
        let db = NativeDatabase::with_storage(dir.path().to_str().expect("p"), st.clone());
        let t = db
            .create_table_sync("t", people(&[(1, 10), (2, 20)]), Default::default())
            .expect("create");
        for i in 0..4 {
            t.add_sync(people(&[(10 + i, i)]), AddMode::Append)
                .expect("add");
            t.delete_sync(&format!("id = {}", 10 + i - 1))
                .expect("delete");
        }
        t.optimize_sync().expect("compact");
        let latest = dump(&t);
        armed.store(true, std::sync::atomic::Ordering::SeqCst);
        let first = t.cleanup_sync(Duration::ZERO, false);
        assert!(
            first.is_err(),
            "fault at removal {fail_at} must fail the cleanup"
        );
        armed.store(false, std::sync::atomic::Ordering::SeqCst);
        // Reopened as after a crash: the latest version is intact.
        let again = NativeDatabase::open(dir.path().to_str().expect("p"))
            .expect("db")
            .open_table_sync("t")
            .expect("open");
        assert_eq!(dump(&again), latest, "fault at {fail_at}");
        let kept = list_versions(local.as_ref(), "t.lance").expect("versions");
        for v in &kept {
            again
                .checkout_sync(Some(*v))
                .map(|o| dump(&o))
                .unwrap_or_else(|e| panic!("kept {v}: {e}"));
        }
        again
            .cleanup_sync(Duration::ZERO, false)
            .expect("second cleanup");
        let kept = list_versions(local.as_ref(), "t.lance").expect("versions");
        assert_eq!(kept.len(), 1);
        assert_eq!(
            named(local.as_ref(), &kept),
            on_disk(local.as_ref()),
            "fault at {fail_at}"
        );
        assert_eq!(dump(&again), latest);
    }
}

/// A merge right after a compaction finds the moved rows through the cached
/// key index (which the compaction updates with their new addresses).
#[test]
fn a_merge_after_a_compaction_finds_the_moved_rows() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = NativeDatabase::open(dir.path().to_str().expect("p")).expect("db");
    let t = db
        .create_table_sync("t", people(&[(1, 10), (2, 20)]), Default::default())
        .expect("create");
    let mut p = memwal_core::MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    let p = checked(&p);
    t.merge_insert_sync(&p, people(&[(3, 30)])).expect("merge");
    let o = memwal_core::table::compact::CompactOptions {
        target_rows_per_fragment: 100,
        ..Default::default()
    };
    let s = t.compact_sync(&o).expect("compact");
    assert_eq!((s.fragments_removed, s.fragments_added), (2, 1));
    let r = t
        .merge_insert_sync(&p, people(&[(1, 11), (3, 33)]))
        .expect("merge after");
    assert_eq!((r.num_inserted_rows, r.num_updated_rows), (0, 2));
    assert_eq!(
        dump(&t),
        vec![
            (1, Some(11), Some("n1".into())),
            (2, Some(20), Some("n2".into())),
            (3, Some(33), Some("n3".into()))
        ]
    );
    // The compacted fragment now has 2 of 3 rows deleted: compacted again,
    // after which nothing qualifies and no version is made.
    t.compact_sync(&o).expect("again");
    let v = t.version_sync().expect("v");
    assert_eq!(t.compact_sync(&o).expect("idle").version, v);
    assert_eq!(dump(&t).len(), 3);
}

/// One compaction run takes one bin of at most the target's live rows (the
/// deletion-heavy fragments first, then the smallest), so a fragment near
/// the target is not rewritten with every new small one; `compact_all_sync`
/// (what `optimize` runs) goes on until nothing qualifies. No row is lost or
/// doubled on the way.
#[test]
fn a_compaction_run_is_one_bin_of_at_most_the_target() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = NativeDatabase::open(dir.path().to_str().expect("p")).expect("db");
    let big: Vec<(i64, i64)> = (0..90).map(|i| (i, i)).collect();
    let t = db
        .create_table_sync("t", people(&big), Default::default())
        .expect("create");
    for k in 0..4 {
        let small: Vec<(i64, i64)> = (0..10).map(|i| (100 + 10 * k + i, i)).collect();
        t.add_sync(people(&small), AddMode::Append).expect("add");
    }
    let sizes = |t: &NativeTable| -> Vec<usize> {
        let snap = t.snapshot().expect("snap");
        snap.fragments
            .iter()
            .map(|f| f.batch.num_rows() - f.deleted.len() as usize)
            .collect()
    };
    let ids = |t: &NativeTable| -> BTreeSet<i64> { dump(t).into_iter().map(|r| r.0).collect() };
    let all = ids(&t);
    let o = memwal_core::table::compact::CompactOptions {
        target_rows_per_fragment: 100,
        ..Default::default()
    };
    let s = t.compact_sync(&o).expect("first run");
    assert_eq!((s.fragments_removed, s.fragments_added), (4, 1));
    assert_eq!(sizes(&t), vec![90, 40], "the 90-row fragment stays");
    assert_eq!(t.compact_sync(&o).expect("idle").fragments_removed, 0);
    // A fifth of the big one deleted: rewritten alone (40 + 72 > 100).
    t.delete_sync("id < 18").expect("delete");
    let s = t.compact_sync(&o).expect("heavy run");
    assert_eq!((s.fragments_removed, s.deleted_rows_purged), (1, 18));
    assert_eq!(sizes(&t), vec![40, 72]);
    let wide = memwal_core::table::compact::CompactOptions {
        target_rows_per_fragment: 1_000,
        ..Default::default()
    };
    let s = t.compact_all_sync(&wide).expect("all");
    assert_eq!((s.fragments_removed, s.fragments_added), (2, 1));
    assert_eq!(sizes(&t), vec![112]);
    let want: BTreeSet<i64> = all.into_iter().filter(|i| *i >= 18).collect();
    assert_eq!(ids(&t), want);
}

/// `max_bytes_per_run` bounds one run's rewrite (the server's background
/// runs), whatever the row target: the smallest fragments go first until
/// the budget is spent, the first always goes, and every row stays.
#[test]
fn a_compaction_run_rewrites_at_most_its_byte_budget() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = NativeDatabase::open(dir.path().to_str().expect("p")).expect("db");
    let first: Vec<(i64, i64)> = (0..10).map(|i| (i, i)).collect();
    let t = db
        .create_table_sync("t", people(&first), Default::default())
        .expect("create");
    for k in 1..8 {
        let rows: Vec<(i64, i64)> = (0..10).map(|i| (10 * k + i, i)).collect();
        t.add_sync(people(&rows), AddMode::Append).expect("add");
    }
    let all = dump(&t);
    let sizes: Vec<u64> = {
        let snap = t.snapshot().expect("snap");
        // The measure compaction uses: the bytes of the rows' slices.
        let f = |f: &memwal_core::fragment::LoadedFragment| {
            let c = f.batch.columns().iter();
            c.map(|c| c.to_data().get_slice_memory_size().expect("size") as u64)
                .sum()
        };
        snap.fragments.iter().map(f).collect()
    };
    let per = sizes.iter().copied().max().expect("fragments");
    assert!(4 * sizes.iter().copied().min().expect("min") > 3 * per + per / 2);
    // The server's background setting: 8 fragments make a run, or a full bin.
    let budget = |n: u64| memwal_core::table::compact::CompactOptions {
        max_bytes_per_run: n,
        min_fragments: 8,
        ..Default::default()
    };
    let count = |t: &NativeTable| t.snapshot().expect("snap").fragments.len();
    // Room for three fragments' bytes, not four: a full bin, so three go
    // (fewer than min_fragments), five stay.
    let s = t.compact_sync(&budget(3 * per + per / 2)).expect("run");
    assert_eq!((s.fragments_removed, s.fragments_added), (3, 1));
    assert_eq!(count(&t), 6);
    // A budget below one fragment: none fits (and none is deletion-heavy):
    // nothing is rewritten.
    let tiny = budget(1);
    assert_eq!(t.compact_sync(&tiny).expect("tiny").fragments_removed, 0);
    assert_eq!(count(&t), 6);
    // Unbounded, as optimize is: everything into one fragment.
    let s = t
        .compact_all_sync(&memwal_core::table::compact::CompactOptions::default())
        .expect("all");
    assert_eq!(s.fragments_added, 1);
    assert_eq!(count(&t), 1);
    assert_eq!(dump(&t), all, "compaction under a budget keeps every row");
}

/// One fragment too big for a run's byte budget (few rows, wide values)
/// does not keep the small ones from merging: the smallest-first bin skips
/// it and takes what fits.
#[test]
fn a_big_fragment_does_not_keep_small_ones_from_merging() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = NativeDatabase::open(dir.path().to_str().expect("p")).expect("db");
    let wide = "w".repeat(200_000);
    let t = db
        .create_table_sync(
            "t",
            rows(
                &[0, 1],
                &[Some(0), Some(1)],
                &[Some(wide.as_str()), Some(wide.as_str())],
            ),
            Default::default(),
        )
        .expect("create");
    for k in 1..=8 {
        let small: Vec<(i64, i64)> = (0..10).map(|i| (10 * k + i, i)).collect();
        t.add_sync(people(&small), AddMode::Append).expect("add");
    }
    let all = dump(&t);
    let o = memwal_core::table::compact::CompactOptions {
        max_bytes_per_run: 100_000,
        min_fragments: 8,
        ..Default::default()
    };
    let s = t.compact_sync(&o).expect("run");
    assert_eq!(
        (s.fragments_removed, s.fragments_added),
        (8, 1),
        "the small ones merge"
    );
    let left: Vec<usize> = t
        .snapshot()
        .expect("snap")
        .fragments
        .iter()
        .map(|f| f.batch.num_rows())
        .collect();
    assert_eq!(left, vec![2, 80], "the wide fragment stays as it is");
    assert_eq!(dump(&t), all);
}
