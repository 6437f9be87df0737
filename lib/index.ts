/**
 * memwal: LanceDB-style tables with a durable MemWAL upsert path.
 *
 * ```ts
 * const db = await connect("./data");
 * const tbl = await db.createTable("events", [{ id: 1n, v: 1.5 }]);
 * await tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows);
 * ```
 */

export type { Data } from "./arrow";
export { rowsToTable } from "./arrow";
export type { DataLike, FieldLike, MultiVector, RecordBatchLike, SchemaLike, TableLike } from "./arrow-api";
export { MakeArrowTableOptions, makeArrowTable, VectorColumnOptions } from "./arrow-api";
export type {
  ClientConfig,
  ConnectionOptions,
  CreateTableOptions,
  HeaderProviderLike,
  OpenTableOptions,
  RenameTableOptions,
  RetryConfig,
  TimeoutConfig,
  TlsConfig,
} from "./connection";
export { Connection, connect } from "./connection";
export * as embedding from "./embedding";
export type { ErrorCode } from "./errors";
export {
  AuthError,
  BusyError,
  CommitConflictError,
  CorruptError,
  ERROR_CLASSES,
  ERROR_CODES,
  HeaderProviderError,
  HttpError,
  IndexNotFoundError,
  InternalError,
  InvalidInputError,
  IoError,
  MemwalError,
  NamespaceNotFoundError,
  NotSupportedError,
  PoisonedError,
  RetryLimitError,
  TableAlreadyExistsError,
  TableNotFoundError,
  TagNotFoundError,
  TimeoutError,
  UnavailableError,
  VersionNotFoundError,
} from "./errors";
export type { QueryExecutionOptions } from "./execution";
export {
  BooleanQuery,
  BoostQuery,
  type FullTextQuery,
  type FullTextQueryJson,
  FullTextQueryType,
  type FullTextSearchOptions,
  instanceOfFullTextQuery,
  MatchQuery,
  MultiMatchQuery,
  Occur,
  Operator,
  PhraseQuery,
} from "./fts";
export {
  HeaderProvider,
  type OAuthConfig,
  OAuthFlowType,
  OAuthHeaderProvider,
  StaticHeaderProvider,
  type TokenResponse,
} from "./header";
export type {
  HnswOptions,
  IndexConfig,
  IndexOptions,
  IndexStatistics,
  IvfFlatOptions,
  IvfOptions,
  IvfPqOptions,
  IvfRqOptions,
} from "./indices";
export { type FtsOptions, Index } from "./indices";
export { Job, type JobEventsOptions } from "./job";
export type { ExecuteOptions, MergeResult } from "./merge";
export { MergeInsertBuilder } from "./merge";
export { connectNamespace, type DirNamespaceProperties } from "./namespace";
export type { LsmStats, NativeMergeResult, NativeServeOptions, TableStatistics } from "./native";
export {
  type Creator,
  PermutationBuilder,
  permutationBuilder,
  type ShuffleOptions,
  type SplitCalculatedOptions,
  type SplitHashOptions,
  type SplitRandomOptions,
  type SplitSequentialOptions,
} from "./permutation";
export type { DistanceType, IntoVector } from "./query";
export { type ColumnOrdering, Query, VectorQuery } from "./query";
export * as rerankers from "./rerankers";
export { type Reranker, RRFReranker } from "./rerankers";
export { type BatchSource, type ScanHandle, Scannable, type ScannableOptions } from "./scannable";
export type { ServeOptions, Server } from "./server";
export { serve } from "./server";
export type {
  AddOptions,
  AddResult,
  LsmWriteSpec,
  OptimizeOptions,
  OptimizeStats,
  UpdateOptions,
  VersionInfo,
  WriteProgress,
} from "./table";
export {
  type AddColumnsResult,
  type AddColumnsSql,
  type AlterColumnsResult,
  type BranchContents,
  Branches,
  type ColumnAlteration,
  type DropColumnsResult,
  type SchemaChangeResult,
  Table,
  type TagContents,
  Tags,
} from "./table";
export { type FtsToken, type TokenizeOptions, type TokenizeTableOptions, tokenize } from "./tokenize";
export { type IntoSql, packBits } from "./util";
