/**
 * `Job`, as @lancedb/lancedb 0.39 answers `createIndexAsync` and `dropTableAsync`. memwal runs those operations
 * before answering, so every Job it gives is already finished, like 0.39's for a local table: no id, state
 * "finished"; `wait` and `cancel` return at once, `events` is refused (there is no job to ask about).
 */
import { checkOptions } from "./args";
import { notSupported } from "./errors";

/** Options of {@link Job.events}, as 0.39's `JobEventsOptions`. */
export interface JobEventsOptions {
  limit?: number;
  filter?: string;
}

/** A finished operation (see the module comment). */
export class Job {
  /** null: the operation finished before its handle was made, so it has no id. */
  get id(): string | null {
    return null;
  }
  get state(): string | null {
    return "finished";
  }
  get jobType(): string | null {
    return null;
  }
  get creationMs(): number | null {
    return null;
  }
  get spec(): unknown {
    return null;
  }
  get result(): unknown {
    return null;
  }
  get failure(): unknown {
    return null;
  }
  async status(): Promise<string> {
    return "finished";
  }
  /** Returns at once: the operation is done. */
  async wait(): Promise<void> {}
  /** Cancelling a finished job does nothing (as 0.39). */
  async cancel(): Promise<void> {}
  async refresh(): Promise<void> {}
  async events(options?: JobEventsOptions): Promise<never> {
    checkOptions("events(options)", options, ["limit", "filter"]);
    throw notSupported("this operation completed before its handle was created, so it carries no job id to query events with");
  }
  toString(): string {
    return 'Job(\n    state="finished",\n)';
  }
}
