/**
 * How a query runs, as @lancedb/lancedb 0.39's `QueryExecutionOptions` (the argument of `toArrow`, `toArray`):
 * `timeoutMs` and `maxBatchLength`, checked by name and both applied here, around the engine's answer.
 */
import { Table as ArrowTable, type RecordBatch } from "apache-arrow";
import { checkOptions, count } from "./args";
import { invalid, TimeoutError } from "./errors";

/** Options for running a query (0.39's `QueryExecutionOptions`). */
export interface QueryExecutionOptions {
  /** At most this many rows in each record batch of the answer (a whole number >= 1). */
  maxBatchLength?: number;
  /**
   * The query fails with a {@link TimeoutError} ("Query timeout after N ms", 0.39's text) when its answer takes
   * longer than this many milliseconds (0: always, as in 0.39). The engine's work is not cancelled: its answer
   * is dropped.
   */
  timeoutMs?: number;
}

/** The options checked: unknown names and wrong types are refused by name. */
export function checkExecution(name: string, options: unknown): QueryExecutionOptions {
  checkOptions(name, options, ["maxBatchLength", "timeoutMs"]);
  const o = (options ?? {}) as Record<string, unknown>;
  const out: QueryExecutionOptions = {};
  if (o.maxBatchLength !== undefined && o.maxBatchLength !== null) {
    out.maxBatchLength = count(`${name}.maxBatchLength`, o.maxBatchLength);
    if (out.maxBatchLength === 0) throw invalid(`${name}.maxBatchLength must be at least 1, got 0`);
  }
  if (o.timeoutMs !== undefined && o.timeoutMs !== null) out.timeoutMs = count(`${name}.timeoutMs`, o.timeoutMs);
  return out;
}

function timeoutError(ms: number): TimeoutError {
  return new TimeoutError("Timeout", `Query timeout after ${ms} ms`);
}

/**
 * Runs `run` under the options: it rejects at the deadline, and an answer that arrives after it is refused
 * too (so the outcome does not depend on timer order); the answer's batches are cut to `maxBatchLength`.
 */
export async function withExecution(options: QueryExecutionOptions, run: () => Promise<ArrowTable>): Promise<ArrowTable> {
  const ms = options.timeoutMs;
  let answer: ArrowTable;
  if (ms === undefined) {
    answer = await run();
  } else {
    const start = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timeoutError(ms)), ms);
    });
    const work = run();
    work.catch(() => {}); // its failure after the deadline is nobody's answer
    try {
      answer = await Promise.race([work, deadline]);
    } finally {
      clearTimeout(timer);
    }
    if (performance.now() - start > ms) throw timeoutError(ms);
  }
  return options.maxBatchLength === undefined ? answer : rebatch(answer, options.maxBatchLength);
}

/** `t` with every record batch longer than `max` rows cut into pieces of at most `max` rows. */
function rebatch(t: ArrowTable, max: number): ArrowTable {
  if (t.batches.every((b) => b.numRows <= max)) return t;
  const out: RecordBatch[] = [];
  for (const b of t.batches) {
    for (let i = 0; i < b.numRows; i += max) out.push(b.slice(i, Math.min(i + max, b.numRows)));
  }
  return new ArrowTable(t.schema, out);
}
