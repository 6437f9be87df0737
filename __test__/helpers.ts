import { execFileSync } from "node:child_process";
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

/** A seeded generator (xorshift32): the same rows on every run. */
export function seeded(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x1_0000_0000;
  };
}

/**
 * `n` documents of ~`len` words from a Zipf vocabulary of `vocab` made-up words (`w0` most frequent), some with the
 * phrase "silver maple harbor" planted; each with an 8-dimensional vector. Ids from `first`.
 */
export function ftsCorpus(
  n: number,
  seed: number,
  first = 0,
  len = 12,
  vocab = 300,
): Array<{ id: number; text: string; vector: number[] }> {
  const rnd = seeded(seed);
  const weights = Array.from({ length: vocab }, (_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const cumulative: number[] = [];
  weights.reduce((acc, w, i) => {
    cumulative[i] = acc + w / total;
    return cumulative[i];
  }, 0);
  const word = () => {
    const u = rnd();
    const i = cumulative.findIndex((c) => c >= u);
    return `w${i < 0 ? vocab - 1 : i}`;
  };
  return Array.from({ length: n }, (_, k) => {
    const words = Array.from({ length: 1 + Math.floor(rnd() * 2 * len) }, word);
    if (rnd() < 0.1) words.splice(Math.floor(rnd() * words.length), 0, "silver", "maple", "harbor");
    return {
      id: first + k,
      text: words.join(" "),
      vector: Array.from({ length: 8 }, () => Math.round((rnd() * 2 - 1) * 1000) / 1000),
    };
  });
}

/**
 * Two ranked answers (`[id, score]`, best first) agree: the same length, scores within 1e-3 relative position by
 * position, and the same ids in each run of tied scores (a run the end of the list cuts may hold different ids of
 * the tie: only its scores are compared).
 */
export function expectSameRanking(label: string, got: number[][], want: number[][]): void {
  const show = `${label}\n got ${JSON.stringify(got)}\nwant ${JSON.stringify(want)}`;
  if (got.length !== want.length) throw new Error(`different lengths: ${show}`);
  got.forEach(([, s], i) => {
    if (Math.abs(s - want[i][1]) > 1e-3 * Math.max(Math.abs(want[i][1]), 1e-6)) throw new Error(`score ${i}: ${show}`);
  });
  const tied = (a: number, b: number) => Math.abs(a - b) <= 1e-6 * Math.max(Math.abs(a), 1e-9);
  for (let i = 0; i < want.length; ) {
    let j = i + 1;
    while (j < want.length && tied(want[j][1], want[i][1])) j += 1;
    const ids = (l: number[][]) =>
      l
        .slice(i, j)
        .map((x) => x[0])
        .sort((a, b) => a - b);
    if (j < want.length && JSON.stringify(ids(got)) !== JSON.stringify(ids(want))) throw new Error(`rows ${i}..${j}: ${show}`);
    i = j;
  }
}

/**
 * The S3 test server (moto_server on 127.0.0.1): `MEMWAL_TEST_S3_ENDPOINT` when scripts/test.sh started one,
 * otherwise one started by scripts/moto.sh for this jest worker (stopped when it exits). A missing moto fails
 * the caller's test, never skips it.
 */
let s3Endpoint = process.env.MEMWAL_TEST_S3_ENDPOINT ?? "";
export function s3TestEndpoint(): string {
  if (!s3Endpoint) {
    const root = path.join(__dirname, "..");
    const moto = path.join(root, ".venv-compat", "bin", "moto_server");
    if (!fs.existsSync(moto)) throw new Error(`${moto} is missing: run scripts/test.sh once`);
    s3Endpoint = execFileSync("bash", [path.join(root, "scripts", "moto.sh"), "0", String(process.pid)], {
      encoding: "utf8",
    }).trim();
  }
  return s3Endpoint;
}

/** Storage options that reach the S3 test server. */
export function s3TestOptions(): Record<string, string> {
  return {
    aws_endpoint: s3TestEndpoint(),
    aws_allow_http: "true",
    aws_access_key_id: "testing",
    aws_secret_access_key: "testing",
    aws_region: "us-east-1",
  };
}

let s3Counter = 0;
/** A fresh prefix in the test bucket. */
export function s3TestUri(name: string): string {
  s3Counter += 1;
  return `s3://memwal-test/jest-${name}-${process.pid}-${Date.now()}-${s3Counter}`;
}
