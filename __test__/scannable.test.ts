/**
 * Scannable (@lancedb/lancedb 0.39's pull-based batch source): its four constructors and their refusals, what a
 * scan yields (lazily, once for a one-shot source, checked against the declared schema), and memwal's consumers
 * `add` and `createTable` writing what a Scannable yields.
 */
import {
  Table as ArrowTable,
  Field,
  Float64,
  Int32,
  type RecordBatch,
  RecordBatchReader,
  Schema,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from "apache-arrow";
import { connect, InvalidInputError, Scannable } from "../lib";
import { tmpDir } from "./helpers";

const strs = (xs: string[]) => vectorFromArray(xs, new Utf8());
const mk = (ns: number[], ss: string[]) => new ArrowTable({ n: vectorFromArray(ns, new Int32()), s: strs(ss) });
const abc = () => mk([1, 2, 3], ["a", "b", "c"]);
const twoBatches = () => {
  const t = abc();
  return new ArrowTable([...t.batches, ...mk([4], ["d"]).batches]);
};

async function collect(s: Scannable): Promise<number[]> {
  const out: number[] = [];
  for await (const b of s.inner.scan()) for (const r of b.toArray()) out.push(Number(r.n));
  return out;
}

describe("Scannable constructors", () => {
  test("fromTable: the table's schema and row count, rescannable, scanned as often as asked", async () => {
    const t = twoBatches();
    const s = await Scannable.fromTable(t);
    expect(s.schema).toBe(t.schema);
    expect([s.numRows, s.rescannable]).toEqual([4, true]);
    expect(await collect(s)).toEqual([1, 2, 3, 4]);
    expect(await collect(s)).toEqual([1, 2, 3, 4]);
  });

  test("fromTable refuses a different numRows and rescannable: false", async () => {
    await expect(Scannable.fromTable(abc(), { numRows: 9 })).rejects.toThrow(/does not match table\.numRows/);
    await expect(Scannable.fromTable(abc(), { rescannable: false })).rejects.toThrow(/always rescannable/);
    await expect(Scannable.fromTable(abc(), { numRows: 3, rescannable: true })).resolves.toBeDefined();
  });

  test("fromFactory calls the factory once per scan and never before", async () => {
    const t = abc();
    let calls = 0;
    const s = await Scannable.fromFactory(t.schema, () => {
      calls += 1;
      return t.batches;
    });
    expect(calls).toBe(0);
    expect(s.rescannable).toBe(true);
    expect(s.numRows).toBeNull();
    expect(await collect(s)).toEqual([1, 2, 3]);
    expect(await collect(s)).toEqual([1, 2, 3]);
    expect(calls).toBe(2);
  });

  test("numRows must be a whole number", async () => {
    const schema = abc().schema;
    await expect(Scannable.fromFactory(schema, () => [], { numRows: -2 })).rejects.toThrow(/non-negative/);
    await expect(Scannable.fromFactory(schema, () => [], { numRows: 1.5 })).rejects.toThrow(/integer/);
  });

  test("fromIterable: sync and async sources, one-shot by default; rescannable: true refused for generators", async () => {
    const t = twoBatches();
    const once = await Scannable.fromIterable(t.schema, t.batches);
    expect(once.rescannable).toBe(false);
    expect(await collect(once)).toEqual([1, 2, 3, 4]);
    await expect(collect(once)).rejects.toThrow(InvalidInputError);

    async function* gen() {
      for (const b of t.batches) yield b;
    }
    expect(await collect(await Scannable.fromIterable(t.schema, gen()))).toEqual([1, 2, 3, 4]);
    await expect(Scannable.fromIterable(t.schema, gen(), { rescannable: true })).rejects.toThrow(/one-shot/);
    await expect(Scannable.fromIterable(t.schema, t.batches.values(), { rescannable: true })).rejects.toThrow(/one-shot/);
    const set = await Scannable.fromIterable(t.schema, new Set(t.batches), { rescannable: true });
    expect(await collect(set)).toEqual([1, 2, 3, 4]);
    expect(await collect(set)).toEqual([1, 2, 3, 4]);
  });

  test("fromIterable(null) is refused when scanned, not when built", async () => {
    const s = await Scannable.fromIterable(abc().schema, null as unknown as RecordBatch[], { rescannable: true });
    await expect(collect(s)).rejects.toThrow(/null\/undefined/);
  });

  test("fromRecordBatchReader: the reader's schema, read once; rescannable: true refused", async () => {
    const open = () => RecordBatchReader.from(tableToIPC(abc())).open() as RecordBatchReader;
    const r = open();
    const s = await Scannable.fromRecordBatchReader(r, { numRows: 3 });
    expect(s.schema).toBe(r.schema);
    expect([s.numRows, s.rescannable]).toEqual([3, false]);
    expect(await collect(s)).toEqual([1, 2, 3]);
    await expect(Scannable.fromRecordBatchReader(open(), { rescannable: true })).rejects.toThrow(/does not accept rescannable/);
  });

  test("a batch of other columns than declared is refused by name", async () => {
    const declared = new Schema([new Field("n", new Int32(), true), new Field("s", new Float64(), true)]);
    const s = await Scannable.fromFactory(declared, () => abc().batches);
    await expect(collect(s)).rejects.toThrow(/batch 0 has columns \(n: Int32, s: Utf8\)/);
  });
});

describe("Scannable as data", () => {
  test("createTable and add write what it yields", async () => {
    const db = await connect(tmpDir());
    const schema = new Schema([new Field("n", new Int32(), true), new Field("s", new Utf8(), true)]);
    const t = await db.createTable("t", await Scannable.fromTable(abc()));
    expect(await t.countRows()).toBe(3);
    const extra = mk([7, 8], ["x", "y"]);
    async function* gen() {
      yield* extra.batches;
    }
    const { version } = await t.add(await Scannable.fromIterable(schema, gen()));
    expect(version).toBe(await t.version());
    const rows = (await t.query().toArray()).map((r) => [Number(r.n), String(r.s)] as [number, string]).sort((a, b) => a[0] - b[0]);
    expect(rows).toEqual([
      [1, "a"],
      [2, "b"],
      [3, "c"],
      [7, "x"],
      [8, "y"],
    ]);
  });
});
