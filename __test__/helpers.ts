import * as fs from "fs";
import * as os from "os";
import * as path from "path";

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
