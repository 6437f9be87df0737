/**
 * `permutationBuilder(table)`, as @lancedb/lancedb 0.39: a table of the source's row ids (`row_id`) with the split
 * each belongs to (`split_id`), in the order a data loader reads them. Splits are random, by hash, sequential or
 * computed by SQL; rows may be shuffled (in clumps) and filtered first. The result is a table of its own: in a new
 * in-memory database (named `permutation`), or created in the connection given to `persist`.
 */
import { Table as ArrowTable, Field, makeData, RecordBatch, Schema, Struct, Uint64, type Vector, vectorFromArray } from "apache-arrow";
import { checkOptions, count, str, strList } from "./args";
import { invalid } from "./errors";
import type { Table } from "./table";

/** What `splitRandom` takes (0.39's `SplitRandomOptions`): one of ratios, counts or fixed (a number of equal splits). */
export interface SplitRandomOptions {
  ratios?: number[];
  counts?: number[];
  fixed?: number;
  seed?: number;
  clumpSize?: number;
  splitNames?: string[];
}

/** What `splitHash` takes: rows go to a split by a hash of these columns, weighted; `discardWeight` drops a share. */
export interface SplitHashOptions {
  columns: string[];
  splitWeights: number[];
  discardWeight?: number;
  splitNames?: string[];
}

/** What `splitSequential` takes: as `splitRandom`, in the source's order. */
export interface SplitSequentialOptions {
  ratios?: number[];
  counts?: number[];
  fixed?: number;
  splitNames?: string[];
}

/** What `splitCalculated` takes: `split_id` is this SQL expression over the row. */
export interface SplitCalculatedOptions {
  calculation: string;
  splitNames?: string[];
}

/** What `shuffle` takes: a seed (random when omitted) and how many consecutive rows move together. */
export interface ShuffleOptions {
  seed?: number;
  clumpSize?: number;
}

/** Where a connection can create the permutation table (memwal's Connection). */
export interface Creator {
  createTable(name: string, data: ArrowTable): Promise<Table>;
}

type Sizes = { ratios?: number[]; counts?: number[]; fixed?: number };
type Split =
  | { kind: "random"; sizes: Sizes; seed?: number; clumpSize?: number }
  | { kind: "sequential"; sizes: Sizes }
  | { kind: "hash"; columns: string[]; weights: number[]; discard: number }
  | { kind: "calculated"; calculation: string };

/** A seeded generator of floats in [0, 1) (mulberry32): the same seed gives the same permutation. */
function rng(seed: number | undefined): () => number {
  let a = (seed ?? Math.floor(Math.random() * 2 ** 32)) >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** `items` shuffled in clumps of `clump` consecutive items (Fisher-Yates over the clumps). */
function shuffled<T>(items: T[], seed: number | undefined, clump = 1): T[] {
  const clumps: T[][] = [];
  for (let i = 0; i < items.length; i += clump) clumps.push(items.slice(i, i + clump));
  const next = rng(seed);
  for (let i = clumps.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [clumps[i], clumps[j]] = [clumps[j], clumps[i]];
  }
  return clumps.flat();
}

/** Checks that exactly one of ratios, counts and fixed is given (0.39's message), each well formed. */
function exactlyOne(o: Sizes): void {
  const given = [o?.ratios, o?.counts, o?.fixed].filter((x) => x !== undefined && x !== null).length;
  if (given !== 1) throw invalid("Exactly one of 'ratios', 'counts', or 'fixed' must be provided");
}

/** The rest of the checks of a split's sizes, made when the builder runs (as 0.39 makes them). */
function checkSizes(name: string, o: Sizes): void {
  if (o.ratios !== undefined) {
    if (!Array.isArray(o.ratios) || o.ratios.length === 0) throw invalid(`${name}(options.ratios) must be a non-empty list of numbers`);
    for (const r of o.ratios) {
      if (typeof r !== "number" || !(r >= 0 && r <= 1)) throw invalid("Split percentages must be between 0.0 and 1.0");
    }
    if (o.ratios.reduce((a, b) => a + b, 0) > 1 + 1e-9) throw invalid("Split percentages must sum to 1.0 or less");
  }
  if (o.counts !== undefined) {
    if (!Array.isArray(o.counts) || o.counts.length === 0) throw invalid(`${name}(options.counts) must be a non-empty list of counts`);
    for (const [i, c] of o.counts.entries()) count(`${name}(options.counts)[${i}]`, c);
  }
  if (o.fixed !== undefined && count(`${name}(options.fixed)`, o.fixed) === 0) throw invalid(`${name}(options.fixed) must be at least 1`);
}

/** The size of each split of `n` rows. */
function splitSizes(o: Sizes, n: number): number[] {
  if (o.counts !== undefined) {
    const total = o.counts.reduce((a, b) => a + b, 0);
    if (total > n) throw invalid(`Split counts specified ${total} rows but only ${n} are available`);
    return o.counts;
  }
  if (o.fixed !== undefined) return Array.from({ length: o.fixed }, () => Math.floor(n / (o.fixed as number)));
  let left = n;
  return (o.ratios as number[]).map((r) => {
    const k = Math.min(left, Math.round(r * n));
    left -= k;
    return k;
  });
}

/** A stable 32-bit hash (FNV-1a) of a row's key values. */
function hashOf(values: unknown[]): number {
  const text = JSON.stringify(values, (_k, v) => (typeof v === "bigint" ? `${v}n` : v));
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Builds a permutation of a table's rows (see the module comment). */
export class PermutationBuilder {
  private split: Split | undefined;
  private shuffleOpts: ShuffleOptions | undefined;
  private filters: string[] = [];
  private names: string[] | undefined;
  private target: { connection: Creator; name: string } | undefined;
  private consumed = false;

  /** @internal */
  constructor(private readonly table: Table) {}

  /** Creates the permutation as table `tableName` of `connection` (it must not exist) rather than in memory. */
  persist(connection: Creator, tableName: string): PermutationBuilder {
    if (connection === null || typeof connection !== "object" || typeof connection.createTable !== "function") {
      throw invalid("persist(connection) must be a memwal Connection");
    }
    this.target = { connection, name: str("persist(tableName)", tableName) };
    return this;
  }

  /** Random splits: the rows shuffled (by `seed`), then cut into splits of the sizes asked; rows left over are dropped. */
  splitRandom(options: SplitRandomOptions): PermutationBuilder {
    checkOptions("splitRandom(options)", options, ["ratios", "counts", "fixed", "seed", "clumpSize", "splitNames"]);
    exactlyOne(options);
    if (options.seed !== undefined) count("splitRandom(options.seed)", options.seed, 2 ** 32 - 1);
    if (options.clumpSize !== undefined) count("splitRandom(options.clumpSize)", options.clumpSize);
    this.split = { kind: "random", sizes: options, seed: options.seed, clumpSize: options.clumpSize };
    this.setNames("splitRandom", options.splitNames);
    return this;
  }

  /** Splits by a hash of `columns`: weights are shares; rows hashed into `discardWeight`'s share are dropped. */
  splitHash(options: SplitHashOptions): PermutationBuilder {
    checkOptions("splitHash(options)", options, ["columns", "splitWeights", "discardWeight", "splitNames"]);
    const columns = strList("splitHash(options.columns)", options?.columns);
    if (!Array.isArray(options.splitWeights)) throw invalid("splitHash(options.splitWeights) must be a list of whole numbers");
    const weights = [...options.splitWeights];
    const discard = options.discardWeight ?? 0;
    this.split = { kind: "hash", columns, weights, discard };
    this.setNames("splitHash", options.splitNames);
    return this;
  }

  /** Sequential splits: as `splitRandom`, cutting the rows in the source's order. */
  splitSequential(options: SplitSequentialOptions): PermutationBuilder {
    checkOptions("splitSequential(options)", options, ["ratios", "counts", "fixed", "splitNames"]);
    exactlyOne(options);
    this.split = { kind: "sequential", sizes: options };
    this.setNames("splitSequential", options.splitNames);
    return this;
  }

  /** `split_id` computed per row by an SQL expression (its type is the expression's). */
  splitCalculated(options: SplitCalculatedOptions): PermutationBuilder {
    checkOptions("splitCalculated(options)", options, ["calculation", "splitNames"]);
    this.split = { kind: "calculated", calculation: str("splitCalculated(options.calculation)", options?.calculation) };
    this.setNames("splitCalculated", options.splitNames);
    return this;
  }

  /** Shuffles the rows of each split (by `seed`, in clumps of `clumpSize` consecutive rows). */
  shuffle(options: ShuffleOptions): PermutationBuilder {
    checkOptions("shuffle(options)", options, ["seed", "clumpSize"]);
    if (options?.seed !== undefined) count("shuffle(options.seed)", options.seed, 2 ** 32 - 1);
    if (options?.clumpSize !== undefined) count("shuffle(options.clumpSize)", options.clumpSize);
    this.shuffleOpts = { ...options };
    return this;
  }

  /** Only the rows matching this SQL filter (called again: every filter given). */
  filter(filter: string): PermutationBuilder {
    this.filters.push(str("filter(filter)", filter));
    return this;
  }

  private setNames(name: string, names: string[] | undefined): void {
    this.names = names === undefined ? undefined : strList(`${name}(options.splitNames)`, names);
  }

  /** Builds the permutation table; a builder runs once ("Builder already consumed" after). */
  async execute(): Promise<Table> {
    if (this.consumed) throw invalid("Builder already consumed");
    this.consumed = true;
    const split = this.split;
    if (split?.kind === "random" || split?.kind === "sequential")
      checkSizes(split.kind === "random" ? "splitRandom" : "splitSequential", split.sizes);
    if (split?.kind === "hash") {
      if (split.columns.length === 0) throw invalid("Hash strategy requires at least one column");
      if (split.weights.length === 0) throw invalid("splitHash(options.splitWeights) must be a non-empty list of whole numbers");
      for (const [i, w] of split.weights.entries()) count(`splitHash(options.splitWeights)[${i}]`, w);
      count("splitHash(options.discardWeight)", split.discard);
      if (split.weights.every((w) => w === 0)) throw invalid("splitHash(options.splitWeights) must not all be 0");
    }
    const version = await this.table.version();
    let q = this.table.query().withRowId();
    for (const f of this.filters) q = q.where(f);
    if (split?.kind === "hash") q = q.select(split.columns);
    else if (split?.kind === "calculated") q = q.select({ split_id: split.calculation });
    else q = q.select([]);
    const source = await q.toArrow();
    const ids = source.getChild("_rowid")?.toArray() as BigUint64Array;
    let order = Array.from({ length: source.numRows }, (_, i) => i);
    // Each row's split (undefined: dropped), in the order the splits are cut.
    const splitOf: Array<number | undefined> = new Array(order.length).fill(0);
    if (split?.kind === "random" || split?.kind === "sequential") {
      if (split.kind === "random") order = shuffled(order, split.seed, split.clumpSize || 1);
      const sizes = splitSizes(split.sizes, order.length);
      splitOf.fill(undefined);
      let at = 0;
      sizes.forEach((k, s) => {
        for (const row of order.slice(at, at + k)) splitOf[row] = s;
        at += k;
      });
    } else if (split?.kind === "hash") {
      const cols = split.columns.map((c) => source.getChild(c));
      const total = split.weights.reduce((a, b) => a + b, 0) + split.discard;
      for (const row of order) {
        let bucket = hashOf(cols.map((c) => c?.get(row))) % total;
        splitOf[row] = undefined;
        for (const [s, w] of split.weights.entries()) {
          if (bucket < w) {
            splitOf[row] = s;
            break;
          }
          bucket -= w;
        }
      }
    }
    let rows: number[];
    if (split?.kind === "calculated") {
      rows = order;
    } else {
      // Grouped by split; within a split, the order it was cut in (shuffled when asked).
      const groups = new Map<number, number[]>();
      for (const row of order) {
        const s = splitOf[row];
        if (s !== undefined) groups.set(s, [...(groups.get(s) ?? []), row]);
      }
      rows = [...groups.keys()]
        .sort((a, b) => a - b)
        .flatMap((s) => {
          const g = groups.get(s) ?? [];
          return this.shuffleOpts ? shuffled(g, this.shuffleOpts.seed, this.shuffleOpts.clumpSize || 1) : g;
        });
    }
    if (split?.kind === "calculated" && this.shuffleOpts) rows = shuffled(rows, this.shuffleOpts.seed, this.shuffleOpts.clumpSize || 1);
    const metadata = new Map([["base_version", String(version)]]);
    if (this.names !== undefined) metadata.set("split_names", JSON.stringify(this.names));
    const rowId = vectorFromArray(
      rows.map((r) => ids[r]),
      new Uint64(),
    );
    let columns: Array<[Field, Vector]>;
    if (split?.kind === "calculated") {
      const calc = source.getChild("split_id");
      if (calc === null) throw invalid("splitCalculated: the calculation gave no split_id column");
      const values = vectorFromArray(
        rows.map((r) => calc.get(r)),
        calc.type,
      );
      columns = [
        [new Field("split_id", calc.type, true), values],
        [new Field("row_id", new Uint64(), true), rowId],
      ];
    } else {
      const splitId = vectorFromArray(
        rows.map((r) => BigInt(splitOf[r] ?? 0)),
        new Uint64(),
      );
      columns = [
        [new Field("row_id", new Uint64(), true), rowId],
        [new Field("split_id", new Uint64(), false), splitId],
      ];
    }
    const schema = new Schema(
      columns.map(([f]) => f),
      metadata,
    );
    const data = makeData({
      type: new Struct(schema.fields),
      length: rows.length,
      nullCount: 0,
      children: columns.map(([, v]) => v.data[0]),
    });
    const out = new ArrowTable(schema, new RecordBatch(schema, data));
    if (this.target !== undefined) return this.target.connection.createTable(this.target.name, out);
    // Loaded here: connection.ts imports table.ts, which this module's importers may load first.
    const { connect } = await import("./connection");
    return (await connect("memory://")).createTable("permutation", out);
  }
}

/** A permutation builder over `table`'s rows (as @lancedb/lancedb 0.39's `permutationBuilder`). */
export function permutationBuilder(table: Table): PermutationBuilder {
  if (table === null || typeof table !== "object" || typeof (table as Table).query !== "function") {
    throw invalid("permutationBuilder(table) must be a memwal Table");
  }
  return new PermutationBuilder(table);
}
