/**
 * `connect()` and `Connection`: a folder, `memory://`, or `db://name` on
 * LanceDB Cloud / Enterprise / a memwal server.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Schema } from "apache-arrow";
import { Table as ArrowTable } from "apache-arrow";
import { checkOptions, count, optStr, str, strList } from "./args";

import { type Data, toBuffer } from "./arrow";
import { configOption, type Known, prepareCreate } from "./embedding/apply";
import type { EmbeddingFunctionConfig } from "./embedding/registry";
import { call, invalid, notSupported, TableNotFoundError } from "./errors";
import { ourSchema } from "./foreign";
import type { HeaderProvider, OAuthConfig } from "./header";
import { Job } from "./job";
import { type NativeConnection, native } from "./native";
import { Scannable, scanToTable } from "./scannable";
import { Table } from "./table";

export interface RetryConfig {
  /** Total retries (default 3). */
  retries?: number;
  connectRetries?: number;
  readRetries?: number;
  /** Seconds; wait before retry n is backoffFactor * 2^n + random * backoffJitter (defaults 0.25, 0.25). */
  backoffFactor?: number;
  backoffJitter?: number;
  /** HTTP statuses that are retried (default [409, 429, 500, 502, 503, 504]). */
  statuses?: number[];
}

export interface TimeoutConfig {
  /** Overall limit per request, seconds (default none). */
  timeout?: number;
  /** Seconds (default 120). */
  connectTimeout?: number;
  /** Seconds (default 300). */
  readTimeout?: number;
  /** Seconds (default 300). */
  poolIdleTimeout?: number;
}

export interface TlsConfig {
  certFile?: string;
  keyFile?: string;
  sslCaCert?: string;
  assertHostname?: boolean;
}

/**
 * Headers for each request, asked before every try (so a refreshed token is
 * used on a retry): a {@link HeaderProvider} (e.g. `StaticHeaderProvider`,
 * `OAuthHeaderProvider`), any object with `getHeaders()`, or a function
 * returning headers (or a promise of them), as @lancedb/lancedb 0.39 takes.
 * Its headers replace same-named ones; if it throws, the request fails with
 * code `HeaderProvider` and is not sent.
 */
export type HeaderProviderLike =
  | HeaderProvider
  | (() => Record<string, string> | Promise<Record<string, string>>)
  | { getHeaders(): Record<string, string> | Promise<Record<string, string>> };

export interface ClientConfig {
  userAgent?: string;
  retryConfig?: RetryConfig;
  timeoutConfig?: TimeoutConfig;
  extraHeaders?: Record<string, string>;
  idDelimiter?: string;
  tlsConfig?: TlsConfig;
  userId?: string;
  /** Adds `x-lancedb-mem-wal-enabled: true` to every request. */
  memWalEnabled?: boolean;
  /** Per-request headers (see {@link HeaderProviderLike}). */
  headerProvider?: HeaderProviderLike;
}

export interface ConnectionOptions {
  /** API key for db:// (default: env LANCEDB_API_KEY). */
  apiKey?: string;
  /** Region (default us-east-1). */
  region?: string;
  /** Base URL instead of https://{db}.{region}.api.lancedb.com. */
  hostOverride?: string;
  clientConfig?: ClientConfig;
  /** Key/value options, e.g. `{ remote_database_mem_wal_enabled: "true" }`. */
  storageOptions?: Record<string, string>;
  /**
   * Seconds between a local table's checks for versions other processes committed (LanceDB's option): 0 or
   * unset, every read checks (memwal's default, stronger than LanceDB's "never"); more, reads check at most that
   * often (on an object store each check is a request). A table always sees its own connection's writes, and
   * writes always plan on the latest version. db:// reads always see the latest version.
   */
  readConsistencyInterval?: number;
  /** 0.39's OAuth token flows: refused (NotSupported); give an `OAuthHeaderProvider` instead. */
  oauthConfig?: OAuthConfig;
  /**
   * Local databases: whether child namespaces may be made (0.39's directory-namespace "manifest mode"). memwal's
   * local namespaces need no manifest, so they are on unless this is `false`; db:// refuses it.
   */
  manifestEnabled?: boolean;
  /** Local databases: 0.39's namespace client properties; only `manifest_enabled` ("true" / "false") is read. */
  namespaceClientProperties?: Record<string, string>;
}

export interface CreateTableOptions {
  /** "create" (default) fails if the name is taken; "overwrite" replaces it. */
  mode?: "create" | "overwrite";
  /** With mode "create": open the existing table instead of failing. */
  existOk?: boolean;
  /** Schema for plain-object rows (otherwise inferred). */
  schema?: Schema;
  /** Namespace path of the table (default: the root). */
  namespace?: string[];
  /**
   * The function filling `vectorColumn` (default "vector") from `sourceColumn` on every write lacking it (as
   * @lancedb/lancedb): its class must be registered (`@register("name")`). It is recorded with the table;
   * see the README for where that persists.
   */
  embeddingFunction?: EmbeddingFunctionConfig;
}

/** Options of {@link Connection.openTable}, as 0.39 names them. */
export interface OpenTableOptions {
  /** Open the table checked out at this version (read-only, as `checkout(version)`; `checkoutLatest` returns). */
  version?: number;
  /** Refused (NotSupported): memwal has no branches yet. */
  branch?: string;
  /** Refused (NotSupported): per-table storage options are not implemented (connect() takes the database's). */
  storageOptions?: Record<string, string>;
  /** Refused (NotSupported): memwal keeps each index whole in memory once read; it has no entry cache to size. */
  indexCacheSize?: number;
}

/** openTable()'s options 0.39 takes that memwal does not honour. */
const OPEN_TABLE_UNSUPPORTED: Record<string, string> = {
  branch: "branches are not supported by memwal yet",
  storageOptions: "per-table storage options are not implemented (connect() takes the database's)",
  indexCacheSize: "memwal keeps each index whole in memory once read: there is no index entry cache to size",
};

/** Options of {@link Connection.renameTable}. */
export interface RenameTableOptions {
  /** Namespace of the table (default: the root). */
  namespacePath?: string[];
  /**
   * Namespace to move it to (absent or empty: its own, as 0.39 reads it). db:// sends it as `new_namespace`;
   * memwal's server and local databases refuse a move to another namespace (NotSupported).
   */
  newNamespacePath?: string[];
}

/** connect()'s options. */
const CONNECT_OPTIONS = [
  "apiKey",
  "region",
  "hostOverride",
  "clientConfig",
  "storageOptions",
  "readConsistencyInterval",
  "manifestEnabled",
  "namespaceClientProperties",
] as const;
const CREATE_TABLE_OPTIONS = ["mode", "existOk", "schema", "namespace", "embeddingFunction"] as const;
/** @lancedb/lancedb 0.39's createTable options memwal does not honour, and why. */
const CREATE_TABLE_UNSUPPORTED: Record<string, string> = {
  storageOptions: "per-table storage options are not implemented (connect() takes the database's)",
  dataStorageVersion: "memwal has one storage format",
  enableV2ManifestPaths: "memwal has one manifest layout",
};

/** The key of a table in a connection's memory of embedding functions. */
const tableKey = (name: unknown, ns?: unknown) => JSON.stringify([Array.isArray(ns) ? ns : [], name]);

export class Connection {
  /**
   * The embedding functions of tables this connection created, so that reopening them through it embeds even
   * where the table's schema metadata is not kept (served tables, for now).
   */
  private readonly functions = new Map<string, Known>();

  /** The native connection; undefined once closed. */
  private _inner: NativeConnection | undefined;
  private readonly _uri: string;
  /** For a remote database: the host requests go to, and the namespace delimiter of table ids. */
  private readonly remote?: { host: string; delimiter: string };

  /** What `readConsistencyInterval` the caller gave (seconds; undefined when none: memwal then checks on every read). */
  private readonly consistency: number | undefined;

  /** Whether child namespaces may be made (false when `manifest_enabled` was set to false). @internal */
  childNamespaces = true;

  /** @internal */
  constructor(inner: NativeConnection, remote?: { host: string; delimiter: string }, consistency?: number) {
    this._inner = inner;
    this._uri = inner.uri;
    this.remote = remote;
    this.consistency = consistency;
  }

  /** The native connection, or @lancedb/lancedb 0.39's error once closed: "Connection is closed". */
  private get inner(): NativeConnection {
    this.checkOpen();
    return this._inner as NativeConnection;
  }

  /** The URI (also once closed). */
  get uri(): string {
    return this._uri;
  }

  private checkOpen(): void {
    if (this._inner === undefined) throw invalid("Connection is closed");
  }

  /** Whether the connection is open: true until {@link close}. */
  isOpen(): boolean {
    return this._inner !== undefined;
  }

  /**
   * Closes the connection, as @lancedb/lancedb 0.39: every later call on it fails with "Connection is closed"
   * (`display()` throws it). Tables opened through it stay open. Closing again does nothing.
   */
  close(): void {
    this._inner = undefined;
  }

  /**
   * A description, as @lancedb/lancedb 0.39's: `ListingDatabase(uri=..., read_consistency_interval=None)` for a
   * folder or memory connected without `readConsistencyInterval` (the text 0.39 prints; memwal then checks for
   * other writers' versions on every read, where 0.39 never checks), `=5s` with one (Rust's duration text),
   * `RemoteDatabase(host=...)` for db://. Throws "Connection is closed" once closed, as 0.39 does.
   */
  display(): string {
    this.checkOpen();
    if (this.remote) return `RemoteDatabase(host=${this.remote.host})`;
    return `ListingDatabase(uri=${this._uri}, read_consistency_interval=${intervalText(this.consistency)})`;
  }

  /** console.log and util.inspect show {@link display}. */
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.display();
  }

  /** What a table of this connection displays (see {@link Table.display}). */
  private tableDisplay(name: string, namespace?: string[]): string {
    if (this.remote) return `RemoteTable(${[...(namespace ?? []), name].join(this.remote.delimiter)})`;
    const sep = this._uri.endsWith("/") ? "" : "/";
    return `NativeTable(${name}, uri=${this._uri}${sep}${name}, read_consistency_interval=${intervalText(this.consistency)})`;
  }

  /**
   * Table names, sorted; with `startAfter` only those after it, with `limit` at most that many. As
   * @lancedb/lancedb, a namespace path may come first (`tableNames(["ns"], { limit })`).
   */
  tableNames(
    namespacePathOrOptions?: string[] | { startAfter?: string; limit?: number },
    options?: { startAfter?: string; limit?: number },
  ): Promise<string[]> {
    return call(async () => {
      const ns = Array.isArray(namespacePathOrOptions) ? strList("tableNames(namespacePath)", namespacePathOrOptions) : undefined;
      const opts = Array.isArray(namespacePathOrOptions) ? options : namespacePathOrOptions;
      if (opts !== undefined && (typeof opts !== "object" || opts === null)) {
        throw invalid(`tableNames(options) must be { startAfter?, limit? }, got ${String(opts)}`);
      }
      const startAfter = optStr("tableNames(options.startAfter)", opts?.startAfter);
      const limit = opts?.limit === undefined ? undefined : count("tableNames(options.limit)", opts.limit, 2 ** 32 - 1);
      return this.inner.tableNames(startAfter ?? null, limit ?? null, ns ?? null);
    });
  }

  /** Child namespaces of `namespacePath` (default: the root), one page. */
  listNamespaces(
    namespacePath?: string[],
    options?: { pageToken?: string; limit?: number },
  ): Promise<{ namespaces: string[]; pageToken?: string }> {
    return call(async () => {
      const path = namespacePath === undefined ? [] : strList("listNamespaces(namespacePath)", namespacePath);
      const token = optStr("listNamespaces(options.pageToken)", options?.pageToken);
      const limit = options?.limit === undefined ? undefined : count("listNamespaces(options.limit)", options.limit, 2 ** 32 - 1);
      const page = await this.inner.listNamespaces(path, token ?? null, limit ?? null);
      return page.pageToken ? { namespaces: page.namespaces, pageToken: page.pageToken } : { namespaces: page.namespaces };
    });
  }

  /** Creates a namespace (its parent must exist); `mode: "exist_ok"` accepts an existing one. */
  createNamespace(
    namespacePath: string[],
    options?: { mode?: "create" | "exist_ok" | "overwrite"; properties?: Record<string, string> },
  ): Promise<{ properties?: Record<string, string> }> {
    return call(async () => {
      const path = strList("createNamespace(namespacePath)", namespacePath);
      const mode = options?.mode ?? "create";
      if (mode === "overwrite") throw notSupported("createNamespace with mode overwrite is not supported by memwal yet");
      if (mode !== "create" && mode !== "exist_ok")
        throw invalid(`Invalid mode '${String(mode)}': createNamespace mode must be "create" or "exist_ok"`);
      if (!this.childNamespaces)
        throw notSupported(
          "createNamespace: child namespaces are off on this connection (manifest_enabled is false), as in @lancedb/lancedb 0.39",
        );
      await this.inner.createNamespace(path, options?.properties ?? null, mode === "exist_ok");
      return options?.properties ? { properties: options.properties } : {};
    });
  }

  /** A namespace's properties. */
  describeNamespace(namespacePath: string[]): Promise<{ properties?: Record<string, string> }> {
    return call(async () => {
      const properties = await this.inner.describeNamespace(strList("describeNamespace(namespacePath)", namespacePath));
      return { properties };
    });
  }

  /**
   * Drops a namespace: `behavior: "restrict"` (default) only an empty one, `"cascade"` with its tables and
   * namespaces; `mode: "skip"` accepts a missing one (default `"fail"`).
   */
  dropNamespace(
    namespacePath: string[],
    options?: { mode?: "skip" | "fail"; behavior?: "restrict" | "cascade" },
  ): Promise<Record<string, never>> {
    return call(async () => {
      const path = strList("dropNamespace(namespacePath)", namespacePath);
      const mode = options?.mode ?? "fail";
      const behavior = options?.behavior ?? "restrict";
      if (mode !== "skip" && mode !== "fail") throw invalid(`Invalid mode '${String(mode)}': dropNamespace mode must be "skip" or "fail"`);
      if (behavior !== "restrict" && behavior !== "cascade")
        throw invalid(`Invalid behavior '${String(behavior)}': dropNamespace behavior must be "restrict" or "cascade"`);
      await this.inner.dropNamespace(path, behavior === "cascade", mode === "skip");
      return {};
    });
  }

  /**
   * Creates a table from rows. With `embeddingFunction` (or a `LanceSchema` schema) the vector column is computed
   * from the source column when no row gives it (some rows only: InvalidInput), and the functions are recorded with the table.
   */
  async createTable(name: string, data: Data | Scannable, options?: CreateTableOptions): Promise<Table>;
  /** As 0.39: the namespace path third, `createTable(name, data, ["ns"], options)`. */
  async createTable(name: string, data: Data | Scannable, namespacePath: string[], options?: CreateTableOptions): Promise<Table>;
  /** As 0.39: the name, the rows and the options in one object, `createTable({ name, data, mode })`. */
  async createTable(options: CreateTableOptions & { name: string; data: Data | Scannable }): Promise<Table>;
  async createTable(
    nameOrOptions: string | (CreateTableOptions & { name: string; data: Data | Scannable }),
    data?: Data | Scannable,
    optionsOrNamespace?: CreateTableOptions | string[],
    more?: CreateTableOptions,
  ): Promise<Table> {
    if (Array.isArray(optionsOrNamespace)) {
      if (more?.namespace !== undefined) throw invalid("createTable: give the namespace path once (third argument or options.namespace)");
      return this.createTable(nameOrOptions as string, data as Data, { ...(more ?? {}), namespace: optionsOrNamespace });
    }
    if (more !== undefined) throw invalid("createTable(name, data, options) takes a fourth argument only after a namespace path");
    const options = optionsOrNamespace;
    if (typeof nameOrOptions === "object" && nameOrOptions !== null && !Array.isArray(nameOrOptions)) {
      if (data !== undefined || options !== undefined) {
        throw invalid("createTable({ name, data, ...options }) takes no other argument");
      }
      const { name, data: rows, ...rest } = nameOrOptions;
      if (rows === undefined) throw invalid("createTable({ name, data }): data is required (createEmptyTable takes a schema)");
      return this.createTable(name, rows, rest);
    }
    const name = nameOrOptions as string;
    if (data === undefined) throw invalid("createTable(name, data): data is required (createEmptyTable takes a schema)");
    const fn = await call(async () => {
      this.checkOpen(); // refused before any embedding function runs
      checkOptions("createTable(options)", options, CREATE_TABLE_OPTIONS, CREATE_TABLE_UNSUPPORTED);
      const f = options?.embeddingFunction;
      return f === undefined ? undefined : configOption("createTable(options.embeddingFunction)", f);
    });
    if (data instanceof Scannable) data = await call(() => scanToTable(data as Scannable));
    // Outside call(): an error of the caller's embedding function reaches the caller as thrown.
    const prepared = await prepareCreate(data, options?.schema, fn);
    const t = await call(async () =>
      this.inner.createTable(
        str("createTable(name)", name),
        toBuffer(prepared.data, options?.schema),
        options?.mode ?? "create",
        options?.existOk ?? false,
        nsArg("createTable(options.namespace)", options?.namespace),
      ),
    );
    const key = tableKey(name, options?.namespace);
    if (prepared.known !== undefined) this.functions.set(key, prepared.known);
    else if (options?.mode === "overwrite") this.functions.delete(key);
    return new Table(t, this.functions.get(key), this.tableDisplay(name, options?.namespace));
  }

  /** Creates an empty table with `schema`. */
  async createEmptyTable(name: string, schema: Schema, options?: Omit<CreateTableOptions, "schema">): Promise<Table> {
    const s = await call(async () => {
      this.checkOpen();
      const fields = (schema as { fields?: unknown } | null)?.fields;
      if (!Array.isArray(fields)) throw invalid("createEmptyTable(schema) must be an apache-arrow Schema");
      return ourSchema(schema);
    });
    // The caller's schema object goes along: LanceSchema's function instances are kept by it.
    const opts =
      options !== null && typeof options === "object" && !Array.isArray(options) ? { ...options, schema } : (options ?? { schema });
    return this.createTable(name, new ArrowTable(s), opts as CreateTableOptions);
  }

  /**
   * Opens a table. `namespace` is the table's namespace path (on db://, the id sent is the path and the name
   * joined by `clientConfig.idDelimiter`, default `$`; on a local database, its folder `.namespaces/a/...`).
   */
  async openTable(name: string, namespace?: string[], options?: Partial<OpenTableOptions>): Promise<Table> {
    const version = await call(async () => {
      checkOptions("openTable(options)", options, ["version"], OPEN_TABLE_UNSUPPORTED);
      return options?.version === undefined ? undefined : count("openTable(options.version)", options.version);
    });
    const t = await call(async () => this.inner.openTable(str("openTable(name)", name), nsArg("openTable(namespace)", namespace)));
    const table = new Table(t, this.functions.get(tableKey(name, namespace)), this.tableDisplay(name, namespace));
    if (version !== undefined) await table.checkout(version);
    return table;
  }

  /**
   * Renames a table, with its versions, indexes and tags (as
   * @lancedb/lancedb's `renameTable`). Open handles do not follow: open
   * the new name. Namespaces other than the root are refused by name.
   */
  renameTable(currentName: string, newName: string, options?: RenameTableOptions): Promise<void> {
    if (this._inner === undefined) return call(async () => this.checkOpen());
    return call(async () => {
      const ns = nsArg("renameTable(options.namespacePath)", options?.namespacePath);
      const to = nsArg("renameTable(options.newNamespacePath)", options?.newNamespacePath);
      await this.inner.renameTable(
        str("renameTable(currentName)", currentName),
        str("renameTable(newName)", newName),
        ns ?? null,
        to ?? null,
      );
      const known = this.functions.get(tableKey(currentName, ns));
      this.functions.delete(tableKey(currentName, ns));
      if (known !== undefined) this.functions.set(tableKey(newName, to ?? ns), known);
    });
  }

  /**
   * Drops every table of the namespace (default: the root), as @lancedb/lancedb 0.39's `dropAllTables`. On a
   * remote database it is refused as 0.39 refuses it (NotSupported: "Dropping all tables is not currently
   * supported in the remote API").
   */
  dropAllTables(namespacePath?: string[]): Promise<void> {
    return call(async () => {
      const ns = nsArg("dropAllTables(namespacePath)", namespacePath);
      const inner = this.inner;
      if (this.remote) throw notSupported("dropAllTables: Dropping all tables is not currently supported in the remote API");
      const path = ns !== undefined && ns.length > 0 ? ns : null;
      for (const name of await inner.tableNames(null, null, path)) {
        await inner.dropTable(name, path);
        this.functions.delete(tableKey(name, ns));
      }
    });
  }

  /**
   * A page of table names, as 0.39's `listTables`: a namespace path may come first; `pageToken` (from the last
   * page) resumes after it, `limit` bounds the page. A full page carries a token; the last page none.
   */
  async listTables(
    namespacePathOrOptions?: string[] | { pageToken?: string; limit?: number },
    options?: { pageToken?: string; limit?: number },
  ): Promise<{ tables: string[]; pageToken?: string }> {
    const ns = Array.isArray(namespacePathOrOptions) ? namespacePathOrOptions : undefined;
    const opts = Array.isArray(namespacePathOrOptions) ? options : namespacePathOrOptions;
    await call(async () => checkOptions("listTables(options)", opts, ["pageToken", "limit"]));
    const page = { startAfter: opts?.pageToken, limit: opts?.limit };
    const tables = ns === undefined ? await this.tableNames(page) : await this.tableNames(ns, page);
    const full = opts?.limit !== undefined && tables.length > 0 && tables.length >= opts.limit;
    return full ? { tables, pageToken: tables[tables.length - 1] } : { tables };
  }

  /** 0.39's jobs of a server (`openJob`, `listJobs`, `cancelJob`): memwal keeps none (its operations finish first). */
  async openJob(_id: string): Promise<never> {
    throw notSupported(NO_JOBS);
  }
  /** Refused: see {@link openJob}. */
  async listJobs(_options?: unknown): Promise<never> {
    throw notSupported(NO_JOBS);
  }
  /** Refused: see {@link openJob}. */
  async cancelJob(_id: string): Promise<never> {
    throw notSupported(NO_JOBS);
  }

  /**
   * 0.39's materialized views (`createMaterializedView`, `openMaterializedView`, `listMaterializedViews`) are not
   * built: each is refused by name, before any request, on every kind of database.
   */
  async createMaterializedView(_name: string, _source: string, _options?: unknown): Promise<never> {
    throw materializedViews("createMaterializedView");
  }

  /** Refused: see {@link createMaterializedView}. */
  async openMaterializedView(_name: string): Promise<never> {
    throw materializedViews("openMaterializedView");
  }

  /** Refused: see {@link createMaterializedView}. */
  async listMaterializedViews(): Promise<never> {
    throw materializedViews("listMaterializedViews");
  }

  /** As 0.39's `dropTableAsync`: drops the table (as {@link dropTable}) and answers a finished {@link Job}. */
  async dropTableAsync(name: string, namespace?: string[]): Promise<Job> {
    await this.dropTable(name, namespace);
    return new Job();
  }

  /**
   * As 0.39's `cloneTable`: a new table `targetTableName` holding the rows and schema of the table at
   * `sourceUri` (its latest version, or `sourceVersion`, or the version `sourceTag` names), with one version of
   * its own. `sourceUri` is the table's folder, `DIR/name.lance` (as 0.39 names it; `DIR/name` names the same
   * table). memwal copies the rows (a deep clone, whatever `isShallow` says) and builds no index on the clone
   * (searches are exact until `createIndex`); tags and history stay with the source. Local databases only.
   */
  async cloneTable(
    targetTableName: string,
    sourceUri: string,
    options?: { targetNamespacePath?: string[]; sourceVersion?: number; sourceTag?: string; isShallow?: boolean },
  ): Promise<Table> {
    const target = await call(async () => {
      this.checkOpen();
      checkOptions("cloneTable(options)", options, ["targetNamespacePath", "sourceVersion", "sourceTag", "isShallow"]);
      if (this.remote) throw notSupported("cloneTable is not supported by memwal on a remote database");
      if (options?.sourceVersion !== undefined && options?.sourceTag !== undefined) {
        throw invalid("Cannot specify both source_version and source_tag");
      }
      if (options?.isShallow !== undefined && typeof options.isShallow !== "boolean")
        throw invalid("cloneTable(options.isShallow) must be a boolean");
      return str("cloneTable(targetTableName)", targetTableName);
    });
    const uri = await call(async () => str("cloneTable(sourceUri)", sourceUri));
    const source = await openByUri(uri);
    if (options?.sourceTag !== undefined) await source.checkout(str("cloneTable(options.sourceTag)", options.sourceTag));
    else if (options?.sourceVersion !== undefined) await source.checkout(count("cloneTable(options.sourceVersion)", options.sourceVersion));
    const rows = await source.toArrow();
    const schema = await source.schema();
    return this.createTable(target, new ArrowTable(schema, rows.batches), { namespace: options?.targetNamespacePath });
  }

  /** Drops a table and its data (`namespace` as in {@link openTable}). */
  dropTable(name: string, namespace?: string[]): Promise<void> {
    return call(async () => {
      await this.inner.dropTable(str("dropTable(name)", name), nsArg("dropTable(namespace)", namespace));
      this.functions.delete(tableKey(name, namespace));
    });
  }
}

/** Turns any provider form into the one function the addon calls. */
function providerFn(p: HeaderProviderLike | undefined): (() => Promise<Record<string, string>>) | undefined {
  if (p === undefined) return undefined;
  const get = typeof p === "function" ? p : typeof p?.getHeaders === "function" ? () => p.getHeaders() : undefined;
  if (!get) throw invalid("headerProvider must be a function or an object with getHeaders()");
  return async () => {
    const h = await get();
    if (h === null || typeof h !== "object")
      throw new Error(`headerProvider returned ${h === null ? "null" : typeof h}, not an object of headers`);
    return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, String(v)]));
  };
}

/** An optional namespace path argument: absent, or a list of strings. */
function nsArg(name: string, v: unknown): string[] | undefined {
  return v === undefined || v === null ? undefined : strList(name, v);
}

/** Whether `x` is a header provider (a function, or an object with `getHeaders`). */
function isProvider(x: unknown): x is HeaderProviderLike {
  return typeof x === "function" || (typeof x === "object" && x !== null && "getHeaders" in x);
}

/**
 * The arguments of `connect`, read as @lancedb/lancedb 0.39 reads them: `connect(uri, options?, session?,
 * headerProvider?)`, `connect(uri, options?, headerProvider)` or `connect({ uri, ...options })`. A session
 * (cache sizes) is refused: memwal has no such setting to honour.
 */
function connectArgs(
  uriOrOptions: unknown,
  optionsOrSession: unknown,
  sessionOrProvider: unknown,
  provider: unknown,
): { uri: string; options?: ConnectionOptions; headerProvider?: HeaderProviderLike } {
  const isSession = (x: unknown) => typeof x === "object" && x !== null && "inner" in x;
  if (typeof uriOrOptions === "object" && uriOrOptions !== null && !Array.isArray(uriOrOptions)) {
    const { uri, session, ...options } = uriOrOptions as ConnectionOptions & { uri?: unknown; session?: unknown };
    if (session !== undefined) throw notSupported("connect({ session }) is not supported by memwal: it has no cache settings");
    if (optionsOrSession !== undefined || sessionOrProvider !== undefined || provider !== undefined)
      throw invalid("connect({ uri, ...options }) takes no further arguments");
    return { uri: str("connect(options.uri)", uri), options };
  }
  if (isSession(optionsOrSession) || isSession(sessionOrProvider))
    throw notSupported("connect(uri, options, session) is not supported by memwal: it has no cache settings");
  if (sessionOrProvider !== undefined && sessionOrProvider !== null && !isProvider(sessionOrProvider))
    throw invalid("connect(uri, options, headerProvider): headerProvider must be a function or an object with getHeaders()");
  if (provider !== undefined && provider !== null && !isProvider(provider))
    throw invalid("connect(uri, options, session, headerProvider): headerProvider must be a function or an object with getHeaders()");
  const third = isProvider(sessionOrProvider) ? sessionOrProvider : undefined;
  if (third !== undefined && provider !== undefined && provider !== null)
    throw invalid("connect() got two header providers (third and fourth arguments)");
  return {
    uri: str("connect(uri)", uriOrOptions),
    options: (optionsOrSession ?? undefined) as ConnectionOptions | undefined,
    headerProvider: third ?? ((provider ?? undefined) as HeaderProviderLike | undefined),
  };
}

/**
 * Opens a database: a folder path, `memory://`, or `db://name`. The arguments are those of
 * @lancedb/lancedb 0.39: `connect(uri, options?, session?, headerProvider?)` (the header provider may also
 * come third, or as `options.clientConfig.headerProvider`), or `connect({ uri, ...options })`.
 */
export async function connect(
  uri: string | (ConnectionOptions & { uri: string }),
  options?: ConnectionOptions,
  sessionOrHeaderProvider?: HeaderProviderLike | null,
  headerProvider?: HeaderProviderLike,
): Promise<Connection> {
  const args = await call(async () => connectArgs(uri, options, sessionOrHeaderProvider, headerProvider));
  return open(args.uri, args.options, args.headerProvider);
}

async function open(uri: string, options?: ConnectionOptions, headerProvider?: HeaderProviderLike): Promise<Connection> {
  const { headerProvider: fromConfig, ...clientConfig } = options?.clientConfig ?? {};
  const provider = providerFn(headerProvider ?? fromConfig);
  const consistency = options?.readConsistencyInterval ?? 0;
  const childNamespaces = await call(async () => manifestOption(str("connect(uri)", uri), options));
  const c = await call(async () => {
    str("connect(uri)", uri);
    if (typeof consistency !== "number" || !Number.isFinite(consistency) || consistency < 0)
      throw invalid(`connect(options.readConsistencyInterval) must be a number of seconds >= 0, got ${String(consistency)}`);
    checkOptions("connect(options)", options, CONNECT_OPTIONS, {
      session: "memwal has no cache settings",
      oauthConfig:
        "its OAuth flows (client credentials, Azure managed identity) are not implemented: pass an OAuthHeaderProvider (or any header provider) instead",
    });
    const host = optStr("connect(options.hostOverride)", options?.hostOverride);
    if (host !== undefined) {
      let ok = false;
      try {
        ok = ["http:", "https:"].includes(new URL(host).protocol);
      } catch {
        ok = false;
      }
      if (!ok) throw invalid(`connect(options.hostOverride) must be an http:// or https:// URL, got ${JSON.stringify(host)}`);
    }
    return native.connect(
      uri,
      {
        apiKey: options?.apiKey,
        region: options?.region,
        hostOverride: options?.hostOverride,
        storageOptions: options?.storageOptions,
        clientConfigJson: options?.clientConfig ? JSON.stringify(clientConfig) : undefined,
        readConsistencyInterval: consistency,
      },
      provider,
    );
  });
  const remote = uri.startsWith("db://")
    ? {
        host: options?.hostOverride ?? `https://${uri.slice(5).split("/")[0]}.${options?.region ?? "us-east-1"}.api.lancedb.com`,
        delimiter: clientConfig.idDelimiter ?? "$",
      }
    : undefined;
  const conn = new Connection(c, remote, options?.readConsistencyInterval ?? undefined);
  conn.childNamespaces = childNamespaces;
  return conn;
}

/**
 * Whether `connect(uri, options)` may make child namespaces: `namespaceClientProperties.manifest_enabled` ("true"
 * / "false"), else `manifestEnabled`, else yes. Both are local-database options; other properties are refused by name.
 */
function manifestOption(uri: string, options?: ConnectionOptions): boolean {
  const props = options?.namespaceClientProperties;
  const flag = options?.manifestEnabled;
  if (uri.startsWith("db://") && (props !== undefined || flag !== undefined))
    throw notSupported("connect(options.manifestEnabled / namespaceClientProperties) are for local databases, not db://");
  if (flag !== undefined && typeof flag !== "boolean")
    throw invalid(`connect(options.manifestEnabled) must be a boolean, got ${String(flag)}`);
  checkOptions("connect(options.namespaceClientProperties)", props, ["manifest_enabled"]);
  const v = props?.manifest_enabled;
  if (v !== undefined && v !== "true" && v !== "false")
    throw invalid(`connect(options.namespaceClientProperties.manifest_enabled) must be "true" or "false", got ${String(v)}`);
  return v !== undefined ? v === "true" : flag !== false;
}

/**
 * How 0.39 shows a read consistency interval: `None` when none was given, else as Rust's `Duration` prints
 * (`5s`, `1.5s`, `500ms`, `0ns`).
 */
function intervalText(seconds: number | undefined): string {
  if (seconds === undefined) return "None";
  const nanos = Math.round(seconds * 1e9);
  const units: [number, string][] = [
    [1e9, "s"],
    [1e6, "ms"],
    [1e3, "µs"],
  ];
  for (const [size, name] of units) if (nanos >= size) return `${nanos / size}${name}`;
  return `${nanos}ns`;
}

const NO_JOBS =
  "jobs are not supported by memwal: createIndexAsync and dropTableAsync finish before they answer, so there is no job to open, list or cancel";

/** The refusal of 0.39's materialized views (0.39 has them only on local databases; memwal on none). */
function materializedViews(what: string): Error {
  return notSupported(
    `${what}: materialized views are not supported by memwal (@lancedb/lancedb 0.39 offers them only on local databases)`,
  );
}

/**
 * The table at a folder path: `DIR/name.lance` (its folder, as Lance names it), or `DIR/name` (0.39's code may
 * name it so; an earlier memwal's folder).
 */
async function openByUri(uri: string): Promise<Table> {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(uri) && !uri.startsWith("file://")) {
    throw notSupported(`cloneTable(sourceUri): memwal clones tables of a local folder, not ${uri}`);
  }
  const full = path.resolve(uri.startsWith("file://") ? uri.slice("file://".length) : uri);
  const dir = path.dirname(full);
  const base = path.basename(full);
  const name = base.endsWith(".lance") ? base.slice(0, -".lance".length) : base;
  const folders = [path.join(dir, `${name}.lance`), path.join(dir, name)];
  if (folders.some((f) => fs.existsSync(path.join(f, "_versions")))) return (await connect(dir)).openTable(name);
  throw new TableNotFoundError("TableNotFound", `cloneTable(sourceUri): Dataset at path ${uri} was not found (no memwal table there)`);
}
