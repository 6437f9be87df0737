/**
 * `memwal/sanitize` and `memwal/util`, the modules of @lancedb/lancedb 0.39 that code and LanceDB's own tests
 * import: objects of another apache-arrow copy (15, 18) read as ours with 0.39's checks and texts, a dictionary
 * shared by columns or batches kept shared (in memory and in the IPC a table is stored from), and `toSQL`'s literals.
 */

import * as a21 from "apache-arrow";
import * as a15 from "apache-arrow-15";
import * as a18 from "apache-arrow-18";
import { connect } from "../lib";
import { fromDataToBuffer } from "../lib/arrow-api";
import { sanitizeField, sanitizeMap, sanitizeSchema, sanitizeTable, sanitizeType } from "../lib/sanitize";
import { type IntoSql, toSQL } from "../lib/util";
import { tmpDir } from "./helpers";

type Arrow = typeof a21;
const foreign: Array<[string, Arrow]> = [
  ["15", a15 as unknown as Arrow],
  ["18", a18 as unknown as Arrow],
];

// biome-ignore lint/suspicious/noExplicitAny: Map_'s child is typed loosely across copies
function entries(A: Arrow): any {
  return new A.Field("entries", new A.Struct([new A.Field("key", new A.Utf8(), false), new A.Field("value", new A.Int8(), true)]), false);
}

describe.each(foreign)("objects of apache-arrow %s", (_v, A) => {
  test("a schema with nested, dictionary and time-zoned types reads as ours, field by field", () => {
    const schema = new A.Schema([
      new A.Field("id", new A.Int64(), false),
      new A.Field("vec", new A.FixedSizeList(3, new A.Field("item", new A.Float16(), true)), true),
      new A.Field(
        "st",
        new A.Struct([
          new A.Field("label", new A.Dictionary(new A.Utf8(), new A.Int32(), 7, true), true),
          new A.Field("ts", new A.TimestampNanosecond("Europe/Paris"), true),
          new A.Field("m", new A.Map_(entries(A)), true),
        ]),
        true,
        new Map([["k", "v"]]),
      ),
    ]);
    const ours = sanitizeSchema(schema);
    expect(ours).toBeInstanceOf(a21.Schema);
    expect(ours.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual(
      schema.fields.map((f) => [f.name, String(f.type), f.nullable]),
    );
    const st = ours.fields[2];
    expect(st.metadata.get("k")).toBe("v");
    const label = (st.type as a21.Struct).children[0].type as a21.Dictionary;
    expect([label.id, label.isOrdered, String(label.indices), String(label.dictionary)]).toEqual([7, true, "Int32", "Utf8"]);
    expect(((st.type as a21.Struct).children[1].type as a21.Timestamp).timezone).toBe("Europe/Paris");
  });

  test("a dictionary shared by two columns, or by two batches, stays one dictionary, and its rows are stored", async () => {
    const values = ["alpha", "beta", "alpha"];
    const dict = A.vectorFromArray(values, new A.Dictionary(new A.Utf8(), new A.Int32()));
    const byColumns = new A.Table([new A.RecordBatch({ first: dict.data[0], second: dict.data[0] })]);
    const byBatches = new A.Table([
      new A.RecordBatch({ label: dict.slice(0, 2).data[0] }),
      new A.RecordBatch({ label: dict.slice(2).data[0] }),
    ]);
    const cols = sanitizeTable(byColumns as unknown as a21.Table);
    expect(cols).toBeInstanceOf(a21.Table);
    expect(cols.batches[0].data.children[1].dictionary === cols.batches[0].data.children[0].dictionary).toBe(true);
    const rows = sanitizeTable(byBatches as unknown as a21.Table);
    expect(rows.batches[1].data.children[0].dictionary === rows.batches[0].data.children[0].dictionary).toBe(true);
    expect([...(rows.getChild("label") ?? [])]).toEqual(values);
    for (const [table, column] of [
      [byColumns, "second"],
      [byBatches, "label"],
    ] as const) {
      const stored = a21.tableFromIPC(await fromDataToBuffer(table as unknown as a21.Table));
      expect([...(stored.getChild(column) ?? [])]).toEqual(values);
    }
    const db = await connect(tmpDir());
    const t = await db.createTable("d", byColumns as unknown as a21.Table);
    expect((await t.query().toArray()).map((r) => [String(r.first), String(r.second)])).toEqual(values.map((v) => [v, v]));
    const u = await db.createTable("e", byBatches as unknown as a21.Table);
    expect((await u.query().toArray()).map((r) => String(r.label))).toEqual(values);
  });

  test("a dictionary shared by two columns over two batches, which apache-arrow's IPC writer cannot write, is refused and creates nothing", async () => {
    const dict = A.vectorFromArray(["alpha", "beta", "alpha"], new A.Dictionary(new A.Utf8(), new A.Int32()));
    const part = (from: number, to?: number) => dict.slice(from, to).data[0];
    const table = new A.Table([new A.RecordBatch({ a: part(0, 2), b: part(0, 2) }), new A.RecordBatch({ a: part(2), b: part(2) })]);
    const db = await connect(tmpDir());
    await expect(db.createTable("d", table as unknown as a21.Table)).rejects.toThrow(/malformed Arrow IPC data/);
    expect(await db.tableNames()).toEqual([]);
  });
});

describe("sanitizeType, sanitizeField and sanitizeMap with 0.39's rules", () => {
  test.each([
    ["int8", a21.Int8],
    ["UINT64", a21.Uint64],
    ["Float16", a21.Float16],
    ["DaTedAy", a21.DateDay],
    ["timenanosecond", a21.TimeNanosecond],
    ["intervalyearmonth", a21.IntervalYearMonth],
    ["durationsecond", a21.DurationSecond],
    ["null", a21.Null],
  ])("type name %s is %p", (name, cls) => {
    expect(sanitizeType(name)).toBeInstanceOf(cls);
  });

  test("a plain { typeId } object, with the id as a number or a function, is read by its parameters", () => {
    const f = sanitizeType({ typeId: 3, precision: 2 });
    expect(f).toBeInstanceOf(a21.Float);
    expect((f as a21.Float).precision).toBe(2);
    expect(String(sanitizeType({ typeId: () => 2, bitWidth: 16, isSigned: false }))).toBe("Uint16");
    expect(String(sanitizeType({ typeId: a21.Type.LargeUtf8 }))).toBe("LargeUtf8");
  });

  test("what cannot be read is an error naming the missing part, in 0.39's words", () => {
    expect(() => sanitizeType("decimal")).toThrow("Unrecognized type name in schema: decimal");
    expect(() => sanitizeType("toString")).toThrow("Unrecognized type name in schema: toString");
    expect(() => sanitizeType(null)).toThrow("Expected a Type but object was null/undefined");
    expect(() => sanitizeType({ nope: 1 })).toThrow("Expected a Type to have a typeId property");
    expect(() => sanitizeType({ typeId: "3" })).toThrow("Type's typeId property was not a function or number");
    expect(() => sanitizeType({ typeId: 0 })).toThrow("Received a Type with a typeId of NONE");
    expect(() => sanitizeType({ typeId: 999 })).toThrow("Unrecognized type id in schema: 999");
    expect(() => sanitizeType({ typeId: 2, bitWidth: 8 })).toThrow("Expected an Int Type to have a `bitWidth` and `isSigned` property");
    expect(() => sanitizeType({ typeId: 16, listSize: 2, children: [] })).toThrow(
      "Expected a FixedSizeList type to have exactly one child",
    );
    expect(() => sanitizeMap({ children: [{}, {}], keysSorted: false })).toThrow("Expected a Map type to have exactly one child");
    expect(() => sanitizeMap({ children: [] })).toThrow("Expected a Map type to have a `keysSorted` property");
    expect(() => sanitizeField({ type: "int32", nullable: true })).toThrow(
      "The field passed in is missing a `type`/`name`/`nullable` property",
    );
    expect(() => sanitizeField({ name: "n", type: "int32", nullable: "yes" })).toThrow(
      "The field passed in had a non-boolean `nullable` property",
    );
    expect(() => sanitizeField({ name: "x", type: "blob", nullable: true })).toThrow(
      "Unable to sanitize type for field: x due to error: Error: Unrecognized type name in schema: blob",
    );
    expect(() => sanitizeField({ name: "m", type: "utf8", nullable: true, metadata: new Map([["k", 1]]) })).toThrow(
      "Expected metadata, if present, to be a Map<string, string> but it had non-string keys or values",
    );
    expect(() => sanitizeSchema({ fields: "no" } as unknown as a21.Schema)).toThrow("had a 'fields' property but it was not an array");
  });

  test("the API's own readers answer an InvalidInputError naming the unreadable type", async () => {
    const db = await connect(tmpDir());
    const bad = { fields: [{ name: "x", type: { typeId: 999 }, nullable: true }], metadata: new Map() };
    await expect(db.createEmptyTable("t", bad as unknown as a21.Schema)).rejects.toThrow(/Unrecognized type id in schema: 999/);
    expect(await db.tableNames()).toEqual([]);
  });
});

describe("toSQL", () => {
  test.each<[IntoSql, string]>([
    ["string", "'string'"],
    ["it's", "'it''s'"],
    [123, "123"],
    [-1.5, "-1.5"],
    [true, "TRUE"],
    [false, "FALSE"],
    [null, "NULL"],
    [new Date("2021-01-01T00:00:00.000Z"), "'2021-01-01T00:00:00.000Z'"],
    [[1, "a", [null]], "[1, 'a', [NULL]]"],
    [new Uint8Array([1, 255]).buffer, "X'01ff'"],
    [Buffer.from("hi"), "X'6869'"],
  ])("toSQL(%p) is %s", (value, sql) => {
    expect(toSQL(value)).toBe(sql);
  });

  test("other values are refused, naming their type", () => {
    expect(() => toSQL({} as unknown as IntoSql)).toThrow("Unsupported value type: object value: ([object Object])");
    expect(() => toSQL(undefined as unknown as IntoSql)).toThrow("Unsupported value type: undefined value: (undefined)");
    expect(() => toSQL(1n as unknown as IntoSql)).toThrow("Unsupported value type: bigint value: (1)");
  });
});
