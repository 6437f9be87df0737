//! FTS indexes of a native table: which columns can carry one (strings, lists of strings), the
//! texts of a column's rows, building an index over a snapshot (one `memwal-fts` segment of the
//! live rows, tokenized by one thread per core and joined) and folding new rows in (`optimize`: one more segment for the new fragments' rows;
//! segments holding rows deleted since are rewritten without them, nothing tokenized twice).
//! Querying is `text_search.rs`.

use std::collections::HashSet;
use std::ops::Range;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow_schema::DataType;
use memwal_fts::{FtsParams, Segment, SegmentBuilder};

use super::{NativeTable, Snapshot};
use crate::error::{Error, Result};
use crate::fragment::LoadedFragment;
use crate::index::fts::{self, TextIndex};
use crate::index::IndexType;
use crate::manifest::{IndexFile, IndexMeta};

/// Whether column `name` of type `dt` can carry an FTS index.
pub(crate) fn check_column(name: &str, dt: &DataType) -> Result<()> {
    let ok = match dt {
        DataType::Utf8 | DataType::LargeUtf8 => true,
        DataType::List(f) | DataType::LargeList(f) => {
            matches!(f.data_type(), DataType::Utf8 | DataType::LargeUtf8)
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "cannot build FTS on column '{name}' ({dt}): FTS indexes a string column or a list of strings"
        )))
    }
}

/// The texts of row `i` of a string or list-of-strings column: `None` for a null (no document).
pub(crate) fn texts_at(col: &ArrayRef, i: usize) -> Option<Vec<&str>> {
    if col.is_null(i) {
        return None;
    }
    match col.data_type() {
        DataType::Utf8 => Some(vec![col.as_string::<i32>().value(i)]),
        DataType::LargeUtf8 => Some(vec![col.as_string::<i64>().value(i)]),
        DataType::List(_) => Some(list_texts(
            col.as_list::<i32>().values(),
            col.as_list::<i32>().value_offsets(),
            i,
        )),
        DataType::LargeList(_) => {
            let l = col.as_list::<i64>();
            let o: Vec<i32> = l.value_offsets()[i..=i + 1]
                .iter()
                .map(|&x| x as i32)
                .collect();
            Some(list_texts(l.values(), &[o[0], o[1]], 0))
        }
        _ => None,
    }
}

fn list_texts<'a>(values: &'a ArrayRef, offsets: &[i32], i: usize) -> Vec<&'a str> {
    let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
    (a..b)
        .filter(|&j| !values.is_null(j))
        .filter_map(|j| match values.data_type() {
            DataType::Utf8 => Some(values.as_string::<i32>().value(j)),
            DataType::LargeUtf8 => Some(values.as_string::<i64>().value(j)),
            _ => None,
        })
        .collect()
}

/// Rows below which an index build tokenizes on one thread.
const PARALLEL_BUILD_ROWS: usize = 20_000;

/// Rows of one fragment a build thread takes.
type Piece<'a> = (&'a LoadedFragment, Range<usize>);

/// One segment of the live rows of column `col` in the fragments `keep` accepts, tokenized by
/// up to one thread per core (each builds a segment of its share of the rows, then they are
/// joined).
fn segment_of(
    snap: &Snapshot,
    col: usize,
    params: &FtsParams,
    analyzer: &memwal_fts::Analyzer,
    keep: &dyn Fn(u64) -> bool,
) -> Result<Segment> {
    let frags: Vec<&LoadedFragment> = snap.fragments.iter().filter(|f| keep(f.id)).collect();
    let rows: usize = frags.iter().map(|f| f.batch.num_rows()).sum();
    let threads = crate::vector::worker_threads(rows, PARALLEL_BUILD_ROWS);
    let pieces = split(&frags, rows, threads);
    if pieces.len() <= 1 {
        let all = pieces.into_iter().next().unwrap_or_default();
        return build_piece(&all, col, params.with_position, analyzer);
    }
    let parts = std::thread::scope(|s| {
        let handles: Vec<_> = pieces
            .iter()
            .map(|piece| {
                let a = analyzer.clone();
                s.spawn(move || build_piece(piece, col, params.with_position, &a))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::internal("an FTS index build thread panicked")))
            })
            .collect::<Result<Vec<_>>>()
    })?;
    Ok(Segment::concat(parts, params.with_position)?)
}

/// The segment of one thread's rows (deleted rows skipped).
fn build_piece(
    piece: &[Piece<'_>],
    col: usize,
    with_position: bool,
    analyzer: &memwal_fts::Analyzer,
) -> Result<Segment> {
    let mut b = SegmentBuilder::new(analyzer, with_position);
    for (f, range) in piece {
        let c = f.batch.column(col);
        for i in range.clone() {
            if f.deleted.contains(i as u32) {
                continue;
            }
            if let Some(texts) = texts_at(c, i) {
                b.add_texts((f.id << 32) | i as u64, texts)?;
            }
        }
    }
    Ok(b.finish()?)
}

/// The rows of `frags` (`rows` in all) cut into `pieces` runs of about equal length, in order.
fn split<'a>(frags: &[&'a LoadedFragment], rows: usize, pieces: usize) -> Vec<Vec<Piece<'a>>> {
    let per = rows.div_ceil(pieces.max(1)).max(1);
    let mut out: Vec<Vec<Piece<'a>>> = vec![Vec::new()];
    let mut room = per;
    for f in frags {
        let n = f.batch.num_rows();
        let mut at = 0;
        while at < n {
            if room == 0 {
                out.push(Vec::new());
                room = per;
            }
            let take = room.min(n - at);
            if let Some(last) = out.last_mut() {
                last.push((f, at..at + take));
            }
            at += take;
            room -= take;
        }
    }
    out
}

impl NativeTable {
    /// Builds an FTS index on column `col` of `snap` and writes its one segment.
    pub(crate) fn build_fts(
        &self,
        snap: &Snapshot,
        col: usize,
        name: String,
        params: FtsParams,
    ) -> Result<(IndexMeta, Vec<IndexFile>)> {
        let analyzer = memwal_fts::Analyzer::new(&params)?;
        let seg = segment_of(snap, col, &params, &analyzer, &|_| true)?;
        let file = fts::write_segment(self.inner.storage.as_ref(), self.dir(), &seg)?;
        let meta = IndexMeta {
            name,
            columns: vec![snap.manifest.schema.field(col).name().clone()],
            index_type: IndexType::Fts.as_str().into(),
            distance_type: None,
            dimension: 0,
            num_sub_vectors: 0,
            num_bits: 0,
            params: fts::params_map(&params)?,
            files: vec![file.clone()],
            fragment_ids: snap.fragments.iter().map(|f| f.id).collect(),
            created_at_ms: Some(crate::manifest::now_ms()),
        };
        Ok((meta, vec![file]))
    }

    /// The files of an FTS index with the rows of `fresh` fragments added as a new segment and
    /// rows gone since (deleted, or in fragments no longer in `snap`) dropped from the segments
    /// holding them; returns every file and the ones written.
    pub(crate) fn fold_fts(
        &self,
        snap: &Snapshot,
        meta: &IndexMeta,
        text: &TextIndex,
        fresh: &HashSet<u64>,
    ) -> Result<(Vec<IndexFile>, Vec<IndexFile>)> {
        let storage = self.inner.storage.as_ref();
        let live = |id: u64| {
            snap.fragment(id >> 32)
                .is_some_and(|f| !f.deleted.contains((id & 0xffff_ffff) as u32))
        };
        let old: Vec<&IndexFile> = meta
            .files
            .iter()
            .filter(|f| f.path.ends_with(fts::SEGMENT_SUFFIX))
            .collect();
        let (mut all, mut written) = (Vec::new(), Vec::new());
        let out = (|| -> Result<()> {
            for (seg, file) in text.segments.iter().zip(old) {
                if seg.row_ids().iter().all(|&r| live(r)) {
                    all.push(file.clone());
                    continue;
                }
                let kept = seg.remapped(&|r| live(r).then_some(r))?;
                let f = fts::write_segment(storage, self.dir(), &kept)?;
                written.push(f.clone());
                all.push(f);
            }
            if !fresh.is_empty() {
                let col = snap
                    .manifest
                    .schema
                    .index_of(&meta.columns[0])
                    .map_err(|_| {
                        Error::invalid(format!("FTS index {:?}: its column is gone", meta.name))
                    })?;
                let seg = segment_of(snap, col, &text.params, &text.analyzer, &|id| {
                    fresh.contains(&id)
                })?;
                let f = fts::write_segment(storage, self.dir(), &seg)?;
                written.push(f.clone());
                all.push(f);
            }
            Ok(())
        })();
        if let Err(e) = out {
            crate::index::store::remove(storage, self.dir(), &written);
            return Err(e);
        }
        Ok((all, written))
    }
}

/// The segments of `text` with row ids moved by `map` (a compaction), written anew.
pub(crate) fn remap_fts(
    storage: &dyn crate::storage::Storage,
    dir: &str,
    text: &TextIndex,
    map: &dyn Fn(u64) -> Option<u64>,
) -> Result<Vec<IndexFile>> {
    let mut files = Vec::new();
    for seg in &text.segments {
        match seg
            .remapped(map)
            .map_err(Error::from)
            .and_then(|s| fts::write_segment(storage, dir, &s))
        {
            Ok(f) => files.push(f),
            Err(e) => {
                crate::index::store::remove(storage, dir, &files);
                return Err(e);
            }
        }
    }
    Ok(files)
}
