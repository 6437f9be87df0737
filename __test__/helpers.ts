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
