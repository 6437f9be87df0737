/**
 * Full-text queries with the names of @lancedb/lancedb 0.39: `MatchQuery`, `PhraseQuery`, `BoostQuery`,
 * `MultiMatchQuery`, `BooleanQuery`, with `Operator` and `Occur`. Each holds its query as the JSON the wire's
 * `full_text_query.query` carries (Lance's externally tagged form: `{"match": {...}}`), which the addon reads
 * with the server's reader.
 */
import { checkOptions } from "./args";
import { invalid } from "./errors";

/** The kinds of full-text query (as 0.39's enum). */
export enum FullTextQueryType {
  Match = "match",
  MatchPhrase = "match_phrase",
  Boost = "boost",
  MultiMatch = "multi_match",
  Boolean = "boolean",
}

/** How the terms of a match combine: `And` (all must match) or `Or` (any, the default). */
export enum Operator {
  And = "AND",
  Or = "OR",
}

/** How a clause of a {@link BooleanQuery} counts. */
export enum Occur {
  Should = "SHOULD",
  Must = "MUST",
  MustNot = "MUST_NOT",
}

/** A query's wire JSON (`{"match": {...}}`, ...). */
export type FullTextQueryJson = Record<string, unknown>;

/** A full-text query object. */
export interface FullTextQuery {
  /** The query as the wire's JSON. */
  readonly inner: FullTextQueryJson;
  queryType(): FullTextQueryType;
}

/** Every query built here, with its depth (1 for a leaf; one more than its deepest clause). */
const QUERIES = new WeakMap<object, number>();
/** How deep queries may nest: deeper ones are refused here, before a recursion could overflow the stack. */
const MAX_DEPTH = 64;

/** Whether `obj` is one of the full-text query classes. */
export function instanceOfFullTextQuery(obj: unknown): obj is FullTextQuery {
  return typeof obj === "object" && obj !== null && QUERIES.has(obj);
}

function text(name: string, v: unknown): string {
  if (typeof v !== "string") throw invalid(`${name} must be a string, got ${typeof v}`);
  return v;
}
function column(name: string, v: unknown): string | null {
  if (v === undefined || v === null || v === "") return null;
  return text(name, v);
}
function num(name: string, v: unknown, integer: boolean): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v))) {
    throw invalid(`${name} must be a ${integer ? "non-negative integer" : "finite number >= 0"}, got ${String(v)}`);
  }
  return v;
}
function operator(name: string, v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  const s = String(v).toUpperCase();
  if (s !== "AND" && s !== "OR") throw invalid(`${name} must be Operator.And or Operator.Or, got ${JSON.stringify(v)}`);
  return s;
}
function sub(name: string, q: unknown): FullTextQueryJson {
  if (!instanceOfFullTextQuery(q)) throw invalid(`${name} must be a MatchQuery, PhraseQuery, BoostQuery, MultiMatchQuery or BooleanQuery`);
  return q.inner;
}
function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

abstract class Base implements FullTextQuery {
  /** @ignore */
  readonly inner: FullTextQueryJson;
  constructor(inner: FullTextQueryJson, clauses: readonly unknown[] = []) {
    const depth = 1 + Math.max(0, ...clauses.map((c) => (typeof c === "object" && c !== null ? (QUERIES.get(c) ?? 0) : 0)));
    if (depth > MAX_DEPTH) throw invalid(`a full-text query may nest at most ${MAX_DEPTH} deep (this one: ${depth})`);
    this.inner = inner;
    QUERIES.set(this, depth);
  }
  abstract queryType(): FullTextQueryType;
}

/** Rows whose column holds the query's terms (any of them, or all with `Operator.And`), BM25-scored. */
export class MatchQuery extends Base {
  constructor(
    query: string,
    column_: string,
    options?: { boost?: number; fuzziness?: number; maxExpansions?: number; operator?: Operator; prefixLength?: number },
  ) {
    checkOptions("MatchQuery(options)", options, ["boost", "fuzziness", "maxExpansions", "operator", "prefixLength"]);
    const o = options ?? {};
    super({
      match: defined({
        column: column("MatchQuery(column)", column_),
        terms: text("MatchQuery(query)", query),
        boost: num("MatchQuery boost", o.boost, false) ?? 1,
        fuzziness: num("MatchQuery fuzziness", o.fuzziness, true) ?? 0,
        max_expansions: num("MatchQuery maxExpansions", o.maxExpansions, true) ?? 50,
        operator: operator("MatchQuery operator", o.operator) ?? "OR",
        prefix_length: num("MatchQuery prefixLength", o.prefixLength, true) ?? 0,
      }),
    });
  }
  queryType(): FullTextQueryType {
    return FullTextQueryType.Match;
  }
}

/** Rows whose column holds the phrase's terms in order (`slop` extra positions allowed); needs `withPosition`. */
export class PhraseQuery extends Base {
  constructor(query: string, column_: string, options?: { slop?: number }) {
    checkOptions("PhraseQuery(options)", options, ["slop"]);
    super({
      phrase: {
        column: column("PhraseQuery(column)", column_),
        terms: text("PhraseQuery(query)", query),
        slop: num("PhraseQuery slop", options?.slop, true) ?? 0,
      },
    });
  }
  queryType(): FullTextQueryType {
    return FullTextQueryType.MatchPhrase;
  }
}

/** Rows of `positive`, demoted by `negativeBoost` times their `negative` score. */
export class BoostQuery extends Base {
  constructor(positive: FullTextQuery, negative: FullTextQuery, options?: { negativeBoost?: number }) {
    checkOptions("BoostQuery(options)", options, ["negativeBoost"]);
    super(
      {
        boost: defined({
          positive: sub("BoostQuery(positive)", positive),
          negative: sub("BoostQuery(negative)", negative),
          negative_boost: num("BoostQuery negativeBoost", options?.negativeBoost, false),
        }),
      },
      [positive, negative],
    );
  }
  queryType(): FullTextQueryType {
    return FullTextQueryType.Boost;
  }
}

/** The same text over several columns (each with its boost), a row scored by its best column. */
export class MultiMatchQuery extends Base {
  constructor(query: string, columns: string[], options?: { boosts?: number[]; operator?: Operator }) {
    checkOptions("MultiMatchQuery(options)", options, ["boosts", "operator"]);
    if (!Array.isArray(columns) || columns.length === 0) throw invalid("MultiMatchQuery(columns) must name at least one column");
    const boosts = options?.boosts;
    if (boosts !== undefined && (!Array.isArray(boosts) || boosts.length !== columns.length)) {
      throw invalid(`MultiMatchQuery boosts must give one number per column (${columns.length})`);
    }
    super({
      multi_match: defined({
        query: text("MultiMatchQuery(query)", query),
        columns: columns.map((c, i) => text(`MultiMatchQuery(columns)[${i}]`, c)),
        boost: boosts?.map((b, i) => num(`MultiMatchQuery boosts[${i}]`, b, false)),
        operator: operator("MultiMatchQuery operator", options?.operator) ?? "OR",
      }),
    });
  }
  queryType(): FullTextQueryType {
    return FullTextQueryType.MultiMatch;
  }
}

/** Clauses that must, should or must not match (scores of must and should add). */
export class BooleanQuery extends Base {
  constructor(queries: [Occur, FullTextQuery][]) {
    if (!Array.isArray(queries)) throw invalid("BooleanQuery(queries) must be a list of [Occur, query] pairs");
    const out: Record<string, FullTextQueryJson[]> = { should: [], must: [], must_not: [] };
    queries.forEach((pair, i) => {
      if (!Array.isArray(pair) || pair.length !== 2) throw invalid(`BooleanQuery(queries)[${i}] must be an [Occur, query] pair`);
      const [occur, q] = pair;
      const key = { SHOULD: "should", MUST: "must", MUST_NOT: "must_not" }[String(occur).toUpperCase()];
      if (key === undefined)
        throw invalid(`BooleanQuery(queries)[${i}]: occur must be Occur.Should, Occur.Must or Occur.MustNot, got ${JSON.stringify(occur)}`);
      out[key].push(sub(`BooleanQuery(queries)[${i}] query`, q));
    });
    super(
      { boolean: out },
      queries.map((p) => p[1]),
    );
  }
  queryType(): FullTextQueryType {
    return FullTextQueryType.Boolean;
  }
}

/** `fullTextSearch`'s options. */
export interface FullTextSearchOptions {
  /** The columns to search (every FTS-indexed column when omitted). */
  columns?: string | string[];
}

/** The addon's `fullText` (the wire's `full_text_query` body as JSON text) for a query and its options. */
export function fullTextBody(name: string, query: string | FullTextQuery, options?: FullTextSearchOptions): string {
  checkOptions(`${name}(options)`, options, ["columns"]);
  let columns: string[] | undefined;
  const c = options?.columns;
  if (typeof c === "string") columns = [c];
  else if (Array.isArray(c)) columns = c.map((x, i) => text(`${name} columns[${i}]`, x));
  else if (c !== undefined && c !== null) throw invalid(`${name} columns must be a name or a list of names`);
  if (typeof query === "string") {
    if (query.trim() === "") throw invalid(`${name}: the full-text query is empty`);
    return JSON.stringify({ query, columns });
  }
  if (!instanceOfFullTextQuery(query)) {
    throw invalid(`${name} query must be a string or a MatchQuery, PhraseQuery, BoostQuery, MultiMatchQuery or BooleanQuery`);
  }
  return JSON.stringify({ query: query.inner, columns });
}
