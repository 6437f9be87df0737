/**
 * memwal: LanceDB-style tables with a durable MemWAL upsert path.
 *
 * ```ts
 * const db = await connect("./data");
 * const tbl = await db.createTable("events", [{ id: 1n, v: 1.5 }]);
 * await tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows);
 * ```
 */
export { connect, Connection } from "./connection";
export type { ClientConfig, ConnectionOptions, CreateTableOptions, HeaderProvider, RetryConfig, TimeoutConfig, TlsConfig } from "./connection";
export { Table } from "./table";
export { Query, VectorQuery } from "./query";
export type { DistanceType, IntoVector } from "./query";
export type { AddOptions, UpdateOptions, VersionInfo } from "./table";
export { MergeInsertBuilder } from "./merge";
export type { ExecuteOptions, MergeResult } from "./merge";
export type { Data } from "./arrow";
export { rowsToTable } from "./arrow";
export { serve } from "./server";
export type { ServeOptions, Server } from "./server";
export {
  ERROR_CODES,
  ERROR_CLASSES,
  MemwalError,
  InvalidInputError,
  NotSupportedError,
  TableNotFoundError,
  TableAlreadyExistsError,
  VersionNotFoundError,
  CommitConflictError,
  TimeoutError,
  CorruptError,
  IoError,
  HttpError,
  AuthError,
  RetryLimitError,
  HeaderProviderError,
  BusyError,
  PoisonedError,
  UnavailableError,
  InternalError,
} from "./errors";
export type { ErrorCode } from "./errors";
