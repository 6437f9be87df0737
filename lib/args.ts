/**
 * Checks of JS arguments before they reach the addon: a wrong type or a
 * number that makes no sense (NaN, Infinity, negative, fractional) is an
 * InvalidInputError naming the argument, never a napi conversion error
 * or a silently different call.
 */
import { invalid, notSupported } from "./errors";

export function show(v: unknown): string {
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "number" || v === undefined) return String(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** A string argument. */
export function str(name: string, v: unknown): string {
  if (typeof v !== "string") throw invalid(`${name} must be a string, got ${show(v)}`);
  return v;
}

/** An optional string argument (undefined or null: absent). */
export function optStr(name: string, v: unknown): string | undefined {
  return v === undefined || v === null ? undefined : str(name, v);
}

/** A list of strings. */
export function strList(name: string, v: unknown): string[] {
  if (!Array.isArray(v)) throw invalid(`${name} must be an array of strings, got ${show(v)}`);
  return v.map((x, i) => str(`${name}[${i}]`, x));
}

/** A plain object of strings (not a Map, an array or a class instance), copied with its own keys as given. */
export function strRecord(name: string, v: unknown): Record<string, string> {
  const proto = typeof v === "object" && v !== null ? Object.getPrototypeOf(v) : undefined;
  if (proto !== Object.prototype && proto !== null) throw invalid(`${name} must be a plain object of strings, got ${show(v)}`);
  return Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, str(`${name}.${k}`, x)]));
}

/** A whole number in 0..=max (counts, offsets, versions, milliseconds). */
export function count(name: string, v: unknown, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > max) {
    throw invalid(`${name} must be a whole number from 0 to ${max}, got ${show(v)}`);
  }
  return v;
}

/** A boolean argument. */
export function bool(name: string, v: unknown): boolean {
  if (typeof v !== "boolean") throw invalid(`${name} must be true or false, got ${show(v)}`);
  return v;
}

/**
 * An options object: undefined, or an object whose keys are all `known`. A key in `unsupported` (an option of
 * @lancedb/lancedb that memwal does not honour) is a NotSupportedError saying so, an unknown key an
 * InvalidInputError naming it: an option is never silently ignored. Keys whose value is undefined are absent.
 */
export function checkOptions(name: string, v: unknown, known: readonly string[], unsupported: Readonly<Record<string, string>> = {}): void {
  if (v === undefined || v === null) return;
  if (typeof v !== "object" || Array.isArray(v)) throw invalid(`${name} must be an object of options, got ${show(v)}`);
  for (const [k, x] of Object.entries(v)) {
    if (x === undefined) continue;
    if (k in unsupported) throw notSupported(`${name}.${k} is not supported by memwal: ${unsupported[k]}`);
    if (!known.includes(k)) throw invalid(`${name} has an unknown option '${k}' (known: ${known.join(", ")})`);
  }
}
