/**
 * `Query` (a scan) and `VectorQuery` (nearest neighbours), with the names of
 * @lancedb/lancedb 0.39: `tbl.query().where(...).limit(n)`,
 * `tbl.search(v)` / `tbl.vectorSearch(v)` / `tbl.query().nearestTo(v)` then
 * `.distanceType("cosine").where(...).limit(k).toArray()`. Every argument is
 * checked here, by name; the engine checks the rest (the vector column,
 * dimensions) against the table and names what is wrong.
 */
import { Table as ArrowTable, RecordBatch, type Schema } from "apache-arrow";
import { bool, count, str, strList } from "./args";
import { fromBuffer, rowsToTable } from "./arrow";
import { call, callReworded, invalid, notSupported, QUERY_REWORDS } from "./errors";
import { checkExecution, type QueryExecutionOptions, withExecution } from "./execution";
import { type FullTextQuery, type FullTextSearchOptions, fullTextBody } from "./fts";
import type { NativeQueryOptions, NativeTable } from "./native";
import { type Reranker, RRFReranker } from "./rerankers";

// 0.39 defines the full-text query classes in its `query` module; code importing them from there finds them here.
export {
  BooleanQuery,
  BoostQuery,
  FullTextQueryType,
  instanceOfFullTextQuery,
  MatchQuery,
  MultiMatchQuery,
  Occur,
  Operator,
  PhraseQuery,
} from "./fts";

/** A query vector: numbers, or a typed array of floats. */
export type IntoVector = number[] | Float32Array | Float64Array;

/** How `_distance` is measured (L2 is the squared distance). */
export type DistanceType = "l2" | "cosine" | "dot" | "hamming";

function vectorOf(name: string, v: unknown): number[] {
  if (!(Array.isArray(v) || v instanceof Float32Array || v instanceof Float64Array)) {
    throw invalid(`${name} must be an array of numbers, a Float32Array or a Float64Array, got ${typeof v}`);
  }
  const out = Array.from(v as ArrayLike<unknown>, (x, i) => {
    if (typeof x !== "number") throw invalid(`${name}[${i}] must be a number, got ${typeof x}`);
    if (!Number.isFinite(x)) throw invalid(`${name}[${i}] is ${x}: query vectors must be finite`);
    return x;
  });
  if (out.length === 0) throw invalid(`${name} is empty`);
  return out;
}

function finiteOrUndefined(name: string, v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || Number.isNaN(v)) throw invalid(`${name} must be a number, got ${String(v)}`);
  return v;
}

/** One sort key of {@link Query.orderBy} (as @lancedb/lancedb's ColumnOrdering). */
export interface ColumnOrdering {
  columnName: string;
  ascending?: boolean;
  nullsFirst?: boolean;
}

/** What both query kinds share: filter, projection, paging, running. */
abstract class QueryBase<Self> {
  protected opts: NativeQueryOptions = {};

  /** @internal */
  constructor(protected readonly table: NativeTable) {}

  private self(): Self {
    return this as unknown as Self;
  }

  /** Only rows matching this SQL filter; called again, rows matching every filter given (as @lancedb/lancedb, AND). */
  where(filter: string): Self {
    const f = str("where(filter)", filter);
    this.opts.filter = this.opts.filter === undefined ? f : `(${this.opts.filter}) AND (${f})`;
    return this.self();
  }
  /**
   * A full-text search (as 0.39's `fullTextSearch`): rows matching `query` (text, or a MatchQuery, PhraseQuery,
   * BoostQuery, MultiMatchQuery, BooleanQuery) in the FTS-indexed `columns` (all of them when omitted), ranked by
   * BM25 `_score`. Text in double quotes is a phrase.
   */
  fullTextSearch(query: string | FullTextQuery, options?: Partial<FullTextSearchOptions>): Self {
    this.opts.fullText = fullTextBody("fullTextSearch", query, options);
    return this.self();
  }
  /** Alias of `where`. */
  filter(filter: string): Self {
    return this.where(filter);
  }
  /**
   * What to return, as @lancedb/lancedb: a column name, a list of names, or `{ alias: "SQL" }` (a Record or a
   * Map, in its order) computing each column from the row (`{ y: "id * 2", name: "lower(name)" }`).
   */
  select(columns: string[] | Map<string, string> | Record<string, string> | string): Self {
    this.opts.columns = undefined;
    this.opts.projections = undefined;
    if (typeof columns === "string") {
      this.opts.columns = [columns];
    } else if (Array.isArray(columns)) {
      this.opts.columns = strList("select(columns)", columns);
    } else if (columns instanceof Map || (typeof columns === "object" && columns !== null)) {
      const entries = columns instanceof Map ? [...columns.entries()] : Object.entries(columns);
      const pairs = entries.map(([alias, sql]) => ({
        alias: str("select(columns) alias", alias),
        sql: str(`select(columns).${String(alias)}`, sql),
      }));
      if (pairs.every((p) => p.alias === p.sql)) this.opts.columns = pairs.map((p) => p.alias);
      else this.opts.projections = pairs;
    } else {
      throw invalid(`select(columns) must be a name, a list of names or { alias: sql }, got ${String(columns)}`);
    }
    return this.self();
  }
  /**
   * Sorts the rows before offset and limit, as @lancedb/lancedb: `{ columnName, ascending?, nullsFirst? }` or a
   * list of them (ascending by default; nulls last when ascending, first when descending). Not for vector queries.
   */
  orderBy(ordering: ColumnOrdering | ColumnOrdering[]): Self {
    const list = Array.isArray(ordering) ? ordering : [ordering];
    this.opts.orderBy = list.map((o, i) => {
      const x = (o ?? {}) as unknown as Record<string, unknown>;
      const ascending = x.ascending === undefined ? true : x.ascending;
      if (typeof ascending !== "boolean") throw invalid(`orderBy[${i}].ascending must be a boolean`);
      const nullsFirst = x.nullsFirst === undefined ? !ascending : x.nullsFirst;
      if (typeof nullsFirst !== "boolean") throw invalid(`orderBy[${i}].nullsFirst must be a boolean`);
      return { columnName: str(`orderBy[${i}].columnName`, x.columnName), ascending, nullsFirst };
    });
    return this.self();
  }
  /** At most `n` rows (for a vector query: `k`, 10 by default). */
  limit(n: number): Self {
    this.opts.limit = count("limit(n)", n);
    return this.self();
  }
  /** Skip `n` rows first. */
  offset(n: number): Self {
    this.opts.offset = count("offset(n)", n);
    return this.self();
  }
  /**
   * As @lancedb/lancedb 0.39's `useLsm`: whether the read goes through the MemWAL. On a served table `true` (and
   * the default) reads the rows its MemWAL buffers too, and `false` reads the base table only (rows acknowledged
   * into the MemWAL but not yet flushed are not seen). A local table has no MemWAL, so `false` is what it does, and
   * `true` is accepted only once it records a write spec (its upserts then commit at once, so the two read the same
   * rows), as 0.39 refuses it on a table without one.
   */
  useLsm(enable: boolean): Self {
    this.lsm = bool("useLsm(enable)", enable);
    return this.self();
  }
  private lsm: boolean | undefined;
  /** The options to run with, once `useLsm` is checked against the table. */
  private async prepared(): Promise<NativeQueryOptions> {
    if (this.lsm === true) {
      const stats = await call(() => this.table.getLsmStats(false));
      const hasMemWal = stats !== null && stats !== undefined;
      // A local table with a recorded write spec commits its upserts at once: its base holds every row.
      if (!hasMemWal && (await call(() => this.table.lsmWriteSpec())) == null) {
        throw notSupported(
          "useLsm(true): use_lsm(true) was set but the table has no MemWAL write spec; install one with setLsmWriteSpec or leave useLsm unset (memwal's MemWAL is a served table's)",
        );
      }
    }
    const opts = await this.runOptions();
    // useLsm(false): the base table only (a served table's buffered rows skipped; a local table's are all in it).
    return this.lsm === false ? { ...opts, baseOnly: true } : opts;
  }
  /**
   * As 0.39's `fastSearch`: a vector or full-text search answers only the rows its index covers (rows written
   * since the index was built or last optimized, a served table's buffered rows among them, are skipped and, for a
   * full-text search, not counted in its statistics; a vector search of a column without an index answers no
   * rows, as 0.39's). Faster, and may miss new rows. No effect on a plain scan.
   */
  fastSearch(): Self {
    this.opts.fastSearch = true;
    return this.self();
  }
  /**
   * Filter after ranking (as 0.39's `VectorQuery.postfilter`; memwal also takes it on a full-text `Query`, as the
   * wire and the Python client do): the filter keeps what passes of the best `offset + limit` rows, so fewer rows
   * may come back. A hybrid query postfilters both of its searches. No effect on a plain scan.
   */
  postfilter(): Self {
    this.opts.prefilter = false;
    return this.self();
  }
  /** Add a `_rowid` column (UInt64; stable for a row within a version). */
  withRowId(): Self {
    this.opts.withRowId = true;
    return this.self();
  }
  /**
   * How the query would run, as readable text (as @lancedb/lancedb's `explainPlan`; not DataFusion's plan
   * format): what is read, which index narrows or ranks, what is searched exactly, ordering, paging, output.
   */
  async explainPlan(verbose = false): Promise<string> {
    const opts = await this.prepared();
    return callReworded(QUERY_REWORDS, () => this.table.explainPlan(opts, verbose));
  }
  /** Runs the query and returns its plan with the rows it returned and the time it took. */
  async analyzePlan(): Promise<string> {
    const opts = await this.prepared();
    return callReworded(QUERY_REWORDS, () => this.table.analyzePlan(opts));
  }
  /**
   * The Arrow schema the query's answer has (projection, `_rowid`, `_distance`, `query_index` included), as
   * @lancedb/lancedb 0.39's `outputSchema`: the query is checked and run for no rows (a text query's vector is
   * computed first). Unknown columns are refused as running it would be.
   */
  async outputSchema(): Promise<Schema> {
    const opts = await this.prepared();
    // A hybrid query's answer is made here: its schema is that of a fused answer of no rows.
    if ((opts.vectors?.length ?? 0) > 0 && opts.fullText !== undefined) return (await this.hybrid(opts)).slice(0, 0).schema;
    // A vector query needs k >= 1: it asks for one row of none (a filter no row passes, AND the query's own).
    const none =
      opts.vectors === undefined
        ? { ...opts, limit: 0, offset: undefined }
        : { ...opts, limit: 1, offset: undefined, filter: opts.filter === undefined ? "false" : `(${opts.filter}) AND (false)` };
    const buf = await callReworded(QUERY_REWORDS, () => this.table.query(none));
    return fromBuffer(buf).schema;
  }
  /** @internal The reranker of a hybrid query (RRF when none is given). */
  protected reranker?: Reranker;
  /**
   * A hybrid query (vectors and a full-text query): both searches run with `_rowid`, the limit (10 when none is
   * given), the offset, the filter, `postfilter` and `fastSearch` (so an offset skips rows of each search, not of
   * the fused answer), and the reranker fuses them client-side into at most `limit` rows, as 0.39 does.
   */
  private async hybrid(opts: NativeQueryOptions): Promise<ArrowTable> {
    const limit = opts.limit ?? 10;
    const { fullText, ...vec } = opts;
    const fts: NativeQueryOptions = {
      filter: opts.filter,
      columns: opts.columns,
      projections: opts.projections,
      fullText,
      prefilter: opts.prefilter,
      fastSearch: opts.fastSearch,
      limit,
      offset: opts.offset,
      withRowId: true,
    };
    const run = (o: NativeQueryOptions) => callReworded(QUERY_REWORDS, () => this.table.query(o)).then(fromBuffer);
    const [v, f] = await Promise.all([run({ ...vec, limit, withRowId: true }), run(fts)]);
    const reranker = this.reranker ?? (await RRFReranker.create());
    const q = JSON.parse(fullText ?? "{}").query;
    const batch = await reranker.rerankHybrid(typeof q === "string" ? q : JSON.stringify(q), oneBatch(v), oneBatch(f));
    let t = new ArrowTable(batch).slice(0, limit);
    if (!opts.withRowId) t = t.select(t.schema.fields.map((x) => x.name).filter((n) => n !== "_rowid"));
    return t;
  }
  /** Runs the query; `options` as 0.39's (a deadline, a batch size), see {@link QueryExecutionOptions}. */
  async toArrow(options?: Partial<QueryExecutionOptions>): Promise<ArrowTable> {
    const exec = checkExecution("toArrow(options)", options);
    return withExecution(exec, async () => {
      const opts = await this.prepared();
      if ((opts.vectors?.length ?? 0) > 0 && opts.fullText !== undefined) return this.hybrid(opts);
      const buf = await callReworded(QUERY_REWORDS, () => this.table.query(opts));
      return fromBuffer(buf);
    });
  }
  /** The options the query runs with (a text query's vector is computed here). */
  protected async runOptions(): Promise<NativeQueryOptions> {
    return { ...this.opts };
  }
  /** Runs the query and returns plain objects (`options` as {@link toArrow}'s). */
  async toArray(options?: Partial<QueryExecutionOptions>): Promise<Record<string, unknown>[]> {
    const exec = checkExecution("toArray(options)", options);
    // Plain objects, each with a toJSON (not enumerable) as apache-arrow's rows have: code that calls
    // `row.toJSON()` on @lancedb/lancedb's answers runs unchanged.
    return (await this.toArrow(exec)).toArray().map((r) => {
      const row: Record<string, unknown> = { ...r.toJSON() };
      Object.defineProperty(row, "toJSON", { value: () => ({ ...row }), enumerable: false, writable: true, configurable: true });
      return row;
    });
  }
  /** The answer's record batches, one by one. */
  async *[Symbol.asyncIterator](): AsyncGenerator<RecordBatch> {
    for (const b of (await this.toArrow()).batches) yield b;
  }
}

/** One record batch of `t` (an empty one of its schema when it has none). */
function oneBatch(t: ArrowTable): RecordBatch {
  if (t.batches.length === 1) return t.batches[0];
  if (t.batches.length === 0 || t.numRows === 0) return new RecordBatch(t.schema);
  const rows = t.toArray().map((r) => r.toJSON() as Record<string, unknown>);
  return rowsToTable(rows, t.schema).batches[0];
}

/** A scan with filter, projection and paging. */
export class Query extends QueryBase<Query> {
  /** As 0.39's `nearestToText`: a full-text search of `query`, in `columns` when given (see {@link fullTextSearch}). */
  nearestToText(query: string | FullTextQuery, columns?: string[]): Query {
    return this.fullTextSearch(query, columns === undefined ? undefined : { columns });
  }

  /** Turns this into a vector query for the rows nearest to `vector`. */
  nearestTo(vector: IntoVector): VectorQuery {
    const q = new VectorQuery(this.table, [vectorOf("nearestTo(vector)", vector)]);
    Object.assign(q.options(), this.opts);
    return q;
  }
}

/** A text query's vector and column, computed when the query runs (given the column the query names, if any). */
export type PendingVector = (column: string | undefined) => Promise<{ vector: number[]; column: string }>;

/** Nearest-neighbour search: rows ranked by `_distance` (exact search). */
export class VectorQuery extends QueryBase<VectorQuery> {
  /** @internal The embedding of `search("text")`, first of the query's vectors. */
  pending?: PendingVector;
  /** @internal `search(text)` with "auto": a full-text search instead when the table has no embedding function. */
  autoFullText?: { text: string; columns?: string | string[]; useText: () => Promise<boolean> };

  /** @internal */
  constructor(table: NativeTable, vectors: number[][]) {
    super(table);
    this.opts.vectors = vectors;
  }

  protected async runOptions(): Promise<NativeQueryOptions> {
    if (this.pending === undefined) return { ...this.opts };
    if (this.autoFullText !== undefined && (await this.autoFullText.useText())) {
      const { vectors: _v, column: _c, distanceType: _d, ...rest } = this.opts;
      if ((this.opts.vectors ?? []).length > 0)
        throw invalid("addQueryVector: search(text) is a full-text search on a table without an embedding function");
      const { text, columns } = this.autoFullText;
      return { ...rest, fullText: fullTextBody("search(query)", text, { columns }) };
    }
    // Outside call(): an error of the caller's embedding function reaches the caller as thrown.
    const { vector, column } = await this.pending(this.opts.column);
    return { ...this.opts, vectors: [vector, ...(this.opts.vectors ?? [])], column };
  }

  /** @internal */
  options(): NativeQueryOptions {
    return this.opts;
  }

  /**
   * How a hybrid query (`nearestTo(v).fullTextSearch(text)`) fuses its two answers (as 0.39's `rerank`):
   * `await RRFReranker.create()` or any object with `rerankHybrid(query, vecResults, ftsResults)`.
   */
  rerank(reranker: Reranker): this {
    if (reranker === null || typeof reranker !== "object" || typeof reranker.rerankHybrid !== "function") {
      throw invalid("rerank(reranker) needs a reranker with rerankHybrid (await RRFReranker.create())");
    }
    this.reranker = reranker;
    return this;
  }
  /** The vector column (needed when several have the query's dimension). */
  column(name: string): this {
    this.opts.column = str("column(name)", name);
    return this;
  }
  /**
   * `"l2"` (default, squared), `"cosine"` (1 - cos), `"dot"` (1 - x.y), or `"hamming"` (bits that differ: binary
   * vectors, a fixed-size list of uint8, where it is the default and the only one).
   */
  distanceType(type: DistanceType): this {
    const t = str("distanceType(type)", type);
    if (!["l2", "cosine", "dot", "hamming"].includes(t.toLowerCase())) {
      throw invalid(`distanceType(type) must be "l2", "cosine", "dot" or "hamming", got ${JSON.stringify(type)}`);
    }
    this.opts.distanceType = t.toLowerCase();
    return this;
  }
  /** Only rows with `lower <= _distance < upper` (either may be omitted). */
  distanceRange(lowerBound?: number, upperBound?: number): this {
    this.opts.lowerBound = finiteOrUndefined("distanceRange(lowerBound)", lowerBound);
    this.opts.upperBound = finiteOrUndefined("distanceRange(upperBound)", upperBound);
    return this;
  }
  /** Another query vector: each gets its own k rows, told apart by `query_index`. */
  addQueryVector(vector: IntoVector): this {
    const v = vectorOf("addQueryVector(vector)", vector);
    this.opts.vectors = [...(this.opts.vectors ?? []), v];
    return this;
  }
  /** Skip any vector index: rank every row exactly. */
  bypassVectorIndex(): this {
    this.opts.bypassVectorIndex = true;
    return this;
  }
  /** IVF partitions to probe (20 by default): the minimum and the maximum at once, as 0.39's. */
  nprobes(n: number): this {
    this.opts.nprobes = count("nprobes(n)", n, 0xffffffff);
    this.opts.minimumNprobes = undefined;
    this.opts.maximumNprobes = undefined;
    return this;
  }
  /** The fewest partitions every indexed search probes (20); more only up to `maximumNprobes`. 0.39's checks. */
  minimumNprobes(n: number): this {
    const v = count("minimumNprobes(n)", n, 0xffffffff);
    if (v === 0) throw invalid("Invalid input, minimum_nprobes must be greater than 0");
    this.splitNprobes();
    const max = this.opts.maximumNprobes;
    if (max !== undefined && max !== 0 && v > max) {
      throw invalid("Invalid input, minimum_nprobes must be less than or equal to maximum_nprobes");
    }
    this.opts.minimumNprobes = v;
    return this;
  }
  /** The most partitions a search probes when the minimum found too few rows (0: no maximum). 0.39's checks. */
  maximumNprobes(n: number): this {
    const v = count("maximumNprobes(n)", n, 0xffffffff);
    this.splitNprobes();
    const min = this.opts.minimumNprobes ?? 20;
    if (v !== 0 && v < min) {
      throw invalid("Invalid input, maximum_nprobes must be greater than or equal to minimum_nprobes");
    }
    this.opts.maximumNprobes = v;
    return this;
  }
  /** `nprobes(n)` then a minimum or a maximum: the other bound stays `n` (0.39 keeps both in one request). */
  private splitNprobes(): void {
    const n = this.opts.nprobes;
    if (n === undefined) return;
    this.opts.minimumNprobes ??= n;
    this.opts.maximumNprobes ??= n;
    this.opts.nprobes = undefined;
  }
  /** HNSW search width of an IVF_HNSW_SQ index (no effect on IVF_FLAT / IVF_PQ / IVF_RQ, as the README says). */
  ef(n: number): this {
    this.opts.ef = count("ef(n)", n, 0xffffffff);
    return this;
  }
  /** Re-rank `k * factor` candidates of an IVF_PQ / IVF_RQ / IVF_HNSW_SQ index by their exact distance. */
  refineFactor(n: number): this {
    this.opts.refineFactor = count("refineFactor(n)", n, 0xffffffff);
    return this;
  }
}

/** Starts a vector query from one vector or a list of vectors. */
export function vectorQuery(table: NativeTable, v: IntoVector | IntoVector[]): VectorQuery {
  const many = Array.isArray(v) && v.length > 0 && typeof v[0] !== "number";
  const list = many ? (v as IntoVector[]) : [v as IntoVector];
  if (list.length === 0) throw invalid("vectorSearch(vectors) needs at least one vector");
  return new VectorQuery(
    table,
    list.map((x, i) => vectorOf(many ? `vectorSearch(vectors)[${i}]` : "search(vector)", x)),
  );
}

/** A vector query whose first vector is a text's embedding, computed when the query runs. */
export function embeddedQuery(table: NativeTable, pending: PendingVector): VectorQuery {
  const q = new VectorQuery(table, []);
  q.pending = pending;
  return q;
}
