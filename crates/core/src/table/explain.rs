//! `explainPlan` / `analyzePlan`: how a query will run over a version, as
//! readable text (what is scanned, which index narrows or ranks, what is
//! searched exactly, ordering, paging, projection). The request is checked
//! as a query would check it, so a plan is only given for a valid query.

use std::fmt::Write;

use super::scan::{answer_schema, RowFilter};
use super::Snapshot;
use crate::error::Result;
use crate::index::IndexType;
use crate::query::OrderBy;
use crate::query::QueryRequest;
use crate::vector::plan::VectorPlan;

/// Rows not yet in the table's files (a served table's MemWAL memtables),
/// for the plan to mention.
#[derive(Debug, Clone, Copy, Default)]
pub struct Buffered {
    /// Rows buffered.
    pub rows: u64,
    /// Memtables holding them.
    pub memtables: u64,
}

/// The plan of `req` over `snap` as text (`verbose`: per-fragment and
/// per-index detail).
pub fn explain(
    name: &str,
    snap: &Snapshot,
    req: &QueryRequest,
    verbose: bool,
    buffered: Option<Buffered>,
) -> Result<String> {
    super::finish::check(req)?;
    let schema = snap.schema();
    let out_schema = answer_schema(&schema, req)?;
    let m = &snap.manifest;
    let mut s = String::new();
    let live: u64 = m.num_rows();
    let deleted: u64 = m.fragments.iter().map(|f| f.num_deleted).sum();
    let _ = writeln!(s, "memwal plan: table '{name}' version {}", m.version);
    let _ = writeln!(
        s,
        "  read: {} fragment(s), {live} live row(s) ({deleted} deleted row(s) skipped)",
        m.fragments.len()
    );
    if verbose {
        for f in &m.fragments {
            let _ = writeln!(
                s,
                "    fragment {}: {} row(s), {} deleted, file {}",
                f.id, f.physical_rows, f.num_deleted, f.file
            );
        }
    }
    if let Some(b) = buffered {
        let _ = writeln!(
            s,
            "  MemWAL: {} buffered row(s) in {} memtable(s), read with the table (a buffered row replaces the stored row of its key)",
            b.rows, b.memtables
        );
    }
    match &req.nearest {
        Some(_) => vector_lines(&mut s, snap, req, verbose)?,
        None => filter_lines(&mut s, snap, req)?,
    }
    order_lines(&mut s, &req.order_by, req.nearest.is_some());
    if req.offset.is_some() || req.limit.is_some() {
        let _ = writeln!(
            s,
            "  page: offset {}, limit {}",
            req.offset.unwrap_or(0),
            req.limit.map_or("none".to_string(), |l| l.to_string())
        );
    }
    let cols: Vec<String> = match &req.projections {
        Some(p) => p.iter().map(|(a, e)| format!("{a} = {e}")).collect(),
        None => out_schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect(),
    };
    let _ = writeln!(s, "  output: {}", cols.join(", "));
    Ok(s)
}

fn filter_lines(s: &mut String, snap: &Snapshot, req: &QueryRequest) -> Result<()> {
    if super::finish::virtual_filter(req) {
        // A take query (takeRowIds / takeOffsets): see `finish::run`.
        let sql = req.filter.as_deref().unwrap_or_default();
        let _ = writeln!(
            s,
            "  filter: {sql}\n    every live row is read with its row id and numbered in scan order (_rowoffset), then the filter is tested"
        );
        return Ok(());
    }
    let Some(f) = RowFilter::new(snap, req.filter.as_deref())? else {
        let _ = writeln!(s, "  filter: none (every live row)");
        return Ok(());
    };
    let sql = req.filter.as_deref().unwrap_or_default();
    let how = if f.narrowed() {
        "a BTREE index picks the candidate rows of the fragments it covers; the filter is then tested on them (and on every row of fragments it does not cover)"
    } else {
        "every live row is tested (no scalar index narrows it)"
    };
    let _ = writeln!(s, "  filter: {sql}\n    {how}");
    Ok(())
}

fn vector_lines(s: &mut String, snap: &Snapshot, req: &QueryRequest, verbose: bool) -> Result<()> {
    let schema = snap.schema();
    let plan = VectorPlan::new(&schema, req)?;
    let col = schema.field(plan.column).name();
    let _ = writeln!(
        s,
        "  vector search: column '{col}' (dimension {}), {} query vector(s), k {}, distance {}",
        plan.dim / crate::vector::plan::width(plan.element, 1),
        plan.vectors.len(),
        plan.k,
        plan.distance.as_str()
    );
    if let Some(f) = &req.filter {
        let when = if plan.prefilter {
            "before ranking (prefilter)"
        } else {
            "after ranking (postfilter)"
        };
        let _ = writeln!(s, "    filter {when}: {f}");
    }
    let index = snap.indices.iter().find(|i| {
        i.meta.columns.first().map(String::as_str) == Some(col.as_str())
            && !IndexType::is_sorted_scalar(&i.meta.index_type)
            && i.meta.index_type != IndexType::Fts.as_str()
    });
    let t = &plan.tuning;
    match index {
        Some(ix) if !t.bypass_vector_index => {
            let covered = super::indices::indexed_rows(snap, ix);
            let rest = snap.manifest.num_rows() - covered;
            let _ = writeln!(
                s,
                "    index {} '{}': {covered} row(s), candidates re-ranked with exact distances (refine factor {})",
                ix.meta.index_type,
                ix.meta.name,
                t.refine_factor.unwrap_or(1)
            );
            let _ = writeln!(
                s,
                "    {rest} row(s) not in the index: {}",
                if t.fast_search {
                    "skipped (fastSearch)"
                } else {
                    "searched exactly"
                }
            );
            if verbose {
                let _ = writeln!(
                    s,
                    "    tuning: nprobes {:?}, minimum {:?}, maximum {:?}, ef {:?}",
                    t.nprobes, t.minimum_nprobes, t.maximum_nprobes, t.ef
                );
            }
        }
        Some(_) => {
            let _ = writeln!(s, "    exact search of every row (bypassVectorIndex)");
        }
        None => {
            let _ = writeln!(
                s,
                "    exact search of every row (no vector index on '{col}')"
            );
        }
    }
    Ok(())
}

fn order_lines(s: &mut String, order: &[OrderBy], vector: bool) {
    if order.is_empty() {
        let what = if vector { "by distance" } else { "scan order" };
        let _ = writeln!(s, "  order: {what}");
        return;
    }
    let keys: Vec<String> = order
        .iter()
        .map(|o| {
            format!(
                "{} {} NULLS {}",
                o.column,
                if o.ascending { "ASC" } else { "DESC" },
                if o.nulls_first { "FIRST" } else { "LAST" }
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "  order: {} (every matching row is sorted, then paged)",
        keys.join(", ")
    );
}
