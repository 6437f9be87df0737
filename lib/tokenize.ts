/**
 * `tokenize()` and the `Table.tokenize` helper: the tokens an FTS index makes of a text, as 0.39's functions of
 * those names return them, from the same analyzer memwal's FTS indexes and queries use.
 */

import { count } from "./args";
import { call, invalid } from "./errors";
import { type FtsOptions, ftsParams } from "./indices";
import { native } from "./native";

/** A token: its text after every filter, and its position (0.39's `FtsToken`). */
export interface FtsToken {
  text: string;
  position: number;
}

/** The tokenizer options of `tokenize` (0.39's `TokenizeOptions`: `Index.fts`'s, without `withPosition`). */
export type TokenizeOptions = Omit<FtsOptions, "withPosition" | "lowerCase">;

/** Which index's tokenizer `Table.tokenize` uses: exactly one of them (0.39's `TokenizeTableOptions`). */
export type TokenizeTableOptions = { column: string; indexName?: never } | { indexName: string; column?: never };

/**
 * The tokens of `query` under explicit tokenizer options, as an FTS index built with the same options makes them
 * (no table needed). Options are checked as `Index.fts` checks them.
 */
export async function tokenize(query: string, options?: Partial<TokenizeOptions>): Promise<FtsToken[]> {
  if (typeof query !== "string") throw invalid(`tokenize(query) must be a string, got ${typeof query}`);
  const params = JSON.stringify(ftsParams(options));
  return tokenizeWith(query, params);
}

/** The tokens of `query` under FTS parameters in the wire's names (JSON text). */
export async function tokenizeWith(query: string, paramsJson: string): Promise<FtsToken[]> {
  const tokens = await call(async () => native.tokenize(query, paramsJson));
  return tokens.map((t) => ({ text: t.text, position: count("token position", t.position) }));
}

/** An FTS index as `Table.tokenize` looks for it. */
export interface FtsIndexEntry {
  name: string;
  indexType: string;
  columns: string[];
  indexDetails?: string | null;
}

/**
 * The FTS index `options` names (by column or by name, exactly one), from `indices` (the table's list): its
 * parameters as JSON text. Errors name what is missing.
 */
export function ftsIndexParams(indices: FtsIndexEntry[], options: TokenizeTableOptions): string {
  const o = (options ?? {}) as { column?: unknown; indexName?: unknown };
  if (typeof o !== "object") throw invalid("tokenize(query, options): options must be an object");
  const known = ["column", "indexName"];
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw invalid(`unknown tokenize option ${JSON.stringify(k)} (it takes column or indexName)`);
  }
  if ((o.column === undefined) === (o.indexName === undefined)) {
    throw invalid("Specify exactly one of column or indexName to tokenize with a table's FTS index");
  }
  const fts = indices.filter((i) => i.indexType === "FTS" || i.indexType === "INVERTED");
  if (o.indexName !== undefined) {
    if (typeof o.indexName !== "string") throw invalid("tokenize(options.indexName) must be a string");
    const ix = fts.find((i) => i.name === o.indexName);
    if (ix === undefined) throw invalid(`no FTS index named '${o.indexName}' on this table`);
    return ix.indexDetails ?? "{}";
  }
  if (typeof o.column !== "string") throw invalid("tokenize(options.column) must be a string");
  const on = fts.filter((i) => i.columns.length === 1 && i.columns[0] === o.column);
  if (on.length === 0) throw invalid(`no FTS index on column '${o.column}'`);
  if (on.length > 1) {
    throw invalid(`column '${o.column}' has ${on.length} FTS indexes (${on.map((i) => i.name).join(", ")}): name one with indexName`);
  }
  return on[0].indexDetails ?? "{}";
}
