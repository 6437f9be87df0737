import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export function tmpDir(prefix = "memwal-test-"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function people(pairs: Array<[number, number]>): Array<Record<string, unknown>> {
  return pairs.map(([id, age]) => ({ id: BigInt(id), age: BigInt(age), name: `n${id}` }));
}

/** id -> age for every row, sorted by id. */
export async function ages(tbl: { toArrow(): Promise<import("apache-arrow").Table> }): Promise<Array<[number, number | null]>> {
  const t = await tbl.toArrow();
  const out: Array<[number, number | null]> = [];
  for (const r of t.toArray()) {
    const age = r.age;
    out.push([Number(r.id), age === null || age === undefined ? null : Number(age)]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/** Search answers as [id, _distance, query_index (-1 when absent)]. */
export function searchKey(rows: Array<Record<string, unknown>>): number[][] {
  return rows.map((x) => [Number(x.id), Number(x._distance), x.query_index === undefined ? -1 : Number(x.query_index)]);
}

/** Two search answers agree: same ids and query indexes in order, distances within 1e-5. */
export function expectSameSearch(a: number[][], b: number[][]): void {
  expect(a.map((x) => [x[0], x[2]])).toEqual(b.map((x) => [x[0], x[2]]));
  a.forEach((x, i) => {
    expect(Math.abs(x[1] - b[i][1])).toBeLessThan(1e-5);
  });
}

/**
 * The three kinds of table every search and index test runs on: a local folder, memory, and a table of the
 * real bundled server on 127.0.0.1 through our remote client. Registers the server's start and stop with the
 * calling test file's beforeAll / afterAll; `remote()` is the served connection once started.
 */
export function tableKinds(): {
  kinds: Array<[string, () => Promise<import("../lib").Connection>]>;
  remote: () => import("../lib").Connection;
} {
  // Loaded lazily so that helpers.ts stays usable by tests that never start a server.
  const lib = require("../lib") as typeof import("../lib");
  let server: import("../lib").Server | undefined;
  let remote: import("../lib").Connection | undefined;
  beforeAll(async () => {
    server = await lib.serve({ dataDir: tmpDir(), apiKey: "k", flushIntervalMs: 60_000 });
    remote = await lib.connect("db://test", { apiKey: "k", region: "local", hostOverride: server.url });
  });
  afterAll(async () => server?.close());
  const served = () => {
    if (remote === undefined) throw new Error("the served connection exists once beforeAll has run");
    return remote;
  };
  return {
    kinds: [
      ["local folder", () => lib.connect(tmpDir())],
      ["memory", () => lib.connect("memory://")],
      ["served", async () => served()],
    ],
    remote: served,
  };
}
