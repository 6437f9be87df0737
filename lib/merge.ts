/**
 * The merge-insert builder. Each step returns the builder, so calls chain:
 * `tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(rows)`.
 * Validation (including the MemWAL rules) happens in Rust at `execute`,
 * before any data is read or any request is sent.
 */

import type { Schema } from "apache-arrow";
import { bool, checkOptions, count, optStr } from "./args";
import { type Data, toBuffer } from "./arrow";
import { call, callReworded, MERGE_REWORDS } from "./errors";
import type { NativeMergeInsertOptions, NativeMergeResult, NativeTable } from "./native";

/** What a merge insert did: version and row counts. */
export type MergeResult = NativeMergeResult;

export interface ExecuteOptions {
  /** Give up after this many ms (nothing is committed). */
  timeoutMs?: number;
  /** Override `useIndex()`. */
  useIndex?: boolean;
}

export class MergeInsertBuilder {
  private readonly opts: NativeMergeInsertOptions;

  /** @internal */
  constructor(
    private readonly table: NativeTable,
    on: string | string[],
    private readonly schema: () => Promise<Schema>,
    private readonly embed: (data: Data, schema?: Schema) => Promise<Data> = async (d) => d,
  ) {
    this.opts = {
      on: Array.isArray(on) ? [...on] : [on],
      whenMatchedUpdateAll: false,
      whenNotMatchedInsertAll: false,
      whenNotMatchedBySourceDelete: false,
    };
  }

  /** Replace matched target rows with the source row (only where `where` holds,
   * an SQL filter over `source.` and `target.` columns, e.g. `source.ts > target.ts`). */
  whenMatchedUpdateAll(options?: { where?: string }): this {
    checkOptions("whenMatchedUpdateAll(options)", options, ["where"]);
    this.opts.whenMatchedUpdateAll = true;
    this.opts.whenMatchedUpdateAllFilt = optStr("whenMatchedUpdateAll(options.where)", options?.where);
    return this;
  }

  /** Insert source rows no target row matches. */
  whenNotMatchedInsertAll(): this {
    this.opts.whenNotMatchedInsertAll = true;
    return this;
  }

  /** Delete target rows no source row matches (only where `where` holds, bare target columns: `id < 3`). */
  whenNotMatchedBySourceDelete(options?: { where?: string }): this {
    checkOptions("whenNotMatchedBySourceDelete(options)", options, ["where"]);
    this.opts.whenNotMatchedBySourceDelete = true;
    this.opts.whenNotMatchedBySourceDeleteFilt = optStr("whenNotMatchedBySourceDelete(options.where)", options?.where);
    return this;
  }

  /** Use the key index (default true). */
  useIndex(useIndex: boolean): this {
    this.opts.useIndex = useIndex;
    return this;
  }

  /** Give up after `ms` milliseconds. */
  timeout(ms: number): this {
    this.opts.timeoutMs = count("timeout(ms)", ms, 2 ** 32 - 1);
    return this;
  }

  /** Route the upsert through the MemWAL write path (remote tables only). */
  memWal(enabled = true): this {
    this.opts.memWal = bool("memWal(enabled)", enabled);
    return this;
  }

  /** @lancedb/lancedb 0.39's name for `memWal(enabled)`: the same switch, so its code ports unchanged. */
  useLsm(enabled = true): this {
    this.opts.memWal = bool("useLsm(enabled)", enabled);
    return this;
  }

  /**
   * As 0.39's `validateSingleShard`: whether to check that every row of an LSM upsert routes to one shard. A
   * memwal MemWAL has one bucket, so every row always does; the setting is checked and has nothing to change.
   */
  validateSingleShard(validateSingleShard: boolean): this {
    bool("validateSingleShard(validateSingleShard)", validateSingleShard);
    return this;
  }

  /**
   * Runs the merge. On a table with embedding functions, a vector column no source row gives gets computed from
   * the source column first (after the merge's options are validated, before anything is sent or written).
   */
  async execute(data: Data, options?: ExecuteOptions): Promise<MergeResult> {
    checkOptions("execute(options)", options, ["timeoutMs", "useIndex"]);
    const opts: NativeMergeInsertOptions = { ...this.opts };
    if (options?.timeoutMs !== undefined) opts.timeoutMs = count("execute(options.timeoutMs)", options.timeoutMs, 2 ** 32 - 1);
    if (options?.useIndex !== undefined) opts.useIndex = bool("execute(options.useIndex)", options.useIndex);
    // Validation happens here, once, before the data is converted.
    const plan = await call(async () => this.table.prepareMergeInsert(opts));
    const schema = Array.isArray(data) ? await this.schema() : undefined;
    // Outside call(): an error of the caller's embedding function reaches the caller as thrown.
    const input = await this.embed(data, schema);
    return callReworded(MERGE_REWORDS, async () => plan.execute(toBuffer(input, schema)));
  }
}
