/**
 * `Table` and its `Query`: the user-facing face of a native or remote table.
 */
import { Table as ArrowTable, DataType, Field, Schema } from "apache-arrow";
import { checkOptions, count, optStr, str, strList, strRecord } from "./args";
import { type Data, fromBuffer, schemaFromBuffer, toBuffer } from "./arrow";
import { type Known, TableEmbeddings } from "./embedding/apply";
import {
  ADD_REWORDS,
  CREATE_INDEX_REWORDS,
  call,
  callReworded,
  IndexNotFoundError,
  invalid,
  notSupported,
  RESTORE_REWORDS,
  TimeoutError,
} from "./errors";
import { ourField, ourType } from "./foreign";
import { type FullTextQuery, instanceOfFullTextQuery } from "./fts";
import { type IndexConfig, type IndexOptions, type IndexStatistics, indexOptions } from "./indices";
import { Job } from "./job";
import { MergeInsertBuilder } from "./merge";
import type { LsmStats, NativeTable, TableStatistics } from "./native";
import { embeddedQuery, type IntoVector, Query, type VectorQuery, vectorQuery } from "./query";
import { Scannable, scanToTable } from "./scannable";
import { type FtsToken, ftsIndexParams, type TokenizeTableOptions, tokenizeWith } from "./tokenize";

export interface VersionInfo {
  version: number;
  /** Commit time. */
  timestamp: Date;
  operation: string;
  metadata: Record<string, string>;
}

/** Options of {@link Table.optimize}, as @lancedb/lancedb 0.39's. */
export interface OptimizeOptions {
  /** Versions committed before this Date (or more than this many milliseconds ago) are removed; default 7 days. */
  cleanupOlderThan?: Date | number;
  /** Also remove files no version names that are newer than the cutoff. */
  deleteUnverified?: boolean;
  /**
   * memwal's (Lance's `CompactionOptions`): fragments with fewer rows than this are merged into fragments of
   * up to this many rows (default 1,048,576).
   */
  targetRowsPerFragment?: number;
  /** memwal's (Lance's): a fragment whose deleted share is above this (0 to 1) is rewritten (default 0.1). */
  materializeDeletionsThreshold?: number;
}

/** What {@link Table.optimize} did, as @lancedb/lancedb 0.39's `OptimizeStats`. */
export interface OptimizeStats {
  compaction: { fragmentsRemoved: number; fragmentsAdded: number; filesRemoved: number; filesAdded: number };
  prune: { bytesRemoved: number; oldVersionsRemoved: number };
}

const SEVEN_DAYS_MS = 7 * 24 * 3600 * 1000;

/** optimize()'s compaction options, checked (the addon checks them again). */
function optimizeCompaction(o?: OptimizeOptions): { targetRowsPerFragment?: number; materializeDeletionsThreshold?: number } {
  const out: { targetRowsPerFragment?: number; materializeDeletionsThreshold?: number } = {};
  if (o?.targetRowsPerFragment !== undefined) {
    out.targetRowsPerFragment = count("optimize(options.targetRowsPerFragment)", o.targetRowsPerFragment);
    if (out.targetRowsPerFragment === 0) throw invalid("optimize(options.targetRowsPerFragment) must be at least 1");
  }
  const t = o?.materializeDeletionsThreshold;
  if (t !== undefined) {
    if (typeof t !== "number" || !(t >= 0 && t <= 1)) {
      throw invalid(`optimize(options.materializeDeletionsThreshold) must be a number from 0 to 1, got ${String(t)}`);
    }
    out.materializeDeletionsThreshold = t;
  }
  return out;
}

/** What `add` answers, as @lancedb/lancedb 0.39's `AddResult`. */
export interface AddResult {
  version: number;
}

/** What `add(.., { progress })` reports, as @lancedb/lancedb 0.39's `WriteProgress`. */
export interface WriteProgress {
  /** Rows written so far. */
  outputRows: number;
  /** Bytes written so far (of the Arrow IPC the rows were sent as). */
  outputBytes: number;
  /** Rows expected. */
  totalRows?: number;
  /** Seconds since the write started. */
  elapsedSeconds: number;
  /** Write tasks in flight. */
  activeTasks: number;
  /** Write tasks in all (memwal writes one file per add). */
  totalTasks: number;
  /** True on the last call. */
  done: boolean;
}

export interface AddOptions {
  /** "append" (default) keeps the rows; "overwrite" replaces rows and schema. */
  mode?: "append" | "overwrite";
  /**
   * Called once the rows are committed, with `done: true` (memwal writes an add as one file in one commit, so
   * there is no earlier progress to report). An error it throws is logged with `console.warn`, as
   * @lancedb/lancedb does, and does not fail the add.
   */
  progress?: (progress: WriteProgress) => void;
}

export interface UpdateOptions {
  /** SQL filter selecting the rows (all rows when omitted). */
  where?: string;
  /** Literal values per column. */
  values?: Record<string, unknown>;
  /** SQL expressions per column, e.g. `{ age: "age + 1" }`. */
  valuesSql?: Record<string, string>;
}

function sqlLiteral(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw invalid(`update values must be finite numbers, got ${v}`);
    return String(v);
  }
  if (typeof v === "bigint") return String(v);
  if (typeof v === "boolean") return v ? "TRUE" : "FALSE";
  if (typeof v === "string") return `'${v.replace(/'/g, "''")}'`;
  throw invalid(`update values must be numbers, strings, booleans or null; use valuesSql for ${typeof v}`);
}

/** An index's `index_details` JSON text as an object, or the text itself when it does not parse (as 0.39). */
function details(text: string | null | undefined): Record<string, unknown> | string | undefined {
  if (text === null || text === undefined) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return text;
  }
}

/** `IVF_PQ` -> `IvfPq`, `BTREE` -> `BTree`: the spelling of the official client's `listIndices`. */
function listedType(wire: string): string {
  if (wire === "BTREE") return "BTree";
  if (wire === "FTS" || wire === "INVERTED") return "FTS";
  return wire
    .split("_")
    .map((w) => w.charAt(0) + w.slice(1).toLowerCase())
    .join("");
}

/** What a tag records. */
export interface TagContents {
  version: number;
  manifestSize: number;
}

/** A table's tags (names for versions); `checkout(tag)` reads the version a tag names. */
export class Tags {
  /** @internal */
  constructor(private readonly inner: NativeTable) {}

  /** Every tag by name. */
  async list(): Promise<Record<string, TagContents>> {
    return call(() => this.inner.tagsList());
  }

  /** The version `tag` names. */
  async getVersion(tag: string): Promise<number> {
    const t = await call(async () => str("getVersion(tag)", tag));
    return call(() => this.inner.tagVersion(t));
  }

  /** Names `version` `tag` (an error if the tag exists or the version does not). */
  async create(tag: string, version: number): Promise<void> {
    const [t, v] = await call(async () => [str("create(tag)", tag), count("create(version)", version)] as const);
    return call(() => this.inner.tagSet(t, v, false));
  }

  /** Points an existing tag at `version`. */
  async update(tag: string, version: number): Promise<void> {
    const [t, v] = await call(async () => [str("update(tag)", tag), count("update(version)", version)] as const);
    return call(() => this.inner.tagSet(t, v, true));
  }

  /** Removes a tag (the version stays). */
  async delete(tag: string): Promise<void> {
    const t = await call(async () => str("delete(tag)", tag));
    return call(() => this.inner.tagDelete(t));
  }
}

/** What a branch records, as 0.39's `BranchContents`. */
export interface BranchContents {
  parentBranch?: string;
  parentVersion: number;
  createTime: number;
  manifestSize: number;
}

/**
 * A table's branches, as 0.39's `Branches`. memwal tables have none besides the main line: `list()` answers that;
 * `create`, `checkout`, `delete` and `diff` are refused by name (NotSupported).
 */
export class Branches {
  /** Every branch by name: none. */
  async list(): Promise<Record<string, BranchContents>> {
    return {};
  }
  /** Arguments are checked first, with 0.39's texts (InvalidInput), then the call is refused. */
  async create(name: string, _fromRef?: string, fromVersion?: number): Promise<never> {
    branchName(name);
    branchVersion("from_version", fromVersion);
    throw notSupported(BRANCHES);
  }
  async checkout(name: string, version?: number): Promise<never> {
    branchName(name);
    branchVersion("version", version);
    throw notSupported(BRANCHES);
  }
  async delete(name: string): Promise<never> {
    branchName(name);
    throw notSupported(BRANCHES);
  }
  async diff(_fromBranch: string): Promise<never> {
    throw notSupported(BRANCHES);
  }
}

const BRANCHES =
  "branches are not supported by memwal: a table has one line of versions (tags name versions of it; checkout(version) reads one)";

/** 0.39's check of a branch name: a non-empty string. */
function branchName(name: unknown): void {
  if (typeof name !== "string" || name.length === 0) throw invalid("Invalid input, branch name must be a non-empty string");
}

/** 0.39's check of a version given with a branch: absent, or a whole number >= 0. */
function branchVersion(what: string, v: unknown): void {
  if (v === undefined || v === null) return;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0) throw invalid(`${what} must be a non-negative integer`);
}

/** A column to add: its name and the SQL computing its value from each row (as @lancedb/lancedb). */
export interface AddColumnsSql {
  name: string;
  valueSql: string;
}

/** One change to a column (as @lancedb/lancedb): a new name, nullability, or type within the column's kind. */
export interface ColumnAlteration {
  /** The column (top-level names only so far). */
  path: string;
  rename?: string;
  /** A nullable column cannot become non-nullable. */
  nullable?: boolean;
  /** A type name as in a schema ("int64", "float", "double", "string", ...) or an apache-arrow DataType. */
  dataType?: string | DataType;
}

// Duck-typed too: the caller's apache-arrow may be another copy than ours.
const isDataType = (x: unknown): x is DataType =>
  x instanceof DataType || (typeof x === "object" && x !== null && typeof (x as { typeId?: unknown }).typeId === "number");
const isField = (x: unknown): x is Field =>
  x instanceof Field || (typeof x === "object" && x !== null && "name" in x && isDataType((x as { type?: unknown }).type));
const isSchema = (x: unknown): x is Schema =>
  x instanceof Schema || (typeof x === "object" && x !== null && Array.isArray((x as { fields?: unknown }).fields) && !("name" in x));

/** What a schema change answers: the version it committed. */
export interface SchemaChangeResult {
  version: number;
}
export type AddColumnsResult = SchemaChangeResult;
export type AlterColumnsResult = SchemaChangeResult;
export type DropColumnsResult = SchemaChangeResult;

/** The sharding of a MemWAL write path, as @lancedb/lancedb 0.39's `LsmWriteSpec`. */
export interface LsmWriteSpec {
  specType: "bucket" | "identity" | "unsharded";
  column?: string;
  numBuckets?: number;
  maintainedIndexes?: string[];
  writerConfigDefaults?: Record<string, string>;
}

/** Why a local table refuses the LSM calls. */
const LOCAL_HAS_NO_MEMWAL =
  "a local table has no MemWAL (memwal's LSM path is a served table's: serve the folder with memwal-server or serve())";

export class Table {
  /** The table's embedding functions (those it records, or those this process created it with). */
  private readonly embeddings: TableEmbeddings;
  /** The native table; undefined once closed. */
  private _inner: NativeTable | undefined;
  private readonly _name: string;
  private readonly _display: string;

  /** @internal `display` is what {@link display} answers while open (the connection knows the table's place). */
  constructor(inner: NativeTable, known?: Known, display?: string) {
    this._inner = inner;
    this._name = inner.name;
    this._display = display ?? `NativeTable(${inner.name})`;
    this.embeddings = new TableEmbeddings(() => this.schema(), known);
  }

  /** The native table, or @lancedb/lancedb 0.39's error once closed: "Table <name> is closed". */
  private get inner(): NativeTable {
    if (this._inner === undefined) throw invalid(`Table ${this._name} is closed`);
    return this._inner;
  }

  private checkOpen(): void {
    if (this._inner === undefined) throw invalid(`Table ${this._name} is closed`);
  }

  private set inner(t: NativeTable) {
    this._inner = t;
  }

  /** The table name (also once closed). */
  get name(): string {
    return this._name;
  }

  /** Whether the table is open: true until {@link close}. */
  isOpen(): boolean {
    return this._inner !== undefined;
  }

  /**
   * Closes this handle, as @lancedb/lancedb 0.39: every later call on it fails with "Table <name> is closed"
   * (the builders `query`, `search`, `vectorSearch`, `mergeInsert`, `takeOffsets`, `takeRowIds` throw at once, the
   * others reject); `name`, `isOpen` and `display` still answer. Queries built before keep working, other
   * handles of the table too. Closing again does nothing.
   */
  close(): void {
    this._inner = undefined;
  }

  /**
   * A description, as @lancedb/lancedb 0.39's: `NativeTable(name, uri=..., read_consistency_interval=None)` for a
   * local table (the interval the connection was given, see `Connection.display`), `RemoteTable(id)` for a remote
   * one, `ClosedTable(name)` once closed.
   */
  display(): string {
    return this._inner === undefined ? `ClosedTable(${this._name})` : this._display;
  }

  /** console.log and util.inspect show {@link display}. */
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.display();
  }

  /** The schema. */
  async schema(): Promise<Schema> {
    return schemaFromBuffer(await call(() => this.inner.schema()));
  }

  /** The current version. */
  version(): Promise<number> {
    return call(() => this.inner.version());
  }

  /** Every version, oldest first. */
  async listVersions(): Promise<VersionInfo[]> {
    const v = await call(() => this.inner.listVersions());
    return v.map((x) => ({ ...x, timestamp: new Date(x.timestamp) }));
  }

  /**
   * Commits a new latest version equal to an old one: `restore()` after `checkout(v)` restores `v` (as
   * @lancedb/lancedb does), `restore(v)` names it. Returns the new version; this handle then reads and writes the
   * latest version again (as @lancedb/lancedb's does).
   */
  async restore(version?: number): Promise<number> {
    const v = version === undefined ? null : await call(async () => count("restore(version)", version));
    const committed = await callReworded(RESTORE_REWORDS, () => this.inner.restore(v));
    this.inner = await call(() => this.inner.checkout(null));
    return committed;
  }

  /**
   * Adds columns, as @lancedb/lancedb's `addColumns`: `[{ name, valueSql }]` computes each from the row's other
   * columns; a Field, Field[] or Schema adds all-null (nullable) columns of those types. One new version; older
   * versions keep their schema. On a served table, rows buffered by memWal() are merged first and read with the
   * new column. `{ computed }` (columns filled later by refreshColumn) is refused as not supported.
   */
  async addColumns(
    newColumnTransforms: AddColumnsSql[] | Field | Field[] | Schema | { computed: AddColumnsSql[] },
  ): Promise<AddColumnsResult> {
    const t = newColumnTransforms as unknown;
    let version: number;
    if (isSchema(t) || isField(t) || (Array.isArray(t) && t.length > 0 && t.every(isField))) {
      const fields = (isSchema(t) ? t.fields : isField(t) ? [t] : (t as Field[])).map(ourField);
      const buf = toBuffer(new ArrowTable(new Schema(fields)));
      version = await call(() => this.inner.addNullColumns(buf));
    } else if (Array.isArray(t)) {
      const cols = t.map((c: unknown, i) => {
        const o = (c ?? {}) as Record<string, unknown>;
        checkOptions(`addColumns[${i}]`, o, ["name", "valueSql"]);
        return { name: str(`addColumns[${i}].name`, o.name), valueSql: str(`addColumns[${i}].valueSql`, o.valueSql) };
      });
      version = await call(() => this.inner.addColumnsSql(cols));
    } else if (t !== null && typeof t === "object" && "computed" in t) {
      throw notSupported("computed columns (addColumns({ computed }), filled by refreshColumn) are not supported by memwal yet");
    } else {
      throw invalid("addColumns takes [{ name, valueSql }], a Field, a list of Fields or a Schema");
    }
    return { version };
  }

  /** Renames columns, changes their nullability or type (casts that do not fit name the row), as @lancedb/lancedb. */
  async alterColumns(columnAlterations: ColumnAlteration[]): Promise<AlterColumnsResult> {
    if (!Array.isArray(columnAlterations)) throw invalid("alterColumns takes a list of { path, rename?, nullable?, dataType? }");
    const alts = columnAlterations.map((a, i) => {
      const o = (a ?? {}) as unknown as Record<string, unknown>;
      const out: { path: string; rename?: string; nullable?: boolean; dataTypeJson?: string; dataTypeIpc?: Buffer } = {
        path: str(`alterColumns[${i}].path`, o.path),
      };
      const rename = optStr(`alterColumns[${i}].rename`, o.rename);
      if (rename !== undefined) out.rename = rename;
      if (o.nullable !== undefined && o.nullable !== null) {
        if (typeof o.nullable !== "boolean") throw invalid(`alterColumns[${i}].nullable must be a boolean`);
        out.nullable = o.nullable;
      }
      const dt = o.dataType;
      if (typeof dt === "string") out.dataTypeJson = JSON.stringify({ type: dt });
      else if (isDataType(dt)) out.dataTypeIpc = toBuffer(new ArrowTable(new Schema([new Field("type", ourType(dt), true)])));
      else if (dt !== undefined && dt !== null)
        throw invalid(`alterColumns[${i}].dataType must be a type name or an apache-arrow DataType`);
      return out;
    });
    return { version: await call(() => this.inner.alterColumns(alts)) };
  }

  /** Drops columns (and the indexes over them), as @lancedb/lancedb; older versions keep them. */
  async dropColumns(columnNames: string[]): Promise<DropColumnsResult> {
    const names = strList("dropColumns(columnNames)", columnNames);
    return { version: await call(() => this.inner.dropColumns(names)) };
  }

  /** Sizes and fragment layout, as @lancedb/lancedb's `stats()` (`numRows` counts a served table's buffered rows). */
  async stats(): Promise<TableStatistics> {
    return call(() => this.inner.stats());
  }

  /**
   * Whether this table has a MemWAL (a served table does; a local one does not). The addon answers LSM stats only
   * for a table with one.
   */
  private async lsmStatsOrRefuse(what: string, includeGenerationRows: boolean): Promise<LsmStats> {
    const s = await call(() => this.inner.getLsmStats(includeGenerationRows));
    if (s === null || s === undefined) throw notSupported(`${what} is not supported on this table type: ${LOCAL_HAS_NO_MEMWAL}`);
    return s;
  }

  /**
   * The MemWAL's state, as @lancedb/lancedb 0.39's `getLsmStats`: a served table has one bucket whose
   * `memtables` are the buffered rows not yet merged into the table (sealed oldest first, the active one
   * last), `walEntryPositionLastSeen` the last acknowledged WAL record and `replayAfterWalEntryPosition` the last
   * one merged. memwal keeps no on-disk generations: `generations` is empty. A local table has no MemWAL: a
   * NotSupportedError, as 0.39 refuses it on a local table ("get_lsm_stats is not supported on this table type").
   */
  async getLsmStats(includeGenerationRows = false): Promise<LsmStats | undefined> {
    if (typeof includeGenerationRows !== "boolean") throw invalid("getLsmStats(includeGenerationRows) takes a boolean");
    return this.lsmStatsOrRefuse("get_lsm_stats", includeGenerationRows);
  }

  /**
   * Merges every buffered MemWAL row of a served table into the table and returns once it is. A local table has
   * no MemWAL: a NotSupportedError, as 0.39's ("flush_lsm is not supported on this table type").
   */
  async flushLsm(): Promise<void> {
    await this.lsmStatsOrRefuse("flush_lsm", false);
    return call(() => this.inner.flushLsm());
  }

  /**
   * As 0.39's `compactLsm` (merge sealed generations into the table): memwal's flush already merges, so on a
   * served table this is `flushLsm` (it returns once merged, not once dispatched). Refused on a local table.
   */
  async compactLsm(): Promise<void> {
    await this.lsmStatsOrRefuse("compact_lsm", false);
    return call(() => this.inner.flushLsm());
  }

  /** Converges the MemWAL into the table: with memwal a flush already does (`flushLsm`), so this is the same. */
  async checkpointLsm(): Promise<void> {
    return this.flushLsm();
  }

  /**
   * As 0.39's `closeLsmWriters`: closes the MemWAL writers this process caches for the table. memwal's writers
   * live in the server that owns the MemWAL, none in the client, so there is never one to close.
   */
  async closeLsmWriters(): Promise<void> {
    this.checkOpen();
  }

  /**
   * As 0.39's `setUnenforcedPrimaryKey`: records `columns` (exactly one: a non-nullable Int32, Int64, Utf8,
   * LargeUtf8, Binary, LargeBinary or FixedSizeBinary column) as the table's primary key, in Lance's field
   * metadata (`lance-schema:unenforced-primary-key:position`). "Unenforced": rows are not checked for uniqueness;
   * the key is what an LSM write spec routes upserts on. A recorded key cannot change, be dropped or become
   * nullable. Works on local and served tables (0.39's client refuses it on a remote table).
   */
  async setUnenforcedPrimaryKey(columns: string | string[]): Promise<void> {
    const cols = await call(async () => (typeof columns === "string" ? [columns] : strList("setUnenforcedPrimaryKey(columns)", columns)));
    this.checkOpen();
    await call(() => this.inner.setUnenforcedPrimaryKey(cols));
  }

  /**
   * As 0.39's `setLsmWriteSpec`, checked as 0.39 checks the spec (a primary key recorded first, its type, the
   * column it needs, 1 to 1024 buckets, maintained indexes that exist; none recorded yet). With a spec recorded,
   * `mergeInsert` upserts on the primary key take the LSM path unless they call `useLsm(false)`, and other merge
   * forms are refused as 0.39 refuses them. On a served table the LSM path is its MemWAL (one shard: every spec
   * routes every row to it). A local table has no MemWAL: its upserts commit at once, so their rows are in the
   * base (durable, and read by `useLsm(false)`) when the call returns. `writerConfigDefaults` takes only
   * `durable_write` (memwal's MemWAL always persists before it acknowledges); other keys are refused by name.
   */
  async setLsmWriteSpec(spec: LsmWriteSpec): Promise<void> {
    if (spec === null || typeof spec !== "object") throw invalid("setLsmWriteSpec(spec) must be an object with a specType");
    if (spec.specType === undefined) throw invalid("Missing field `specType`");
    if (spec.specType !== "bucket" && spec.specType !== "identity" && spec.specType !== "unsharded") {
      throw invalid(`LsmWriteSpec \`specType\` must be 'bucket', 'identity', or 'unsharded', got '${String(spec.specType)}'`);
    }
    checkOptions("setLsmWriteSpec(spec)", spec, ["specType", "column", "numBuckets", "maintainedIndexes", "writerConfigDefaults"]);
    if (spec.specType !== "unsharded") {
      if (spec.column === undefined) throw invalid(`LsmWriteSpec ${spec.specType} requires \`column\``);
      str("setLsmWriteSpec(spec.column)", spec.column);
    }
    let sharding: Record<string, unknown> = { mode: spec.specType };
    if (spec.specType === "bucket") {
      if (spec.numBuckets === undefined) throw invalid("LsmWriteSpec bucket requires `numBuckets`");
      const n = spec.numBuckets;
      if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 1024) {
        throw invalid(`bucket_sharding: num_buckets must be in [1, 1024], got ${String(n)}`);
      }
      sharding = { mode: "bucket", column: spec.column, num_buckets: n };
    } else if (spec.specType === "identity") {
      sharding = { mode: "identity", column: spec.column };
    }
    const maintained =
      spec.maintainedIndexes === undefined ? null : strList("setLsmWriteSpec(spec.maintainedIndexes)", spec.maintainedIndexes);
    const config = spec.writerConfigDefaults ?? {};
    if (config === null || typeof config !== "object" || Object.values(config).some((v) => typeof v !== "string")) {
      throw invalid("setLsmWriteSpec(spec.writerConfigDefaults) must map names to strings");
    }
    this.checkOpen();
    const body = { sharding, maintained_indexes: maintained, writer_config_defaults: config };
    await call(() => this.inner.setLsmWriteSpec(JSON.stringify(body)));
  }

  /** As 0.39's `unsetLsmWriteSpec`: removes the recorded spec (an error when there is none); upserts then take the standard path. */
  async unsetLsmWriteSpec(): Promise<void> {
    this.checkOpen();
    await call(() => this.inner.setLsmWriteSpec(null));
  }

  /** As 0.39's `getLsmWriteSpec`: the recorded spec (maintained indexes resolved when it was set), or `undefined`. */
  async getLsmWriteSpec(): Promise<LsmWriteSpec | undefined> {
    this.checkOpen();
    const json = await call(() => this.inner.lsmWriteSpec());
    if (json === null || json === undefined) return undefined;
    const w = JSON.parse(json) as {
      sharding: { mode: LsmWriteSpec["specType"]; column?: string; num_buckets?: number };
      maintained_indexes?: string[] | null;
      writer_config_defaults?: Record<string, string>;
    };
    const out: LsmWriteSpec = {
      specType: w.sharding.mode,
      maintainedIndexes: w.maintained_indexes ?? [],
      writerConfigDefaults: w.writer_config_defaults ?? {},
    };
    if (w.sharding.column !== undefined) out.column = w.sharding.column;
    if (w.sharding.num_buckets !== undefined) out.numBuckets = w.sharding.num_buckets;
    return out;
  }

  /**
   * As 0.39's `prewarmData`, which only remote tables answer: refused on a local table with 0.39's text. memwal's
   * remote client does not send it either (NotSupported), since no server memwal speaks to keeps a cache to warm.
   */
  async prewarmData(columns?: string[]): Promise<void> {
    this.checkOpen();
    if (columns !== undefined) strList("prewarmData(columns)", columns);
    if (this._display.startsWith("RemoteTable(")) throw notSupported("prewarmData is not supported by memwal's remote client");
    throw notSupported("prewarm_data is currently only supported on remote tables.");
  }

  /**
   * Moves this handle to `version`, or to the version a tag names, as @lancedb/lancedb 0.39 does: reads see that
   * version and writes are refused ("table cannot be modified when a specific version is checked out") until
   * `checkoutLatest()` or `restore()`. Queries built before keep the version they were built on.
   */
  async checkout(version: number | string): Promise<void> {
    const v =
      typeof version === "string"
        ? await this.tags().then((t) => t.getVersion(version))
        : await call(async () => count("checkout(version)", version));
    this.inner = await call(() => this.inner.checkout(v));
  }

  /**
   * The branch this handle reads, as 0.39's `currentBranch`: null (the main line). memwal tables have no other
   * branch (see {@link branches}).
   */
  currentBranch(): string | null {
    this.checkOpen();
    return null;
  }

  /** 0.39's branches: a memwal table has only its main line, so `list()` is empty and the rest is refused. */
  async branches(): Promise<Branches> {
    this.checkOpen();
    return new Branches();
  }

  /**
   * As Lance's `update_config`: sets `upsertValues`' entries of the table's config and removes `deleteKeys`, in
   * one new version. Two keys ask for automatic cleanup, with Lance's names and meaning:
   * `lance.auto_cleanup.interval` (every how many versions) and `lance.auto_cleanup.older_than` (a duration
   * such as `"7days"`, `"3600s"`, `"1ms"`); with both set, each commit of a version that is a multiple of the
   * interval then removes the versions older than that (never the latest or a tagged one; files no version
   * names stay 7 days, as Lance keeps them, so another process's commit in flight keeps its files). A served
   * table runs no cleanup in its writes: the server's background cleanup takes `older_than` as this table's
   * retention instead. Values are checked (a bad one is refused naming its key); keys memwal owns (`memwal.*`,
   * the LSM write spec) are refused.
   */
  async updateConfig(upsertValues: Record<string, string>, deleteKeys: string[] = []): Promise<void> {
    const { upsert, del } = await call(async () => ({
      upsert: strRecord("updateConfig(upsertValues)", upsertValues),
      del: strList("updateConfig(deleteKeys)", deleteKeys),
    }));
    this.checkOpen();
    await call(() => this.inner.updateConfig(upsert, del));
  }

  /** As Lance's `config()`: the table's config entries (every metadata entry of this handle's version). */
  async config(): Promise<Record<string, string>> {
    this.checkOpen();
    return call(() => this.inner.config());
  }

  /** Names for versions, as @lancedb/lancedb 0.39's `tags()`. */
  async tags(): Promise<Tags> {
    return new Tags(this.inner);
  }

  /** Moves this handle back to the latest version, writable (as @lancedb/lancedb 0.39). */
  async checkoutLatest(): Promise<void> {
    this.inner = await call(() => this.inner.checkout(null));
  }

  /** Rows, optionally only those matching `filter`. */
  countRows(filter?: string): Promise<number> {
    return call(async () => this.inner.countRows(optStr("countRows(filter)", filter) ?? null));
  }

  /**
   * Adds rows; answers `{ version }`, the version committed (as @lancedb/lancedb 0.39's `AddResult`). On a table
   * with embedding functions, a vector column no row gives (missing or null) is computed from the source column first.
   * A {@link Scannable} is scanned once and its batches written as one version.
   */
  async add(data: Data | Scannable, options?: AddOptions): Promise<AddResult> {
    const started = Date.now();
    const mode = await call(async () => {
      this.checkOpen(); // refused before any embedding function runs
      checkOptions("add(options)", options, ["mode", "progress"]);
      const mode = options?.mode ?? "append";
      if (mode !== "append" && mode !== "overwrite") {
        throw invalid(`add(options.mode) must be "append" or "overwrite", got ${JSON.stringify(mode)}`);
      }
      if (options?.progress !== undefined && typeof options.progress !== "function")
        throw invalid("add(options.progress) must be a function");
      return mode;
    });
    if (data instanceof Scannable) data = await call(() => scanToTable(data as Scannable));
    const schema = Array.isArray(data) && mode !== "overwrite" ? await this.schema() : undefined;
    // Outside call(): an error of the caller's embedding function reaches the caller as thrown.
    const input = mode === "overwrite" ? await this.embeddings.embedOverwrite(data) : await this.embeddings.embed(data, schema);
    const { version, rows, bytes } = await callReworded(ADD_REWORDS, async () => {
      const buf = toBuffer(input, schema);
      const version = await this.inner.add(buf, mode);
      return { version, rows: options?.progress ? fromBuffer(buf).numRows : 0, bytes: buf.length };
    });
    if (options?.progress) {
      const p: WriteProgress = {
        outputRows: rows,
        outputBytes: bytes,
        totalRows: rows,
        elapsedSeconds: (Date.now() - started) / 1000,
        activeTasks: 0,
        totalTasks: 1,
        done: true,
      };
      try {
        options.progress(p);
      } catch (e) {
        console.warn("add(options.progress) threw; the add is committed:", e);
      }
    }
    return { version };
  }

  /** Deletes rows matching `predicate`. */
  delete(predicate: string): Promise<{ version: number; numDeletedRows: number }> {
    return call(async () => this.inner.delete(str("delete(predicate)", predicate)));
  }

  /**
   * Sets columns on rows matching `where`, in @lancedb/lancedb 0.39's three forms: `{ where?, values? | valuesSql? }`;
   * or the SQL per column directly, as a Record or a Map (`update({ price: "price * 2" }, { where: "id > 3" })`).
   * An object is the first form when it has a `values` or `valuesSql` key, as 0.39 decides.
   */
  update(
    updates: UpdateOptions | Record<string, string> | Map<string, string>,
    options?: { where?: string },
  ): Promise<{ version: number; rowsUpdated: number }> {
    return call(async () => {
      if (typeof updates !== "object" || updates === null) {
        throw invalid(`update(options) must be { where?, values? | valuesSql? } or { column: sql }, got ${String(updates)}`);
      }
      checkOptions("update(.., options)", options, ["where"]);
      const optWhere = optStr("update(.., options.where)", options?.where);
      const values: Record<string, string> = {};
      let where: string | undefined;
      const isOptions = !(updates instanceof Map) && ("values" in updates || "valuesSql" in updates);
      if (isOptions) {
        const o = updates as UpdateOptions;
        checkOptions("update(options)", o, ["where", "values", "valuesSql"]);
        for (const [k, v] of Object.entries(o.valuesSql ?? {})) values[k] = str(`update valuesSql.${k}`, v);
        for (const [k, v] of Object.entries(o.values ?? {})) values[k] = sqlLiteral(v);
        where = optStr("update(options.where)", o.where);
        if (where !== undefined && optWhere !== undefined) throw invalid("update: give `where` once, in the first argument or in options");
        where = where ?? optWhere;
      } else {
        const entries = updates instanceof Map ? [...updates.entries()] : Object.entries(updates);
        for (const [k, v] of entries) values[str("update column name", k)] = str(`update({ ${k}: sql }): the SQL`, v);
        where = optWhere;
      }
      return this.inner.update(where ?? null, values);
    });
  }

  /** A scan builder. */
  query(): Query {
    return new Query(this.inner);
  }

  /**
   * The rows at these positions of a scan of the table's live rows (0 is the first), as @lancedb/lancedb's
   * `takeOffsets`: a query (select, withRowId, toArray ...) answering them in scan order.
   */
  takeOffsets(offsets: number[]): Query {
    if (!Array.isArray(offsets)) throw invalid("takeOffsets(offsets) must be an array of whole numbers");
    const list = offsets.map((o, i) => count(`takeOffsets(offsets)[${i}]`, o));
    return this.query().where(list.length === 0 ? "false" : `_rowoffset IN (${list.join(", ")})`);
  }

  /**
   * The rows with these row ids (from `withRowId()`: stable for a row within a version), as @lancedb/lancedb's
   * `takeRowIds`: a query answering them in scan order; ids of no live row are skipped.
   */
  takeRowIds(rowIds: Array<number | bigint>): Query {
    if (!Array.isArray(rowIds)) throw invalid("takeRowIds(rowIds) must be an array of row ids");
    // The texts first, and the order of the checks, are @lancedb/lancedb 0.39's.
    const list = rowIds.map((r, i) => {
      const bad = (text: string) =>
        invalid(`${text}: takeRowIds(rowIds)[${i}] is ${String(r)} (a row id is a whole number from 0 to 2^64-1)`);
      if (typeof r === "bigint") {
        if (r < 0n) throw bad("Row id cannot be negative");
        if (r >= 2n ** 64n) throw bad("Row id is too large to fit in u64");
      } else {
        if (!Number.isInteger(r)) throw bad("Row id must be an integer (or bigint)");
        if (r < 0) throw bad("Row id cannot be negative");
        if (!Number.isSafeInteger(r)) throw bad("Row id is too large for number; use bigint instead");
      }
      return BigInt(r).toString();
    });
    return this.query().where(list.length === 0 ? "false" : `_rowid IN (${list.join(", ")})`);
  }

  /**
   * As @lancedb/lancedb 0.39's `search`: a vector is a vector query; `queryType` "fts" (or a FullTextQuery) is a
   * full-text search of `ftsColumns`; text with "auto" (the default) is embedded with the table's embedding
   * function (`computeQueryEmbeddings`, when the query runs) and searched in its vector column, or, on a table
   * without one, searched as full text (0.39's rule); "vector" always embeds.
   */
  search(query: FullTextQuery, queryType?: string, ftsColumns?: string | string[]): Query;
  search(query: string, queryType: "fts", ftsColumns?: string | string[]): Query;
  search(query: IntoVector | string, queryType?: string, ftsColumns?: string | string[]): VectorQuery;
  search(query: IntoVector | string | FullTextQuery, queryType?: string, ftsColumns?: string | string[]): VectorQuery | Query {
    const type = queryType ?? "auto";
    if (type !== "auto" && type !== "vector" && type !== "fts") {
      if (type === "hybrid")
        throw notSupported('search(query, "hybrid"): use query().nearestTo(vector).fullTextSearch(text).rerank(reranker)');
      throw invalid(`search(query, queryType): queryType must be "vector", "fts" or "auto", got ${JSON.stringify(queryType)}`);
    }
    const text = typeof query === "string" || instanceOfFullTextQuery(query);
    if (!text) {
      if (type === "fts") throw invalid("Cannot perform full text search on a vector query");
      return vectorQuery(this.inner, query as IntoVector);
    }
    if (type === "fts" || typeof query !== "string") {
      return this.query().fullTextSearch(query as string | FullTextQuery, { columns: ftsColumns });
    }
    const q = embeddedQuery(this.inner, (column) => this.embeddings.queryVector(query, column));
    if (type === "auto") {
      q.autoFullText = { text: query, columns: ftsColumns, useText: async () => !(await this.embeddings.hasFunctions()) };
    } else if (ftsColumns !== undefined) {
      throw invalid('search(query, "vector", ftsColumns): ftsColumns are for a full-text search');
    }
    return q;
  }

  /** A vector query for one vector, or several (a `query_index` column tells them apart). */
  vectorSearch(vectors: IntoVector | IntoVector[]): VectorQuery {
    return vectorQuery(this.inner, vectors);
  }

  /** Every row. */
  async toArrow(): Promise<ArrowTable> {
    return this.query().toArrow();
  }

  /**
   * As @lancedb/lancedb 0.39's `optimize`: compacts as Lance does (the fragments smaller than
   * `targetRowsPerFragment` and those whose deleted share is above `materializeDeletionsThreshold` are rewritten
   * together, dropping their deleted rows; row content unchanged; other fragments stay), folds new rows into the
   * indexes, then removes versions older than `cleanupOlderThan` (a Date, or an age in
   * milliseconds; default 7 days) and every file only they named. The latest version and tagged versions are
   * always kept. Files no version names (a failed or in-flight commit's) go only when older than the cutoff too,
   * or with `deleteUnverified` (which can break a commit another process is making at that moment).
   * `filesRemoved` / `filesAdded` count data files (one per fragment).
   */
  async optimize(options?: OptimizeOptions): Promise<OptimizeStats> {
    const older = await call(async () => {
      checkOptions("optimize(options)", options, [
        "cleanupOlderThan",
        "deleteUnverified",
        "targetRowsPerFragment",
        "materializeDeletionsThreshold",
      ]);
      const c = options?.cleanupOlderThan;
      if (options?.deleteUnverified !== undefined && typeof options.deleteUnverified !== "boolean")
        throw invalid("optimize(options.deleteUnverified) must be a boolean");
      if (c === undefined) return SEVEN_DAYS_MS;
      if (c instanceof Date) {
        const age = Date.now() - c.getTime();
        if (!Number.isFinite(age)) throw invalid("optimize(options.cleanupOlderThan) is an invalid Date");
        return Math.max(0, age);
      }
      return count("optimize(options.cleanupOlderThan) (milliseconds)", c);
    });
    const compaction = await call(async () => optimizeCompaction(options));
    const s = await call(() => this.inner.optimize(compaction));
    const p = await call(() => this.inner.cleanupOldVersions(older, options?.deleteUnverified ?? false));
    return {
      compaction: {
        fragmentsRemoved: s.fragmentsRemoved,
        fragmentsAdded: s.fragmentsAdded,
        filesRemoved: s.fragmentsRemoved,
        filesAdded: s.fragmentsAdded,
      },
      prune: { bytesRemoved: p.bytesRemoved, oldVersionsRemoved: p.oldVersionsRemoved },
    };
  }

  /**
   * Builds an index on `column` (Index.ivfPq() for a vector column unless `options.config` says otherwise) and
   * commits a version recording it. Rows written later are searched exactly until `optimize()` adds them.
   */
  createIndex(column: string, options?: IndexOptions): Promise<void> {
    return callReworded(CREATE_INDEX_REWORDS, async () =>
      this.inner.createIndex(str("createIndex(column)", column), indexOptions(options)),
    );
  }

  /**
   * As 0.39's `createIndexAsync`: builds the index (as {@link createIndex}) and answers a finished {@link Job}.
   */
  async createIndexAsync(column: string, options?: IndexOptions): Promise<Job> {
    await this.createIndex(column, options);
    return new Job();
  }

  /** The indexes; `indexType` as @lancedb/lancedb 0.39 lists it (`IvfPq`, `IvfFlat`, `FTS`; indexStats says `IVF_PQ`). */
  async listIndices(): Promise<(IndexConfig & IndexStatistics)[]> {
    const l = await call(() => this.inner.listIndices());
    return l.map(({ createdAtMs, indexDetails, indexUuid, sizeBytes, ...i }) => ({
      ...i,
      indexType: listedType(i.indexType),
      distanceType: i.distanceType ?? undefined,
      indexVersion: i.indexVersion ?? undefined,
      numIndices: i.numSegments,
      indexUuid: indexUuid ?? undefined,
      sizeBytes: sizeBytes ?? undefined,
      createdAt: createdAtMs === undefined || createdAtMs === null ? undefined : new Date(createdAtMs),
      indexDetails: details(indexDetails),
    }));
  }

  /**
   * The tokens the FTS index on `options.column` (or named `options.indexName`: exactly one) makes of `query`, as
   * 0.39's `tokenize`: the same analyzer the index and its queries use.
   */
  async tokenize(query: string, options: TokenizeTableOptions): Promise<FtsToken[]> {
    str("tokenize(query)", query);
    const l = await call(() => this.inner.listIndices());
    return tokenizeWith(query, ftsIndexParams(l, options));
  }

  /** One index's statistics, or undefined when there is none of that name. */
  async indexStats(name: string): Promise<IndexStatistics | undefined> {
    const i = await call(async () => this.inner.indexStats(str("indexStats(name)", name)));
    if (i === null || i === undefined) return undefined;
    return {
      numIndexedRows: i.numIndexedRows,
      numUnindexedRows: i.numUnindexedRows,
      indexType: i.indexType,
      distanceType: i.distanceType ?? undefined,
      numIndices: i.numSegments,
    };
  }

  /**
   * Waits until each named index exists and holds every row (`numUnindexedRows` 0), polling as the official
   * client does. A TimeoutError after `timeoutSeconds` says which index still lacks how many rows (locally,
   * `optimize()` is what adds rows written after the build).
   */
  async waitForIndex(indexNames: string[], timeoutSeconds: number): Promise<void> {
    strList("waitForIndex(indexNames)", indexNames);
    const limit = count("waitForIndex(timeoutSeconds)", timeoutSeconds) * 1000;
    const start = Date.now();
    for (;;) {
      const pending: string[] = [];
      for (const n of indexNames) {
        const s = await this.indexStats(n);
        if (s === undefined) pending.push(`${n} (does not exist)`);
        else if (s.numUnindexedRows > 0) pending.push(`${n} (${s.numUnindexedRows} rows unindexed)`);
      }
      if (pending.length === 0) return;
      const waited = Date.now() - start;
      if (waited >= limit) {
        throw new TimeoutError("Timeout", `waitForIndex timed out after ${waited} ms: ${pending.join(", ")}`);
      }
      await new Promise((r) => setTimeout(r, Math.min(1000, limit - waited)));
    }
  }

  /**
   * As 0.39's `prewarmIndex`: memwal loads an index when a search first uses it and keeps it, so this checks the
   * index exists (an IndexNotFoundError naming it otherwise) and loads nothing ahead.
   */
  async prewarmIndex(name: string): Promise<void> {
    const n = await call(async () => str("prewarmIndex(name)", name));
    if ((await this.indexStats(n)) === undefined) throw new IndexNotFoundError("IndexNotFound", `index ${n} not found`);
  }

  /**
   * 0.39's `updateFieldMetadata` is refused by name: memwal cannot yet change a column's metadata after the table
   * is created (a schema given to createTable keeps its field metadata).
   */
  async updateFieldMetadata(_updates: unknown): Promise<never> {
    this.checkOpen();
    throw notSupported("updateFieldMetadata is not supported by memwal yet: field metadata is set when the table is created");
  }

  /** 0.39's computed-column refresh: refused by name, as `addColumns({ computed })` is. */
  async refreshColumn(_column: string): Promise<never> {
    this.checkOpen();
    throw notSupported("refreshColumn: computed columns are not supported by memwal yet");
  }

  /** Refused: see {@link refreshColumn}. */
  async refreshColumnAsync(_column: string): Promise<never> {
    this.checkOpen();
    throw notSupported("refreshColumnAsync: computed columns are not supported by memwal yet");
  }

  /** 0.39's materialized-view refresh: refused by name (memwal has no materialized views). */
  async refreshMaterializedView(_options?: unknown): Promise<never> {
    this.checkOpen();
    throw notSupported("refreshMaterializedView: materialized views are not supported by memwal");
  }

  /** Whether the table uses Lance's V2 manifest paths: false, memwal keeps its own single manifest layout. */
  async usesV2ManifestPaths(): Promise<boolean> {
    this.checkOpen();
    return false;
  }

  /** 0.39's migration to V2 manifest paths: refused by name (memwal has one manifest layout). */
  async migrateManifestPathsV2(): Promise<never> {
    this.checkOpen();
    throw notSupported("migrateManifestPathsV2 is not supported by memwal: it has one manifest layout");
  }

  /** Drops an index (a new version without it). */
  dropIndex(name: string): Promise<void> {
    return call(async () => this.inner.dropIndex(str("dropIndex(name)", name)));
  }

  /** Starts a merge insert matching rows on `on` (one column or several). */
  mergeInsert(on: string | string[]): MergeInsertBuilder {
    if (!Array.isArray(on)) str("mergeInsert(on)", on);
    else strList("mergeInsert(on)", on);
    return new MergeInsertBuilder(
      this.inner,
      on,
      () => this.schema(),
      (data, schema) => this.embeddings.embed(data, schema),
    );
  }
}
