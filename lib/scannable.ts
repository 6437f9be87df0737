/**
 * `Scannable`, as @lancedb/lancedb 0.39 exports it: a source of Arrow record batches with a declared schema, an
 * optional row count and whether it can be read more than once. Batches are pulled one at a time when a scan
 * runs, never before. memwal's `Table.add` and `Connection.createTable` take one (0.39 declares the class and
 * leaves its consumers to a later release).
 */
import { Table as ArrowTable, type RecordBatch, type Schema } from "apache-arrow";
import { invalid } from "./errors";
import { ourSchema, ourTable } from "./foreign";

/** Hints of a {@link Scannable}, as @lancedb/lancedb 0.39's `ScannableOptions`. */
export interface ScannableOptions {
  /** How many rows the source holds, when known (a hint: a scan does not check it). */
  numRows?: number;
  /**
   * Whether the source can be scanned more than once: default true for `fromTable` / `fromFactory`, false for
   * `fromIterable` / `fromRecordBatchReader`.
   */
  rescannable?: boolean;
}

/** What a Scannable's factory returns: batches, sync or async, as an iterable or an iterator. */
export type BatchSource = AsyncIterable<RecordBatch> | Iterable<RecordBatch> | AsyncIterator<RecordBatch> | Iterator<RecordBatch>;

/** A pull-based iterator over whatever a factory returned. */
function iteratorOf(source: unknown): AsyncIterator<RecordBatch> | Iterator<RecordBatch> {
  if (source === null || source === undefined) throw new TypeError("Scannable factory returned null/undefined");
  const s = source as Record<symbol | string, unknown>;
  if (typeof s[Symbol.asyncIterator] === "function") return (s[Symbol.asyncIterator] as () => AsyncIterator<RecordBatch>)();
  if (typeof s[Symbol.iterator] === "function") return (s[Symbol.iterator] as () => Iterator<RecordBatch>)();
  if (typeof s.next === "function") return source as Iterator<RecordBatch>;
  throw new TypeError("Scannable factory returned a non-iterable value");
}

/**
 * Whether reading `source` twice would find it exhausted: its iterator is itself (generators, readers,
 * `Array.prototype.values()`), or it is a bare iterator. null and undefined are left to the scan to refuse.
 */
function isOneShot(source: unknown): boolean {
  if (source === null || source === undefined) return false;
  const s = source as Record<symbol | string, unknown>;
  if (typeof s[Symbol.asyncIterator] === "function") return (s[Symbol.asyncIterator] as () => unknown)() === source;
  if (typeof s[Symbol.iterator] === "function") return (s[Symbol.iterator] as () => unknown)() === source;
  return typeof s.next === "function";
}

/** The columns of a schema as compared between the declared schema and each batch: names and types. */
function shape(schema: Schema): string {
  return schema.fields.map((f) => `${f.name}: ${String(f.type)}`).join(", ");
}

/** What a consumer reads a {@link Scannable} through (`scannable.inner`). */
export interface ScanHandle {
  /** The declared schema, as memwal's apache-arrow. */
  readonly schema: Schema;
  readonly numRows: number | null;
  readonly rescannable: boolean;
  /**
   * One scan: the source's batches in order, each checked against the declared schema (a batch of other columns
   * is an InvalidInputError naming both). A second scan of a source that is not rescannable is refused.
   */
  scan(): AsyncGenerator<RecordBatch>;
}

class Handle implements ScanHandle {
  private scans = 0;
  constructor(
    readonly schema: Schema,
    readonly numRows: number | null,
    readonly rescannable: boolean,
    private readonly factory: () => unknown,
  ) {}

  async *scan(): AsyncGenerator<RecordBatch> {
    if (this.scans > 0 && !this.rescannable) {
      throw invalid("this Scannable is not rescannable and has been scanned already (use fromFactory for a source read twice)");
    }
    this.scans += 1;
    const it = iteratorOf(this.factory());
    const want = shape(this.schema);
    for (let n = 0; ; n++) {
      const r = await it.next();
      if (r.done) return;
      const batch = r.value as RecordBatch;
      if (batch === null || typeof batch !== "object" || batch.schema === undefined) {
        throw invalid(`Scannable batch ${n} is not an apache-arrow RecordBatch`);
      }
      const got = shape(batch.schema as Schema);
      if (got !== want) throw invalid(`Scannable batch ${n} has columns (${got}), the declared schema has (${want})`);
      yield batch;
    }
  }
}

/** A source of record batches pulled one at a time, as @lancedb/lancedb 0.39's `Scannable`. */
export class Scannable {
  private constructor(
    readonly schema: Schema,
    readonly numRows: number | null,
    readonly rescannable: boolean,
    private readonly handle: ScanHandle,
  ) {}

  /** The handle a consumer scans through. */
  get inner(): ScanHandle {
    return this.handle;
  }

  /**
   * From a schema and a function returning a fresh batch iterator (or iterable) each call; it is called once
   * per scan, not before. `rescannable` defaults to true.
   */
  static async fromFactory(schema: Schema, factory: () => BatchSource, opts: ScannableOptions = {}): Promise<Scannable> {
    const numRows = opts.numRows ?? null;
    if (numRows !== null) {
      if (typeof numRows !== "number" || !Number.isInteger(numRows))
        throw new TypeError(`numRows must be an integer, got ${String(numRows)}`);
      if (numRows < 0) throw new TypeError(`numRows must be non-negative, got ${numRows}`);
    }
    if (opts.rescannable !== undefined && typeof opts.rescannable !== "boolean") throw new TypeError("rescannable must be a boolean");
    if (typeof factory !== "function") throw new TypeError("Scannable.fromFactory(factory) must be a function");
    const rescannable = opts.rescannable ?? true;
    // The declared schema must be one memwal can write (any apache-arrow copy).
    const ours = ourSchema(schema);
    return new Scannable(schema, numRows, rescannable, new Handle(ours, numRows, rescannable, factory));
  }

  /** From an apache-arrow Table: always rescannable; its row count is the table's. */
  static async fromTable(table: ArrowTable, opts: ScannableOptions = {}): Promise<Scannable> {
    if (opts.numRows !== undefined && opts.numRows !== null && opts.numRows !== table.numRows) {
      throw new TypeError(`opts.numRows (${opts.numRows}) does not match table.numRows (${table.numRows}); omit it or pass the table's`);
    }
    if (opts.rescannable === false) {
      throw new TypeError("fromTable does not accept rescannable: false: an in-memory Arrow Table is always rescannable");
    }
    return Scannable.fromFactory(table.schema, () => table.batches, { numRows: table.numRows, rescannable: true });
  }

  /**
   * From an iterable (or async iterable) of batches. `rescannable: true` is refused for a one-shot source (a
   * generator, or an iterator that is its own iterable), since a second scan would find it empty.
   */
  static async fromIterable(
    schema: Schema,
    iter: AsyncIterable<RecordBatch> | Iterable<RecordBatch>,
    opts: ScannableOptions = {},
  ): Promise<Scannable> {
    if (opts.rescannable === true && isOneShot(iter)) {
      throw new TypeError(
        "fromIterable: rescannable: true does not hold for a one-shot iterable (a generator, or an iterator that is its own iterable); use fromFactory(schema, () => freshIterator(), { rescannable: true })",
      );
    }
    return Scannable.fromFactory(schema, () => iter, { numRows: opts.numRows, rescannable: opts.rescannable ?? false });
  }

  /** From an opened apache-arrow RecordBatchReader: read once, so never rescannable. */
  static async fromRecordBatchReader(
    reader: { schema: Schema } & (Iterable<RecordBatch> | AsyncIterable<RecordBatch>),
    opts: ScannableOptions = {},
  ): Promise<Scannable> {
    if (opts.rescannable === true) {
      throw new TypeError(
        "fromRecordBatchReader does not accept rescannable: true: a reader is read once; use fromFactory(schema, () => openReader(), { rescannable: true })",
      );
    }
    return Scannable.fromFactory(reader.schema, () => reader, { numRows: opts.numRows, rescannable: false });
  }
}

/** Every batch of one scan, as one apache-arrow Table of memwal's copy (what `add` and `createTable` write). */
export async function scanToTable(s: Scannable): Promise<ArrowTable> {
  const batches: RecordBatch[] = [];
  for await (const b of s.inner.scan()) batches.push(...ourTable(b).batches);
  return new ArrowTable(s.inner.schema, batches);
}

export function isScannable(x: unknown): x is Scannable {
  return x instanceof Scannable;
}
