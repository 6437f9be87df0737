/**
 * Loads the napi addon (lib/loader.ts finds it: a local build at the package root or the platform
 * package) and declares the shape of what it exports. Only lib/ talks to it.
 */

import * as fs from "node:fs";
import * as path from "node:path";
import { loadAddon } from "./loader";

export interface NativeMergeInsertOptions {
  on: string[];
  whenMatchedUpdateAll: boolean;
  whenMatchedUpdateAllFilt?: string;
  whenNotMatchedInsertAll: boolean;
  whenNotMatchedBySourceDelete: boolean;
  whenNotMatchedBySourceDeleteFilt?: string;
  useIndex?: boolean;
  timeoutMs?: number;
  memWal?: boolean;
}

/** What a merge insert did (re-exported as `MergeResult`). */
export interface NativeMergeResult {
  /** Table version after the merge (unchanged if nothing changed). */
  version: number;
  /** Source rows inserted as new rows. */
  numInsertedRows: number;
  /** Target rows replaced by their source row. */
  numUpdatedRows: number;
  /** Target rows deleted because no source row matched them. */
  numDeletedRows: number;
  /** Commit attempts (or requests, remotely): 1 unless a race was retried. */
  numAttempts: number;
  /** Rows written, as @lancedb/lancedb 0.39 counts them: inserted plus updated. */
  numRows: number;
}

export interface NativeVersion {
  version: number;
  timestamp: number;
  operation: string;
  metadata: Record<string, string>;
}

export interface NativeIndexOptions {
  indexType?: string;
  distanceType?: string;
  numPartitions?: number;
  targetPartitionSize?: number;
  numSubVectors?: number;
  numBits?: number;
  sampleRate?: number;
  maxIterations?: number;
  m?: number;
  efConstruction?: number;
  /** An FTS index's parameters with the wire's names, as JSON text. */
  ftsParams?: string;
  name?: string;
  replace?: boolean;
}

export interface NativeIndexInfo {
  name: string;
  indexType: string;
  columns: string[];
  distanceType?: string;
  numIndexedRows: number;
  numUnindexedRows: number;
  indexUuid?: string;
  numSegments: number;
  sizeBytes?: number;
  /** ms since the Unix epoch. */
  createdAtMs?: number;
  /** The build parameters, as JSON text. */
  indexDetails?: string;
  /** Lance's format version of the index, where memwal's answers it. */
  indexVersion?: number;
}

/** What `stats()` reports (the addon's TableStatistics). */
export interface TableStatistics {
  totalBytes: number;
  numRows: number;
  numIndices: number;
  fragmentStats: {
    numFragments: number;
    numSmallFragments: number;
    lengths: { min: number; max: number; mean: number; p25: number; p50: number; p75: number; p99: number };
  };
}

/** What `getLsmStats()` reports (the addon's LsmStats; @lancedb/lancedb 0.39's shape). */
export interface LsmStats {
  buckets: Array<{
    shardId: string;
    status: string;
    writerEpoch: number;
    manifestVersion: number;
    currentGeneration: number;
    replayAfterWalEntryPosition: number;
    walEntryPositionLastSeen: number;
    generations: Array<{ generation: number; bytes: number; rows?: number }>;
    compacting: boolean;
    memtables?: Array<{ generation: number; rows: number; bytes: number; batches: number; indexes: string[] }>;
  }>;
}

export interface NativeTable {
  readonly name: string;
  schema(): Promise<Buffer>;
  version(): Promise<number>;
  listVersions(): Promise<NativeVersion[]>;
  checkout(version?: number | null): Promise<NativeTable>;
  countRows(filter?: string | null): Promise<number>;
  add(data: Buffer, mode?: string | null): Promise<number>;
  delete(predicate: string): Promise<{ version: number; numDeletedRows: number }>;
  update(filter: string | null | undefined, valuesSql: Record<string, string>): Promise<{ version: number; rowsUpdated: number }>;
  query(options: NativeQueryOptions): Promise<Buffer>;
  explainPlan(options: NativeQueryOptions, verbose?: boolean | null): Promise<string>;
  analyzePlan(options: NativeQueryOptions): Promise<string>;
  optimize(options?: {
    targetRowsPerFragment?: number;
    materializeDeletionsThreshold?: number;
  }): Promise<{ version: number; fragmentsRemoved: number; fragmentsAdded: number; deletedRowsPurged: number }>;
  cleanupOldVersions(olderThanMs: number, deleteUnverified: boolean): Promise<{ bytesRemoved: number; oldVersionsRemoved: number }>;
  /** Checks the clause set once (throwing on an invalid one) and binds it to this table. */
  prepareMergeInsert(options: NativeMergeInsertOptions): NativeMergeInsertPlan;
  createIndex(column: string, options: NativeIndexOptions): Promise<void>;
  listIndices(): Promise<NativeIndexInfo[]>;
  indexStats(name: string): Promise<NativeIndexInfo | null>;
  dropIndex(name: string): Promise<void>;
  restore(version?: number | null): Promise<number>;
  stats(): Promise<TableStatistics>;
  addColumnsSql(columns: Array<{ name: string; valueSql: string }>): Promise<number>;
  addNullColumns(schema: Buffer): Promise<number>;
  alterColumns(
    alterations: Array<{
      path: string;
      rename?: string;
      nullable?: boolean;
      dataTypeJson?: string;
      dataTypeIpc?: Buffer;
    }>,
  ): Promise<number>;
  dropColumns(columns: string[]): Promise<number>;
  getLsmStats(includeGenerationRows?: boolean | null): Promise<LsmStats | null>;
  flushLsm(): Promise<void>;
  setUnenforcedPrimaryKey(columns: string[]): Promise<void>;
  setLsmWriteSpec(specJson: string | null): Promise<void>;
  lsmWriteSpec(): Promise<string | null>;
  updateConfig(upsert: Record<string, string>, deleteKeys: string[]): Promise<void>;
  config(): Promise<Record<string, string>>;
  tagsList(): Promise<Record<string, { version: number; manifestSize: number }>>;
  tagSet(tag: string, version: number, replace: boolean): Promise<void>;
  tagDelete(tag: string): Promise<void>;
  tagVersion(tag: string): Promise<number>;
}

export interface NativeConnection {
  readonly uri: string;
  tableNames(startAfter?: string | null, limit?: number | null, namespace?: string[] | null): Promise<string[]>;
  listNamespaces(parent: string[], pageToken?: string | null, limit?: number | null): Promise<{ namespaces: string[]; pageToken?: string }>;
  createNamespace(path: string[], properties: Record<string, string> | null | undefined, existOk: boolean): Promise<void>;
  describeNamespace(path: string[]): Promise<Record<string, string>>;
  dropNamespace(path: string[], cascade: boolean, skipMissing: boolean): Promise<void>;
  createTable(
    name: string,
    data: Buffer,
    mode?: string | null,
    existOk?: boolean | null,
    namespace?: string[] | null,
  ): Promise<NativeTable>;
  openTable(name: string, namespace?: string[] | null): Promise<NativeTable>;
  dropTable(name: string, namespace?: string[] | null): Promise<void>;
  renameTable(cur: string, newName: string, namespace?: string[] | null, newNamespace?: string[] | null): Promise<void>;
}

export interface NativeConnectOptions {
  apiKey?: string;
  region?: string;
  hostOverride?: string;
  storageOptions?: Record<string, string>;
  clientConfigJson?: string;
  /** Seconds between checks for other writers' versions on a local database (0: every read). */
  readConsistencyInterval?: number;
}

/** How `serve()` runs the bundled server (re-exported as `ServeOptions`). */
export interface NativeServeOptions {
  /** Folder holding the tables and their WALs (only the WALs when `data` is given). */
  dataDir: string;
  /** The tables on an object store instead (`s3://bucket/prefix`, `gs://`, `az://`). */
  data?: string;
  /** Options of that object store, with LanceDB's keys (`aws_endpoint`, `aws_region`, ...). */
  storageOptions?: Record<string, string>;
  /**
   * The WALs on an object store too (`s3://bucket/wal-prefix`; needs `data`, same
   * `storageOptions`; `dataDir` then holds nothing): an acknowledged MemWAL write survives the
   * loss of this machine, and a second server on the same `data` and `wal` takes the tables
   * over, after which this one's writes fail with `Unavailable` (fenced).
   */
  wal?: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  /** Required API key (any key is accepted when omitted). */
  apiKey?: string;
  /** Largest request body in bytes (default 256 MiB). */
  maxBodyBytes?: number;
  /** Memtable rows that trigger a flush into the base table. */
  flushRows?: number;
  /** Longest a memtable waits before it is flushed, ms. */
  flushIntervalMs?: number;
}

export interface NativeServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** A checked merge insert bound to its table; each `execute` runs it on new data. */
export interface NativeMergeInsertPlan {
  execute(data: Buffer): Promise<NativeMergeResult>;
}

export interface NativeAddon {
  connect(
    uri: string,
    options?: NativeConnectOptions | null,
    headerProvider?: (() => Promise<Record<string, string>>) | null,
  ): Promise<NativeConnection>;
  serve?(options: NativeServeOptions): Promise<NativeServer>;
  /** The Rust `ErrorCode` list, in order. */
  errorCodes(): string[];
  /** The tokens of a text under FTS parameters (the wire's names, JSON text). */
  tokenize(text: string, paramsJson: string): { text: string; position: number }[];
}

function packageRoot(): string {
  // lib/ (ts-jest) and dist/lib/ (compiled) both resolve to the package root.
  const dirs = [path.join(__dirname, ".."), path.join(__dirname, "..", "..")];
  return dirs.find((d) => fs.existsSync(path.join(d, "package.json"))) ?? dirs[0];
}

export const native: NativeAddon = loadAddon<NativeAddon>({ root: packageRoot() });

/** A scan, or a vector search when `vectors` is set (src/table.rs `QueryOptions`). */
export interface NativeQueryOptions {
  filter?: string;
  columns?: string[];
  projections?: Array<{ alias: string; sql: string }>;
  orderBy?: Array<{ columnName: string; ascending: boolean; nullsFirst: boolean }>;
  limit?: number;
  offset?: number;
  withRowId?: boolean;
  vectors?: number[][];
  column?: string;
  distanceType?: string;
  prefilter?: boolean;
  lowerBound?: number;
  upperBound?: number;
  nprobes?: number;
  minimumNprobes?: number;
  maximumNprobes?: number;
  ef?: number;
  refineFactor?: number;
  bypassVectorIndex?: boolean;
  fastSearch?: boolean;
  /** A full-text query as the wire's `full_text_query` body, as JSON text. */
  fullText?: string;
  baseOnly?: boolean;
}
