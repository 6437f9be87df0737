/**
 * The JS side of error mapping: every native call goes through `call()`,
 * which turns the addon's `[memwal:Code] message` into a `MemwalError`
 * subclass with a stable `code` and the plain message.
 */

export type ErrorCode =
  | "InvalidInput"
  | "NotSupported"
  | "TableNotFound"
  | "TableAlreadyExists"
  | "VersionNotFound"
  | "CommitConflict"
  | "Timeout"
  | "Corrupt"
  | "Io"
  | "Http"
  | "Auth"
  | "RetryLimit"
  | "HeaderProvider"
  | "Internal";

/** Base class of every error memwal throws. `code` is stable across versions. */
export class MemwalError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}
export class InvalidInputError extends MemwalError {}
export class NotSupportedError extends MemwalError {}
export class TableNotFoundError extends MemwalError {}
export class TableAlreadyExistsError extends MemwalError {}
export class TimeoutError extends MemwalError {}
export class HttpError extends MemwalError {}

const classes: Partial<Record<ErrorCode, typeof MemwalError>> = {
  InvalidInput: InvalidInputError,
  NotSupported: NotSupportedError,
  TableNotFound: TableNotFoundError,
  TableAlreadyExists: TableAlreadyExistsError,
  Timeout: TimeoutError,
  Http: HttpError,
};

const PREFIX = /^\[memwal:([A-Za-z]+)\] /;

/** Converts whatever the addon threw into a MemwalError. */
export function convertError(e: unknown): MemwalError {
  if (e instanceof MemwalError) return e;
  // Not `instanceof Error`: errors made by the addon may come from another realm (jest's vm).
  const raw = typeof e === "object" && e !== null ? (e as { message?: unknown }).message : undefined;
  const msg = typeof raw === "string" ? raw : String(e);
  const m = PREFIX.exec(msg);
  const code = (m ? m[1] : "Internal") as ErrorCode;
  const text = m ? msg.slice(m[0].length) : msg;
  const Cls = classes[code] ?? MemwalError;
  return new Cls(code, text, { cause: e });
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
