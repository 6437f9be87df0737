/**
 * Rerankers of hybrid queries (`query().nearestTo(v).fullTextSearch(text).rerank(reranker)`), as
 * @lancedb/lancedb 0.39's `rerankers`: a hybrid query runs its vector search and its full-text search (each
 * with `_rowid`) and the reranker fuses the two answers client-side into one, scored by `_relevance_score`.
 */
import { Table as ArrowTable, Field, Float32, RecordBatch, Schema, type Vector } from "apache-arrow";
import { show } from "./args";
import { rowsToTable } from "./arrow";
import { invalid } from "./errors";

/** What `rerank` takes: anything with 0.39's `rerankHybrid`. */
export interface Reranker {
  rerankHybrid(query: string, vecResults: RecordBatch, ftsResults: RecordBatch): Promise<RecordBatch>;
}

function plain(v: unknown): unknown {
  if (v !== null && typeof v === "object" && typeof (v as Vector).toArray === "function" && "length" in (v as object)) {
    return Array.from(v as Iterable<unknown>, plain);
  }
  return v;
}

/** Reciprocal Rank Fusion: a row scores the sum over both answers of `1 / (k + rank)` (rank from 0). */
export class RRFReranker {
  private constructor(private readonly k: number) {}

  /** A reranker with constant `k` (60 by default), as 0.39's (async) `RRFReranker.create`. */
  static async create(k = 60): Promise<RRFReranker> {
    if (typeof k !== "number" || !Number.isFinite(k) || k <= 0) throw invalid(`RRFReranker k must be a number > 0, got ${show(k)}`);
    return new RRFReranker(k);
  }

  /**
   * The rows of both answers (told apart by `_rowid`, which both must carry), best first, with
   * `_relevance_score` (Float32) instead of `_distance` and `_score`.
   */
  async rerankHybrid(_query: string, vecResults: RecordBatch, ftsResults: RecordBatch): Promise<RecordBatch> {
    const lists = [new ArrowTable(vecResults), new ArrowTable(ftsResults)];
    const rows = new Map<string, { row: Record<string, unknown>; score: number; first: number }>();
    let order = 0;
    for (const t of lists) {
      if (t.numRows > 0 && t.getChild("_rowid") === null) throw invalid("RRFReranker: both answers need a _rowid column");
      for (let rank = 0; rank < t.numRows; rank += 1) {
        const r = t.get(rank);
        if (r === null) continue;
        const id = String(r._rowid);
        const hit = rows.get(id);
        if (hit !== undefined) {
          hit.score += 1 / (this.k + rank);
          continue;
        }
        const row: Record<string, unknown> = {};
        for (const f of t.schema.fields) {
          if (f.name !== "_distance" && f.name !== "_score") row[f.name] = plain(r[f.name]);
        }
        rows.set(id, { row, score: 1 / (this.k + rank), first: order++ });
      }
    }
    const fused = [...rows.values()].sort((a, b) => b.score - a.score || a.first - b.first);
    const base = lists[0].schema.fields.filter((f) => f.name !== "_distance" && f.name !== "_score");
    const schema = new Schema([...base, new Field("_relevance_score", new Float32(), true)]);
    const table = rowsToTable(
      fused.map((x) => ({ ...x.row, _relevance_score: x.score })),
      schema,
    );
    return table.batches.length === 1 ? table.batches[0] : new RecordBatch(schema);
  }
}
