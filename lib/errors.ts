/**
 * The JS side of error mapping: every native call goes through `call()`,
 * which turns the addon's `[memwal:Code] message` into a `MemwalError`
 * subclass with a stable `code` and the plain message.
 */

/** Every error code, in the order of the Rust `ErrorCode` enum (a jest test keeps them equal). */
export const ERROR_CODES = [
  "InvalidInput",
  "NotSupported",
  "TableNotFound",
  "TableAlreadyExists",
  "VersionNotFound",
  "IndexNotFound",
  "NamespaceNotFound",
  "TagNotFound",
  "CommitConflict",
  "Timeout",
  "Corrupt",
  "Io",
  "Http",
  "Auth",
  "RetryLimit",
  "HeaderProvider",
  "Busy",
  "Poisoned",
  "Unavailable",
  "Internal",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** Base class of every error memwal throws. `code` is stable across versions. */
export class MemwalError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}
/** The caller passed something unusable. */
export class InvalidInputError extends MemwalError {}
/** The operation does not exist for this kind of table (or not yet). */
export class NotSupportedError extends MemwalError {}
/** No such table. */
export class TableNotFoundError extends MemwalError {}
/** The table name is taken. */
export class TableAlreadyExistsError extends MemwalError {}
/** No such version. */
export class VersionNotFoundError extends MemwalError {}
/** No index of that name. */
export class IndexNotFoundError extends MemwalError {}
export class NamespaceNotFoundError extends MemwalError {}
export class TagNotFoundError extends MemwalError {}
/** Another writer won every commit race. */
export class CommitConflictError extends MemwalError {}
/** Past the deadline; nothing was committed. */
export class TimeoutError extends MemwalError {}
/** Stored data failed to decode or verify. */
export class CorruptError extends MemwalError {}
/** The operating system refused a read or write. */
export class IoError extends MemwalError {}
/** The remote server answered an unexpected status. */
export class HttpError extends MemwalError {}
/** Missing or wrong API key. */
export class AuthError extends MemwalError {}
/** The remote client gave up retrying. */
export class RetryLimitError extends MemwalError {}
/** The header provider failed. */
export class HeaderProviderError extends MemwalError {}
/** The server's MemWAL for the table is behind: retry later. */
export class BusyError extends MemwalError {}
/** The table refuses writes after a failure to persist. */
export class PoisonedError extends MemwalError {}
/** The table cannot serve now (a damaged WAL, a failing flush, shutdown). */
export class UnavailableError extends MemwalError {}
/** A bug in memwal. */
export class InternalError extends MemwalError {}

/** The subclass of each code. */
export const ERROR_CLASSES: Record<ErrorCode, typeof MemwalError> = {
  InvalidInput: InvalidInputError,
  NotSupported: NotSupportedError,
  TableNotFound: TableNotFoundError,
  TableAlreadyExists: TableAlreadyExistsError,
  VersionNotFound: VersionNotFoundError,
  IndexNotFound: IndexNotFoundError,
  NamespaceNotFound: NamespaceNotFoundError,
  TagNotFound: TagNotFoundError,
  CommitConflict: CommitConflictError,
  Timeout: TimeoutError,
  Corrupt: CorruptError,
  Io: IoError,
  Http: HttpError,
  Auth: AuthError,
  RetryLimit: RetryLimitError,
  HeaderProvider: HeaderProviderError,
  Busy: BusyError,
  Poisoned: PoisonedError,
  Unavailable: UnavailableError,
  Internal: InternalError,
};

const PREFIX = /^\[memwal:([A-Za-z]+)\] /;
/** Separates the errors of the Rust source chain (src/error.rs `CAUSE_MARKER`). */
const CAUSE_MARKER = "\n[memwal:cause] ";

/** Converts whatever the addon threw into a MemwalError. */
export function convertError(e: unknown): MemwalError {
  if (e instanceof MemwalError) return e;
  // Not `instanceof Error`: errors made by the addon may come from another realm (jest's vm).
  const raw = typeof e === "object" && e !== null ? (e as { message?: unknown }).message : undefined;
  const msg = typeof raw === "string" ? raw : String(e);
  const m = PREFIX.exec(msg);
  const named = m ? m[1] : "Internal";
  const code: ErrorCode = (ERROR_CODES as readonly string[]).includes(named) ? (named as ErrorCode) : "Internal";
  const [text, ...chain] = (m ? msg.slice(m[0].length) : msg).split(CAUSE_MARKER);
  const Cls = ERROR_CLASSES[code];
  // The Rust source chain, outermost first, as nested `cause`s (the innermost's cause is the addon's error).
  const cause = chain.reduceRight<unknown>((inner, link) => new Error(link, { cause: inner }), e);
  return new Cls(code, text, { cause });
}

/** Runs a native call, mapping its errors. */
export async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw convertError(e);
  }
}

/** Same for synchronous helpers (data conversion). */
export function invalid(message: string, cause?: unknown): MemwalError {
  return new InvalidInputError("InvalidInput", message, cause === undefined ? undefined : { cause });
}

/** An error saying what memwal does not implement yet. */
export function notSupported(message: string): MemwalError {
  return new NotSupportedError("NotSupported", message);
}

/**
 * A rewrite of one of the addon's messages so it starts with the text @lancedb/lancedb 0.39 gives for the same
 * refusal (code ported from it matches on that text): a pattern of our message, and the new message from its match.
 */
export type Reword = readonly [RegExp, (m: RegExpExecArray) => string];

/** `e` with its message rewritten by the first rule matching it (same class, code and cause), or `e`. */
export function reword(e: MemwalError, rules: readonly Reword[]): MemwalError {
  for (const [pattern, text] of rules) {
    const m = pattern.exec(e.message);
    if (m) {
      const Cls = ERROR_CLASSES[e.code];
      return new Cls(e.code, text(m), e.cause === undefined ? undefined : { cause: e.cause });
    }
  }
  return e;
}

/** `call()` whose errors' messages are rewritten by `rules` (for the calls where 0.39's texts are a contract). */
export async function callReworded<T>(rules: readonly Reword[], f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw reword(convertError(e), rules);
  }
}

/** add(): 0.39's texts for a non-nullable column the data leaves out, or gives nulls in. */
export const ADD_REWORDS: readonly Reword[] = [
  [/^column '.*' is missing from the data and is not nullable in the table/s, (m) => `Append with different schema: ${m.input}`],
  [
    /^column '(.*)' is not nullable but the data has (\d+) null value\(s\) in it/s,
    (m) => `Column '${m[1]}' is declared as non-nullable but contains null values (${m[2]} in the data)${m.input.slice(m[0].length)}`,
  ],
];

/** Running a query: 0.39's texts for a query vector no column fits (with 0.39's "Invalid input, " lead where it has one). */
export const QUERY_REWORDS: readonly Reword[] = [
  [/^no vector column of dimension/, (m) => `N${m.input.slice(1)}`],
  [
    /^query vector has dimension (\d+) but column '(.*)' has dimension (\d+)/s,
    (m) => `Invalid input, query dim(${m[1]}) doesn't match the column ${m[2]} vector dim(${m[3]}): ${m.input}`,
  ],
];

/** createIndex(): 0.39's text for an index the table already has (without `replace`). */
export const CREATE_INDEX_REWORDS: readonly Reword[] = [
  [
    /^table '(.*)' already has the index '(.*)' on column '(.*)'; (drop it first or pass replace: true.*)$/s,
    (m) => `Index '${m[2]}' already exists on column '${m[3]}' of table '${m[1]}': ${m[4]}`,
  ],
];

/** restore(): 0.39's text for a restore with no version, on a handle not checked out. */
export const RESTORE_REWORDS: readonly Reword[] = [
  [/^restore needs a version/, () => "restore needs a version: run checkout before running restore, or pass the version"],
];

/** mergeInsert().execute(): 0.39's text for its timeout. */
export const MERGE_REWORDS: readonly Reword[] = [[/^operation timed out/, (m) => `merge insert timed out${m.input.slice(m[0].length)}`]];
