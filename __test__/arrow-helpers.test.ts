/**
 * `memwal/arrow` (lib/arrow-api.ts): the arrow helpers @lancedb/lancedb 0.39 exports. makeArrowTable's inference
 * rules (each one, nested included), vector columns and their options, schemas given as ours, as plain objects
 * and as another apache-arrow copy's, the empty-table and IPC buffer helpers (with an embedding function too),
 * the type predicates, and clear errors for input that does not fit. Tables made here go through the real addon
 * (`memory://` and a folder) and come back unchanged. Where 0.39 accepts the same rows, the expected inferred
 * schemas are what its makeArrowTable gives (checked by hand against bench/node_modules; loading that client
 * inside jest takes minutes).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as arrow from "apache-arrow";
import * as a15 from "apache-arrow-15";
import * as a18 from "apache-arrow-18";
import * as root from "../lib";
import * as api from "../lib/arrow-api";
import {
  Dictionary,
  Field,
  FixedSizeList,
  Float16,
  Float32,
  Float64,
  Int32,
  Int64,
  List,
  Schema,
  Struct,
  TimestampMicrosecond,
  tableFromIPC,
  Utf8,
} from "../lib/arrow-api";
import { getRegistry, TextEmbeddingFunction } from "../lib/embedding";
import { tmpDir } from "./helpers";

/** A tiny registered text embedding: [length, 1]. */
class Len extends TextEmbeddingFunction {
  ndims(): number {
    return 2;
  }
  async generateEmbeddings(texts: string[]): Promise<number[][]> {
    return texts.map((t) => [t.length, 1]);
  }
}
getRegistry().register("arrow-helpers-len")(Len);

const {
  makeArrowTable,
  makeEmptyTable,
  createEmptyTable,
  convertToTable,
  MakeArrowTableOptions,
  VectorColumnOptions,
  fromTableToBuffer,
  fromTableToStreamBuffer,
  fromRecordsToBuffer,
  fromRecordsToStreamBuffer,
  fromDataToBuffer,
  fromRecordBatchToBuffer,
  fromRecordBatchToStreamBuffer,
  fromBufferToRecordBatch,
} = api;

/** Values as plain JS: Arrow vectors and struct rows become arrays and objects. */
function plain(v: unknown): unknown {
  if (v === null || v === undefined || typeof v !== "object") return v ?? null;
  if (v instanceof Date || Buffer.isBuffer(v)) return v;
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<unknown>);
  const o = v as { toArray?: () => unknown; toJSON?: () => unknown; [Symbol.iterator]?: unknown };
  if (Array.isArray(v)) return v.map(plain);
  if (typeof o.toJSON === "function" && !("length" in o && typeof o.toArray === "function")) {
    return Object.fromEntries(Object.entries(o.toJSON() as object).map(([k, x]) => [k, plain(x)]));
  }
  // Iterated, not toArray(): a Float16 vector's toArray() is its raw bits.
  if (typeof o.toArray === "function") return Array.from(v as Iterable<unknown>, plain);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
}

function rowsOf(t: arrow.Table): unknown[] {
  return t.toArray().map((r) => plain(r));
}

/** "name:type:nullable" of each field. */
function fieldsOf(s: { fields: Array<{ name: string; type: unknown; nullable: boolean }> }): string[] {
  return s.fields.map((f) => `${f.name}:${String(f.type)}:${f.nullable}`);
}

let seq = 0;
/** The table through the addon: created in `memory://` (or `uri`), read back with its schema. */
async function roundTrip(t: arrow.Table, uri = "memory://"): Promise<{ schema: arrow.Schema; rows: unknown[] }> {
  const db = await root.connect(uri);
  seq += 1;
  const tbl = await db.createTable(`t${seq}`, t);
  const back = await tbl.query().toArrow();
  return { schema: await tbl.schema(), rows: rowsOf(back) };
}

describe("makeArrowTable infers types as 0.39 documents", () => {
  const row = {
    n: 1.5,
    big: 7n,
    s: "x",
    b: true,
    d: new Date(86_400_000),
    bin: Buffer.from([1, 2, 3]),
    vector: [1, 2],
    nums: [1, 2, 3],
    strs: ["a", "b"],
    bools: [true, false],
    nested: [[1], [2, 3]],
    st: { x: 1, y: { z: "q" } },
  };

  test("each JS kind has its Arrow type, every field nullable, in first-appearance order", () => {
    const t = makeArrowTable([row]);
    expect(fieldsOf(t.schema)).toEqual([
      "n:Float64:true",
      "big:Int64:true",
      "s:Utf8:true",
      "b:Bool:true",
      "d:Timestamp<MILLISECOND>:true",
      "bin:Binary:true",
      "vector:FixedSizeList[2]<Float32>:true",
      "nums:List<Float64>:true",
      "strs:List<Utf8>:true",
      "bools:List<Bool>:true",
      "nested:List<List<Float64>>:true",
      "st:Struct<{x:Float64, y:Struct<{z:Utf8}>}>:true",
    ]);
  });

  test("the table round-trips through the addon unchanged", async () => {
    const { bin: _bin, ...rest } = row;
    const t = makeArrowTable([rest, { ...rest, n: -2, big: -1n, s: "y", vector: [3, 4] }]);
    const { schema, rows } = await roundTrip(t);
    expect(fieldsOf(schema)).toEqual(fieldsOf(t.schema));
    expect(rows).toEqual(rowsOf(t));
    expect(rows[1]).toMatchObject({ n: -2, big: -1n, s: "y", b: true, d: 86_400_000, vector: [3, 4], nested: [[1], [2, 3]] });
  });

  test("as 0.39, a key no row gives a value (only undefined) makes no column; null is a value", () => {
    expect(fieldsOf(makeArrowTable([{ id: 1, x: undefined, s: "A" }]).schema)).toEqual(["id:Float64:true", "s:Utf8:true"]);
    // 0.39: "Failed to infer data type for field x at row 1".
    expect(() =>
      makeArrowTable([
        { id: 1, x: undefined },
        { id: 3, x: null },
      ]),
    ).toThrow(/cannot infer the type of column 'x'/);
  });

  test("keys missing in later rows (and undefined) are nulls; a struct's keys are the union over rows", async () => {
    const t = makeArrowTable([
      { a: 1, st: { x: 1 } },
      { b: "y", st: { y: "s" } },
      { a: undefined, st: null },
    ]);
    expect(fieldsOf(t.schema)).toEqual(["a:Float64:true", "st:Struct<{x:Float64, y:Utf8}>:true", "b:Utf8:true"]);
    const expected = [
      { a: 1, st: { x: 1, y: null }, b: null },
      { a: null, st: { x: null, y: "s" }, b: "y" },
      { a: null, st: null, b: null },
    ];
    expect(rowsOf(t)).toEqual(expected);
    expect((await roundTrip(t)).rows).toEqual(expected);
  });

  test("the first non-null value decides: nulls and empty lists before it are fine", () => {
    const t = makeArrowTable([
      { a: null, l: [] },
      { a: 2, l: ["x"] },
    ]);
    expect(fieldsOf(t.schema)).toEqual(["a:Float64:true", "l:List<Utf8>:true"]);
    expect(rowsOf(t)).toEqual([
      { a: null, l: [] },
      { a: 2, l: ["x"] },
    ]);
  });

  test("arrays of objects are lists of structs", () => {
    const t = makeArrowTable([{ items: [{ k: "a" }, { k: "b", v: 1 }] }]);
    expect(fieldsOf(t.schema)).toEqual(["items:List<Struct<{k:Utf8, v:Float64}>>:true"]);
    expect(rowsOf(t)).toEqual([
      {
        items: [
          { k: "a", v: null },
          { k: "b", v: 1 },
        ],
      },
    ]);
  });

  test("dictionaryEncodeStrings makes every string column Dictionary<Int32, Utf8>, nested ones too", async () => {
    const t = makeArrowTable(
      [
        { s: "a", l: ["x"], st: { q: "z" } },
        { s: "a", l: ["y", "x"], st: { q: "z" } },
      ],
      { dictionaryEncodeStrings: true },
    );
    expect(fieldsOf(t.schema)).toEqual([
      "s:Dictionary<Int32, Utf8>:true",
      "l:List<Dictionary<Int32, Utf8>>:true",
      "st:Struct<{q:Dictionary<Int32, Utf8>}>:true",
    ]);
    const expected = [
      { s: "a", l: ["x"], st: { q: "z" } },
      { s: "a", l: ["y", "x"], st: { q: "z" } },
    ];
    expect(rowsOf(t)).toEqual(expected);
    const back = tableFromIPC(await fromTableToBuffer(t));
    expect(rowsOf(back)).toEqual(expected);
    // Without the option the same rows are plain Utf8.
    expect(fieldsOf(makeArrowTable(expected).schema)[0]).toBe("s:Utf8:true");
  });

  test("metadata is added to the schema's", () => {
    const t = makeArrowTable([{ a: 1 }], {}, new Map([["k", "v"]]));
    expect([...t.schema.metadata]).toEqual([["k", "v"]]);
  });
});

describe("vector columns", () => {
  test("'vector' and names containing vector/embedding are FixedSizeList<Float32>; other number arrays are lists", () => {
    const t = makeArrowTable([{ vector: [1, 2], my_Vector: [1, 2, 3], text_embedding: [0.5], nums: [1, 2], tags_vector: ["a"] }]);
    expect(fieldsOf(t.schema)).toEqual([
      "vector:FixedSizeList[2]<Float32>:true",
      "my_Vector:FixedSizeList[3]<Float32>:true",
      "text_embedding:FixedSizeList[1]<Float32>:true",
      "nums:List<Float64>:true",
      "tags_vector:List<Utf8>:true",
    ]);
    expect((t.schema.fields[0].type as FixedSizeList).children[0].name).toBe("item");
  });

  test("vectorColumns give other names and Float16 / Float64 element types (options class or plain)", async () => {
    const opts = new MakeArrowTableOptions({
      vectorColumns: {
        v16: new VectorColumnOptions({ type: new Float16() }),
        v64: { type: new Float64() },
        plain: new VectorColumnOptions(),
      },
    });
    expect(new VectorColumnOptions().type.toString()).toBe("Float32");
    const rows = [
      { id: 1n, v16: [1, 2], v64: [0.1, 0.2], plain: [3, 4] },
      { id: 2n, v16: [3, 4], v64: [0.3, 0.4], plain: [5, 6] },
    ];
    const t = makeArrowTable(rows, opts);
    expect(fieldsOf(t.schema)).toEqual([
      "id:Int64:true",
      "v16:FixedSizeList[2]<Float16>:true",
      "v64:FixedSizeList[2]<Float64>:true",
      "plain:FixedSizeList[2]<Float32>:true",
    ]);
    const back = tableFromIPC(await fromTableToBuffer(t));
    expect(rowsOf(back)).toEqual(rows);
    const dir = tmpDir();
    try {
      const { schema, rows: got } = await roundTrip(t, dir);
      expect(fieldsOf(schema)).toEqual(fieldsOf(t.schema));
      expect(got).toEqual(rows);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("typed arrays keep their element type unless vectorColumns names the column", () => {
    const t = makeArrowTable([{ vector: new Float64Array([1, 2]), f32: new Float32Array([1]), u8: new Uint8Array([7, 8]) }]);
    expect(fieldsOf(t.schema)).toEqual([
      "vector:FixedSizeList[2]<Float64>:true",
      "f32:FixedSizeList[1]<Float32>:true",
      "u8:FixedSizeList[2]<Uint8>:true",
    ]);
    const t2 = makeArrowTable([{ vector: new Float64Array([1, 2]) }], { vectorColumns: { vector: { type: new Float16() } } });
    expect(fieldsOf(t2.schema)).toEqual(["vector:FixedSizeList[2]<Float16>:true"]);
    // The options class's own default `vector` entry is not a choice of type.
    const t3 = makeArrowTable([{ vector: new Float64Array([1, 2]) }], new MakeArrowTableOptions({ dictionaryEncodeStrings: true }));
    expect(fieldsOf(t3.schema)).toEqual(["vector:FixedSizeList[2]<Float64>:true"]);
    expect(rowsOf(t2)).toEqual([{ vector: [1, 2] }]);
  });

  test("a vector column is searchable once created", async () => {
    const t = makeArrowTable([
      { id: 1n, vector: [0, 0] },
      { id: 2n, vector: [5, 5] },
    ]);
    const db = await root.connect("memory://");
    const tbl = await db.createTable("vec", t);
    const hits = await tbl.vectorSearch([4.5, 4.5]).limit(1).toArray();
    expect(hits.map((h) => h.id)).toEqual([2n]);
  });

  test("newVectorType is a FixedSizeList of nullable 'item's", () => {
    expect(String(api.newVectorType(3, new Float16()))).toBe("FixedSizeList[3]<Float16>");
    expect(String(api.newVectorType(2, new a18.Float64()))).toBe("FixedSizeList[2]<Float64>");
    expect(() => api.newVectorType(0, new Float32())).toThrow(root.InvalidInputError);
  });
});

describe("makeArrowTable with a schema", () => {
  const schema = new Schema(
    [
      new Field("id", new Int32(), false),
      new Field("s", new Utf8(), true),
      new Field("ts", new TimestampMicrosecond(), true),
      new Field("vector", new FixedSizeList(2, new Field("item", new Float32(), true)), true),
      new Field("st", new Struct([new Field("x", new Int64(), true), new Field("y", new Utf8(), true)]), true),
    ],
    new Map([["owner", "me"]]),
  );

  test("the schema's types, order and metadata; absent columns left out; missing keys null", async () => {
    const t = makeArrowTable(
      [
        { s: "a", id: 1, ts: new Date(5), vector: [1, 2], st: { x: 3 } },
        { id: 2, st: { y: "b" } },
      ],
      { schema, dictionaryEncodeStrings: true },
      new Map([["extra", "1"]]),
    );
    expect(fieldsOf(t.schema)).toEqual([
      "id:Int32:false",
      "s:Utf8:true",
      "ts:Timestamp<MICROSECOND>:true",
      "vector:FixedSizeList[2]<Float32>:true",
      "st:Struct<{x:Int64, y:Utf8}>:true",
    ]);
    expect(Object.fromEntries(t.schema.metadata)).toEqual({ owner: "me", extra: "1" });
    const ts = t.getChild("ts");
    expect(ts?.data[0].values[0]).toBe(5000n);
    const expected = [
      { id: 1, s: "a", ts: 5, vector: [1, 2], st: { x: 3n, y: null } },
      { id: 2, s: null, ts: null, vector: null, st: { x: null, y: "b" } },
    ];
    expect(rowsOf(t)).toEqual(expected);
    const sub = makeArrowTable([{ id: 9 }], { schema });
    expect(fieldsOf(sub.schema)).toEqual(["id:Int32:false"]);
    const { rows } = await roundTrip(t);
    expect(rows).toEqual(expected);
  });

  test("as 0.39, a struct keeps only the fields some row gives; undefined keys are absent; a missing struct is one of nulls", () => {
    const nested = new Schema([
      new Field("n", new Int64(), true),
      new Field("p", new Struct([new Field("u", new Int32(), true), new Field("w", new Int32(), true)]), true),
      new Field("q", new Int32(), true),
    ]);
    const one = makeArrowTable([{ p: { w: 7 } }], { schema: nested });
    expect(fieldsOf(one.schema)).toEqual(["p:Struct<{w:Int32}>:true"]);
    expect(rowsOf(one)).toEqual([{ p: { w: 7 } }]);
    // The union over rows; a row without the struct has one whose fields are null (0.39), an explicit null is null.
    const two = makeArrowTable([{ n: 1n, p: { u: 1, w: undefined } }, { q: 2 }, { p: null }], { schema: nested });
    expect(fieldsOf(two.schema)).toEqual(["n:Int64:true", "p:Struct<{u:Int32}>:true", "q:Int32:true"]);
    expect(rowsOf(two)).toEqual([
      { n: 1n, p: { u: 1 }, q: null },
      { n: null, p: { u: null }, q: 2 },
      { n: null, p: null, q: null },
    ]);
    // A struct only ever null keeps all its fields; a key whose value is undefined in every row is no column.
    expect(fieldsOf(makeArrowTable([{ p: null, q: undefined, n: 3n }], { schema: nested }).schema)).toEqual([
      "n:Int64:true",
      "p:Struct<{u:Int32, w:Int32}>:true",
    ]);
    // 0.39 cannot make a struct that first came as null and then as an object: refused, as there.
    expect(() => makeArrowTable([{ p: null }, { p: { u: 1 } }], { schema: nested })).toThrow(root.InvalidInputError);
  });

  test("a schema as plain objects: type names and DataTypes", () => {
    const t = makeArrowTable([{ a: 1, b: "x", c: 2 }], {
      schema: {
        fields: [
          { name: "a", type: "int64", nullable: false },
          { name: "b", type: new Dictionary(new Utf8(), new Int32()), nullable: true },
          { name: "c", type: "Float16", nullable: true },
        ],
        metadata: new Map([["m", "1"]]),
      } as api.SchemaLike,
    });
    expect(fieldsOf(t.schema)).toEqual(["a:Int64:false", "b:Dictionary<Int32, Utf8>:true", "c:Float16:true"]);
    expect(rowsOf(t)).toEqual([{ a: 1n, b: "x", c: 2 }]);
    expect(() =>
      makeArrowTable([{ a: 1 }], { schema: { fields: [{ name: "a", type: "decimalish", nullable: true }] } as unknown as Schema }),
    ).toThrow(/field 'a'.*unknown type name "decimalish"/);
  });

  test.each([
    ["15", a15 as unknown as typeof arrow],
    ["18", a18 as unknown as typeof arrow],
  ])("a schema of apache-arrow %s becomes ours", async (_v, A) => {
    const foreign = new A.Schema([
      new A.Field("id", new A.Int16(), false),
      new A.Field("vector", new A.FixedSizeList(2, new A.Field("item", new A.Float16(), true)), true),
      new A.Field("tags", new A.List(new A.Field("item", new A.Utf8(), true)), true),
    ]);
    const t = makeArrowTable(
      [
        { id: 1, vector: [1, 2], tags: ["a"] },
        { id: 2, vector: [3, 4], tags: [] },
      ],
      { schema: foreign },
    );
    expect(t.schema).toBeInstanceOf(Schema);
    expect(fieldsOf(t.schema)).toEqual(["id:Int16:false", "vector:FixedSizeList[2]<Float16>:true", "tags:List<Utf8>:true"]);
    const { schema, rows } = await roundTrip(t);
    expect(fieldsOf(schema)).toEqual(fieldsOf(t.schema));
    expect(rows).toEqual([
      { id: 1, vector: [1, 2], tags: ["a"] },
      { id: 2, vector: [3, 4], tags: [] },
    ]);
    expect(fieldsOf(makeEmptyTable(foreign).schema)).toEqual(fieldsOf(t.schema));
  });
});

describe("empty tables", () => {
  const schema = new Schema([
    new Field("id", new Int64(), false),
    new Field("vector", new FixedSizeList(2, new Field("item", new Float32(), true)), true),
  ]);

  test("makeEmptyTable / createEmptyTable / makeArrowTable([]) with a schema have it and no rows", async () => {
    for (const t of [makeEmptyTable(schema, new Map([["k", "v"]])), createEmptyTable(schema), makeArrowTable([], { schema })]) {
      expect(t.numRows).toBe(0);
      expect(fieldsOf(t.schema)).toEqual(["id:Int64:false", "vector:FixedSizeList[2]<Float32>:true"]);
    }
    expect([...makeEmptyTable(schema, new Map([["k", "v"]])).schema.metadata]).toEqual([["k", "v"]]);
    const db = await root.connect("memory://");
    const tbl = await db.createTable("empty", makeEmptyTable(schema));
    expect(await tbl.countRows()).toBe(0);
    await tbl.add(makeArrowTable([{ id: 1n, vector: [1, 2] }], { schema }));
    expect(rowsOf(await tbl.query().toArrow())).toEqual([{ id: 1n, vector: [1, 2] }]);
  });

  test("schema metadata with non-string keys or values is refused (0.39's message), not turned into strings", () => {
    const msg = "Expected metadata, if present, to be a Map<string, string> but it had non-string keys or values";
    const bad = [new Map<unknown, unknown>([[42, "x"]]), new Map<unknown, unknown>([["k", 42]]), new Map<unknown, unknown>([[1, false]])];
    for (const m of bad) {
      const meta = m as unknown as Map<string, string>;
      const field = new Field("v", new Int32(), true);
      expect(() => makeEmptyTable(new Schema([field], meta))).toThrow(msg);
      expect(() => makeEmptyTable(new a15.Schema([new a15.Field("v", new a15.Int32(), true)], meta) as never)).toThrow(msg);
      expect(() => createEmptyTable(new Schema([new Field("v", new Int32(), true, meta)]))).toThrow(msg);
      expect(() => makeArrowTable([{ v: 1 }], { schema: new Schema([field], meta) })).toThrow(root.InvalidInputError);
      expect(() => makeEmptyTable(new Schema([new Field("s", new Struct([new Field("v", new Int32(), true, meta)]))]))).toThrow(msg);
    }
    expect(makeEmptyTable(new Schema([new Field("v", new Int32(), true)], new Map([["k", "v"]]))).schema.metadata.get("k")).toBe("v");
  });

  test("makeEmptyTable takes a plain-object schema", () => {
    const t = makeEmptyTable({ fields: [{ name: "a", type: new Int32(), nullable: true }], metadata: new Map() } as api.SchemaLike);
    expect(fieldsOf(t.schema)).toEqual(["a:Int32:true"]);
  });
});

describe("IPC buffer helpers", () => {
  const rows = [
    { id: 1n, s: "a", vector: [1, 2] },
    { id: 2n, s: null, vector: [3, 4] },
  ];
  const isFile = (b: Buffer) => b.subarray(0, 6).toString() === "ARROW1";
  const isStream = (b: Buffer) => b.readUInt32LE(0) === 0xffffffff;

  test("fromTableToBuffer (file) and fromTableToStreamBuffer (stream) decode to the same table", async () => {
    const t = makeArrowTable(rows);
    const file = await fromTableToBuffer(t);
    const stream = await fromTableToStreamBuffer(t);
    expect(Buffer.isBuffer(file) && isFile(file)).toBe(true);
    expect(Buffer.isBuffer(stream) && isStream(stream) && !isFile(stream)).toBe(true);
    for (const b of [file, stream]) {
      const back = tableFromIPC(b);
      expect(fieldsOf(back.schema)).toEqual(fieldsOf(t.schema));
      expect(rowsOf(back)).toEqual(rows);
    }
    // The addon takes the bytes as data.
    const db = await root.connect("memory://");
    const tbl = await db.createTable("bytes", file);
    expect(rowsOf(await tbl.query().toArrow())).toEqual(rows);
  });

  test("an empty table is written with the schema given", async () => {
    const schema = new Schema([new Field("x", new Int32(), true)]);
    const back = tableFromIPC(
      await fromTableToStreamBuffer(makeEmptyTable(new Schema([new Field("y", new Utf8(), true)])), undefined, schema),
    );
    expect(fieldsOf(back.schema)).toEqual(["x:Int32:true"]);
    expect(back.numRows).toBe(0);
  });

  test("records, data and record batches to bytes", async () => {
    const schema = new Schema([new Field("id", new Int64(), false), new Field("s", new Utf8(), true)]);
    const recs = [
      { id: 1n, s: "a" },
      { id: 2n, s: null },
    ];
    const f = await fromRecordsToBuffer(recs, undefined, schema);
    const s = await fromRecordsToStreamBuffer(recs, undefined, schema);
    expect(isFile(f) && isStream(s)).toBe(true);
    for (const b of [f, s]) {
      expect(fieldsOf(tableFromIPC(b).schema)).toEqual(["id:Int64:false", "s:Utf8:true"]);
      expect(rowsOf(tableFromIPC(b))).toEqual(recs);
    }
    const empty = tableFromIPC(await fromRecordsToBuffer([], undefined, schema));
    expect(empty.numRows === 0 && fieldsOf(empty.schema).length === 2).toBe(true);
    const t = makeArrowTable(rows);
    expect(rowsOf(tableFromIPC(await fromDataToBuffer(t)))).toEqual(rows);
    expect(rowsOf(tableFromIPC(await fromDataToBuffer(recs, undefined, schema)))).toEqual(recs);
    const batch = t.batches[0];
    const bf = await fromRecordBatchToBuffer(batch);
    const bs = await fromRecordBatchToStreamBuffer(batch);
    expect(isFile(bf) && isStream(bs)).toBe(true);
    expect(rowsOf(tableFromIPC(bs))).toEqual(rows);
    const rb = await fromBufferToRecordBatch(bf);
    expect(rb?.numRows).toBe(2);
    expect(rowsOf(new arrow.Table(rb ? [rb] : []))).toEqual(rows);
    expect(await fromBufferToRecordBatch(await fromTableToBuffer(makeEmptyTable(t.schema)))).toBeNull();
  });

  test("a table of apache-arrow 18 is written as ours", async () => {
    const t18 = a18.tableFromArrays({ x: new Float64Array([1, 2]) });
    const back = tableFromIPC(await fromTableToBuffer(t18 as unknown as arrow.Table));
    expect(rowsOf(back)).toEqual([{ x: 1 }, { x: 2 }]);
    expect(api.isArrowTable(t18)).toBe(true);
  });
});

describe("input that does not fit is an InvalidInputError naming the column", () => {
  const schema = new Schema([
    new Field("i", new Int32(), false),
    new Field("v", new FixedSizeList(2, new Field("item", new Float32(), true)), true),
    new Field("st", new Struct([new Field("x", new Int32(), true)]), true),
  ]);
  const cases: Array<[string, () => unknown, RegExp]> = [
    ["types differ across rows", () => makeArrowTable([{ a: 1 }, { a: "x" }]), /column 'a' holds Float64 .* Utf8 in row 1/],
    ["bigint then number", () => makeArrowTable([{ a: 1n }, { a: 2 }]), /column 'a' holds Int64/],
    [
      "vectors of different lengths",
      () => makeArrowTable([{ vector: [1, 2] }, { vector: [1, 2, 3] }]),
      /vector column 'vector' has 3 values in row 1/,
    ],
    ["a string in a vector", () => makeArrowTable([{ vector: ["a", "b"] }]), /vector column 'vector': row 0 has "a"/],
    ["a nested array in a vector", () => makeArrowTable([{ vector: [[1, 2]] }]), /vector column 'vector'/],
    ["an empty vector", () => makeArrowTable([{ vector: [] }]), /vector column 'vector': row 0 has an empty vector/],
    ["only nulls", () => makeArrowTable([{ a: null }, { a: undefined }]), /column 'a': it holds only nulls/],
    ["only empty lists", () => makeArrowTable([{ l: [] }]), /column 'l\[\]'/],
    ["an object with no keys", () => makeArrowTable([{ o: {} }]), /column 'o': its objects have no keys/],
    ["a Map value", () => makeArrowTable([{ m: new Map() }]), /column 'm' from an object of class Map/],
    ["a nested conflict", () => makeArrowTable([{ s: { x: 1 } }, { s: { x: "a" } }]), /column 's\.x'/],
    ["rows that are not objects", () => makeArrowTable([1, 2] as unknown as Array<Record<string, unknown>>), /row 0 is 1, not an object/],
    ["data that is not an array", () => makeArrowTable("x" as unknown as Array<Record<string, unknown>>), /data must be an array/],
    ["no rows and no schema", () => makeArrowTable([]), /no rows and no schema/],
    ["a string in an Int32 column", () => makeArrowTable([{ i: "x" }], { schema }), /column 'i' is Int32 but row 0 has "x"/],
    ["a fraction in an Int32 column", () => makeArrowTable([{ i: 1.5 }], { schema }), /column 'i' is Int32 but row 0 has 1\.5/],
    [
      "an Int32 out of range",
      () => makeArrowTable([{ i: 2 ** 31 }], { schema }),
      /column 'i' is Int32: row 0 has 2147483648, out of its range/,
    ],
    ["null in a non-nullable column", () => makeArrowTable([{ i: 1 }, { v: [1, 2] }], { schema }), /column 'i' is not nullable but row 1/],
    [
      "a vector of the wrong length",
      () => makeArrowTable([{ i: 1, v: [1, 2, 3] }], { schema }),
      /column 'v' holds 2 values per row but row 0 has 3/,
    ],
    ["a key the schema lacks", () => makeArrowTable([{ i: 1, zz: 1 }], { schema }), /column 'zz' \(row 0\) is not in the schema/],
    ["a nested key the schema lacks", () => makeArrowTable([{ i: 1, st: { q: 1 } }], { schema }), /column 'st' has no field 'q'/],
    [
      "a nested value that does not fit",
      () => makeArrowTable([{ i: 1, st: { x: "no" } }], { schema }),
      /column 'st\.x' is Int32 but row 0/,
    ],
    [
      "a non-float vector type",
      () => makeArrowTable([{ v: [1] }], { vectorColumns: { v: { type: new Utf8() as unknown as Float32 } } }),
      /vectorColumns\.v\.type must be a float/,
    ],
    [
      "a schema that is not one",
      () => makeArrowTable([{ a: 1 }], { schema: 5 as unknown as Schema }),
      /schema must be an apache-arrow Schema/,
    ],
  ];
  test.each(cases)("%s", (_name, f, message) => {
    let caught: unknown;
    try {
      f();
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(root.InvalidInputError);
    expect((caught as Error).message).toMatch(message);
  });

  test("makeArrowTable refuses embedding options (it cannot run a function), never ignores them", () => {
    const fn = new Len();
    expect(() => makeArrowTable([{ a: 1 }], { embeddings: fn })).toThrow(root.NotSupportedError);
    expect(() => makeArrowTable([{ a: 1 }], { embeddingFunction: { function: fn, sourceColumn: "a" } })).toThrow(/use convertToTable/);
  });

  test("buffer helpers refuse what is not a table, batch or IPC", async () => {
    await expect(fromTableToBuffer({} as arrow.Table)).rejects.toThrow(/expected an apache-arrow Table/);
    await expect(fromRecordBatchToBuffer(5 as unknown as arrow.RecordBatch)).rejects.toThrow(/expected an apache-arrow RecordBatch/);
    await expect(fromBufferToRecordBatch(Buffer.from("nope, not arrow"))).rejects.toThrow(root.InvalidInputError);
  });
});

describe("embedding functions in the async helpers", () => {
  const cfg = (vectorColumn?: string) => ({ function: new Len(), sourceColumn: "text", vectorColumn });
  const rows = [
    { id: 1n, text: "ab" },
    { id: 2n, text: "abc" },
    { id: 3n, text: null },
  ];

  test("convertToTable appends the computed vector column and records the function", async () => {
    const t = await convertToTable(rows, cfg());
    expect(fieldsOf(t.schema)).toEqual(["id:Int64:true", "text:Utf8:true", "vector:FixedSizeList[2]<Float32>:true"]);
    expect(rowsOf(t).map((r) => (r as { vector: unknown }).vector)).toEqual([[2, 1], [3, 1], null]);
    expect(t.schema.metadata.get("embedding_functions")).toContain("arrow-helpers-len");
    const { rows: back } = await roundTrip(t);
    expect(back).toEqual(rowsOf(t));
  });

  test("with a schema, the vector column has the schema's place and type", async () => {
    const schema = new Schema([
      new Field("id", new Int64(), false),
      new Field("emb", new FixedSizeList(2, new Field("item", new Float64(), true)), true),
      new Field("text", new Utf8(), true),
    ]);
    const t = await convertToTable(rows, cfg("emb"), { schema });
    expect(fieldsOf(t.schema)).toEqual(["id:Int64:false", "emb:FixedSizeList[2]<Float64>:true", "text:Utf8:true"]);
    expect(rowsOf(t)[0]).toEqual({ id: 1n, emb: [2, 1], text: "ab" });
  });

  test("a schema without the vector column is refused when the vector would be computed (0.39's words), kept vectors pass", async () => {
    const schema = new Schema([new Field("id", new Int64(), true), new Field("text", new Utf8(), true)]);
    const missing = /the schema should include the embedding column but the column vector was missing/;
    await expect(convertToTable(rows, cfg(), { schema })).rejects.toThrow(root.InvalidInputError);
    await expect(convertToTable(rows, cfg(), { schema })).rejects.toThrow(missing);
    await expect(convertToTable([], cfg(), { schema })).rejects.toThrow(missing);
    await expect(fromRecordsToBuffer(rows, cfg(), schema)).rejects.toThrow(missing);
    await expect(fromTableToBuffer(makeArrowTable(rows), cfg(), schema)).rejects.toThrow(missing);
    // Vectors the table already holds are not computed, so 0.39 does not ask the schema for them.
    const given = makeArrowTable(rows.map((r) => ({ ...r, vector: [9, 9] })));
    expect((await fromTableToBuffer(given, cfg(), schema)).byteLength).toBeGreaterThan(0);
  });

  test("an empty table and a function without ndims(): no size for the vector column, said in 0.39's words", async () => {
    class NoDims extends TextEmbeddingFunction {
      async generateEmbeddings(texts: string[]): Promise<number[][]> {
        return texts.map((t) => [t.length, 1]);
      }
    }
    const empty = makeEmptyTable(new Schema([new Field("text", new Utf8(), true)]));
    const noDims = { function: new NoDims(), sourceColumn: "text" };
    await expect(fromTableToBuffer(empty, noDims)).rejects.toThrow(root.InvalidInputError);
    await expect(fromTableToBuffer(empty, noDims)).rejects.toThrow(/does not specify `embeddingDimension`/);
  });

  test("the buffer helpers compute it too", async () => {
    for (const b of [
      await fromRecordsToBuffer(rows, cfg()),
      await fromRecordsToStreamBuffer(rows, cfg()),
      await fromTableToBuffer(makeArrowTable(rows), cfg()),
      await fromDataToBuffer(makeArrowTable(rows), cfg()),
      await fromDataToBuffer(rows, cfg()),
    ]) {
      expect(rowsOf(tableFromIPC(b)).map((r) => (r as { vector: unknown }).vector)).toEqual([[2, 1], [3, 1], null]);
    }
    // Vectors given in every row are kept.
    const given = rows.map((r) => ({ ...r, vector: [9, 9] }));
    expect(rowsOf(await convertToTable(given, cfg())).map((r) => (r as { vector: unknown }).vector)).toEqual([
      [9, 9],
      [9, 9],
      [9, 9],
    ]);
  });

  test("a schema recording functions (embedding_functions) gives every schema column, missing ones null, as 0.39", async () => {
    const schema = new Schema(
      [
        new Field("id", new Int64(), true),
        new Field("note", new Utf8(), true),
        new Field("meta", new Struct([new Field("v", new Int32(), true), new Field("w", new Utf8(), true)]), true),
      ],
      new Map([["embedding_functions", "[]"]]),
    );
    const data = [{ id: 1n }, { id: 2n, meta: { v: 3 } }];
    const t = await convertToTable(data, undefined, { schema });
    expect(fieldsOf(t.schema)).toEqual(["id:Int64:true", "note:Utf8:true", "meta:Struct<{v:Int32, w:Utf8}>:true"]);
    const expected = [
      { id: 1n, note: null, meta: { v: null, w: null } },
      { id: 2n, note: null, meta: { v: 3, w: null } },
    ];
    expect(rowsOf(t)).toEqual(expected);
    expect(rowsOf(tableFromIPC(await fromRecordsToBuffer(data, undefined, schema)))).toEqual(expected);
    // An Arrow table lacking columns: fromDataToBuffer fills them (a missing struct is one of nulls there).
    const back = tableFromIPC(await fromDataToBuffer(makeArrowTable([{ id: 1n }, { id: 2n }]), undefined, schema));
    expect(fieldsOf(back.schema)).toEqual(fieldsOf(schema));
    expect(rowsOf(back)).toEqual([
      { id: 1n, note: null, meta: { v: null, w: null } },
      { id: 2n, note: null, meta: { v: null, w: null } },
    ]);
    // An Arrow column of another type than the schema's is refused (0.39 would relabel its bytes).
    await expect(fromDataToBuffer(makeArrowTable([{ id: 1 }]), undefined, schema)).rejects.toThrow(/column 'id' is Float64/);
  });

  test("a missing source column, vectors in some rows only, or a bad config are InvalidInputErrors", async () => {
    await expect(convertToTable([{ id: 1n }], cfg())).rejects.toThrow(
      /the source column 'text' was not present in the data \(columns: id\)/,
    );
    await expect(convertToTable([{ text: "a", vector: [1, 2] }, { text: "b" }], cfg())).rejects.toThrow(
      /1 of 2 rows have the vector column 'vector'/,
    );
    await expect(fromRecordsToBuffer(rows, { sourceColumn: "text" } as never)).rejects.toThrow(root.InvalidInputError);
    await expect(fromTableToBuffer(makeArrowTable(rows), { function: new Len(), sourceColumn: "" })).rejects.toThrow(/sourceColumn/);
  });
});

describe("predicates, JSON types, nested fields", () => {
  test("type predicates read the type id, for any apache-arrow copy", () => {
    expect(api.isInt(new Int32()) && api.isInt(new a15.Int8()) && !api.isInt(new Float32())).toBe(true);
    expect(api.isFloat(new a18.Float16()) && api.isUtf8(new Utf8()) && api.isLargeUtf8(new arrow.LargeUtf8())).toBe(true);
    expect(
      api.isFixedSizeList(new FixedSizeList(2, new Field("item", new Float32()))) && api.isList(new List(new Field("i", new Int32()))),
    ).toBe(true);
    expect(api.isStruct(new Struct([])) && api.isTimestamp(new TimestampMicrosecond()) && api.isDate(new arrow.DateDay())).toBe(true);
    expect(api.isBool(new arrow.Bool()) && api.isBinary(new arrow.Binary()) && api.isNull(new arrow.Null())).toBe(true);
    expect(api.isNull(null) || api.isInt("Int32") || api.isBool(new Utf8())).toBe(false);
    expect(api.isArrowTable(makeArrowTable([{ a: 1 }])) && api.isArrowTable({ schema: {}, batches: [] }) && !api.isArrowTable({})).toBe(
      true,
    );
  });

  test("isIntoVector / isMultiVector / extractVectorBuffer", () => {
    expect([api.isIntoVector([1, 2]), api.isIntoVector(new Float32Array(2)), api.isIntoVector([[1]]), api.isIntoVector([])]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect([api.isMultiVector([[1, 2]]), api.isMultiVector([new Float64Array(1)]), api.isMultiVector([1]), api.isMultiVector([])]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    const f64 = api.extractVectorBuffer(new Float64Array([1.5]));
    expect(f64?.dtype).toBe("float64");
    expect(new Float64Array(f64?.data.slice().buffer ?? new ArrayBuffer(0))[0]).toBe(1.5);
    expect(api.extractVectorBuffer(new Uint8Array([3]))?.dtype).toBe("uint8");
    expect(api.extractVectorBuffer(new Float32Array([1]))).toBeNull();
  });

  test("dataTypeToJson writes the REST protocol's JSON schema types", () => {
    const t = new Struct([
      new Field("v", new FixedSizeList(2, new Field("item", new Float32(), true)), false),
      new Field("ts", new TimestampMicrosecond(), true),
      new Field("d", new Dictionary(new Utf8(), new Int32()), true),
      new Field("h", new Float16(), true),
    ]);
    expect(api.dataTypeToJson(t)).toEqual({
      type: "struct",
      fields: [
        {
          name: "v",
          type: { type: "fixed_size_list", fields: [{ name: "item", type: { type: "float" }, nullable: true, metadata: {} }], length: 2 },
          nullable: false,
          metadata: {},
        },
        { name: "ts", type: { type: "timestamp:us:-" }, nullable: true, metadata: {} },
        { name: "d", type: { type: "dict:string:int32:false" }, nullable: true, metadata: {} },
        { name: "h", type: { type: "halffloat" }, nullable: true, metadata: {} },
      ],
    });
    expect(() => api.dataTypeToJson(new arrow.IntervalDayTime())).toThrow(root.NotSupportedError);
  });

  test("ensureNestedFieldsExist fills missing fields (nested too) with nulls, in the schema's order", () => {
    const schema = new Schema([
      new Field("a", new Int32()),
      new Field("s", new Struct([new Field("x", new Int32()), new Field("y", new Utf8())])),
    ]);
    const input = [{ s: { x: 1 } }, { a: 1 }, { s: null, a: 2 }];
    expect(api.ensureNestedFieldsExist(input, schema)).toEqual([
      { a: null, s: { x: 1, y: null } },
      { a: 1, s: { x: null, y: null } },
      { a: 2, s: null },
    ]);
    expect(input[0]).toEqual({ s: { x: 1 } });
  });
});

describe("exports", () => {
  test("memwal/arrow re-exports apache-arrow; the root exports the 0.39 root helpers", () => {
    expect(api.Schema).toBe(arrow.Schema);
    expect(api.tableFromArrays).toBe(arrow.tableFromArrays);
    expect(root.makeArrowTable).toBe(api.makeArrowTable);
    expect(root.MakeArrowTableOptions).toBe(api.MakeArrowTableOptions);
    expect(root.VectorColumnOptions).toBe(api.VectorColumnOptions);
    expect(new MakeArrowTableOptions().vectorColumns.vector.type.toString()).toBe("Float32");
    expect(new MakeArrowTableOptions().dictionaryEncodeStrings).toBe(false);
  });

  test("every value 0.39's arrow.d.ts declares is exported", () => {
    const dts = path.join(__dirname, "..", "bench", "node_modules", "@lancedb", "lancedb", "dist", "arrow.d.ts");
    const names = fs.existsSync(dts)
      ? [...fs.readFileSync(dts, "utf8").matchAll(/export declare (?:function|class) (\w+)/g)].map((m) => m[1])
      : ["makeArrowTable", "makeEmptyTable", "convertToTable", "fromTableToBuffer", "isArrowTable"];
    expect(names.length).toBeGreaterThan(4);
    const exported = api as unknown as Record<string, unknown>;
    expect(names.filter((n) => typeof exported[n] !== "function")).toEqual([]);
  });
});
