/**
 * `memwal/util`: small helpers of @lancedb/lancedb 0.39's `util` module (`packBits` and `IntoSql` are also
 * exported from the root, as in 0.39).
 */
import { invalid } from "./errors";

/**
 * Packs bits (numbers 0 or 1) into bytes, least significant bit first, as 0.39's `packBits`: 8 bits a byte, the
 * last byte padded with zeros. Anything but 0 or 1 is an InvalidInputError naming its place.
 */
export function packBits(data: number[]): number[] {
  if (!Array.isArray(data)) throw invalid("packBits(data) must be an array of 0s and 1s");
  const packed = new Array<number>(Math.ceil(data.length / 8)).fill(0);
  data.forEach((b, i) => {
    if (b !== 0 && b !== 1) throw invalid(`packBits(data)[${i}] is ${String(b)}: bits are 0 or 1`);
    packed[i >> 3] |= b << (i & 7);
  });
  return packed;
}

/** A value `toSQL` writes as a SQL literal. */
export type IntoSql = string | number | boolean | null | Date | ArrayBufferLike | Buffer | IntoSql[];

/**
 * The SQL literal for a value, as 0.39's `toSQL` writes it: strings quoted with `''` escapes, numbers as JS prints
 * them, `TRUE` / `FALSE`, `NULL`, a Date as its quoted ISO string, an array as `[a, b]`, bytes as `X'hex'`.
 * Anything else is an Error naming its type and value (0.39's text).
 */
export function toSQL(value: IntoSql): string {
  if (typeof value === "string") return `'${value.replace(/'/g, "''")}'`;
  if (typeof value === "number") return value.toString();
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  if (value === null) return "NULL";
  if (value instanceof Date) return `'${value.toISOString()}'`;
  if (Array.isArray(value)) return `[${value.map(toSQL).join(", ")}]`;
  if (Buffer.isBuffer(value)) return `X'${value.toString("hex")}'`;
  if (value instanceof ArrayBuffer) return `X'${Buffer.from(value).toString("hex")}'`;
  throw new Error(`Unsupported value type: ${typeof value} value: (${value})`);
}
