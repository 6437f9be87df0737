/**
 * apache-arrow objects of other versions (15 and 18.1, the range @lancedb/lancedb 0.39 takes, installed beside
 * our 21 as `apache-arrow-15` / `apache-arrow-18`) work wherever ours do: Tables and RecordBatches as data for
 * createTable, add and mergeInsert (memWal included), Schemas for createEmptyTable and createTable, Fields for
 * addColumns, DataTypes for alterColumns; values, types and nullability arrive unchanged.
 */

import * as a21 from "apache-arrow";
import * as a15 from "apache-arrow-15";
import * as a18 from "apache-arrow-18";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

type Arrow = typeof a21;
const versions: Array<[string, Arrow]> = [
  ["15", a15 as unknown as Arrow],
  ["18", a18 as unknown as Arrow],
  ["21", a21],
];

function sample(A: Arrow, ids: number[]) {
  const schema = new A.Schema([
    new A.Field("id", new A.Int64(), false),
    new A.Field("v", new A.Float32(), true),
    new A.Field("s", new A.Utf8(), true),
    new A.Field("tags", new A.List(new A.Field("item", new A.Utf8(), true)), true),
    new A.Field("vec", new A.FixedSizeList(2, new A.Field("item", new A.Float32(), true)), true),
    new A.Field("st", new A.Struct([new A.Field("a", new A.Int32(), true)]), true),
  ]);
  const rows = ids.map((i) => ({
    id: BigInt(i),
    v: i / 2,
    s: i % 2 ? null : `s${i}`,
    tags: [`t${i}`],
    vec: [i, 1],
    st: { a: i },
  }));
  const children = schema.fields.map(
    (f) =>
      A.vectorFromArray(
        rows.map((r) => r[f.name as keyof typeof r]),
        f.type,
      ).data[0],
  );
  const data = A.makeData({ type: new A.Struct(schema.fields), length: rows.length, nullCount: 0, children });
  return { schema, table: new A.Table([new A.RecordBatch(schema, data)]) };
}

describe.each(kinds)("apache-arrow 15, 18 and 21 objects on a %s table", (kind, open) => {
  test.each(versions)("version %s: tables, batches, schemas, fields and types", async (v, A) => {
    const db = await open();
    const name = `arrow${v}_${kind.replace(/\W/g, "_")}`;
    const { schema, table } = sample(A, [1, 2]);
    const t = await db.createTable(name, table);
    const got = await t.schema();
    expect(got.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual(
      schema.fields.map((f) => [f.name, String(f.type), f.nullable]),
    );
    await t.add(sample(A, [3]).table.batches[0]);
    const m = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
    await (kind === "served" ? m.memWal() : m).execute(sample(A, [3, 4]).table);
    const rows = (await t.query().toArray()).sort((x, y) => Number(x.id) - Number(y.id));
    expect(
      rows.map((r) => [
        Number(r.id),
        r.v,
        r.s,
        [...(r.tags as Iterable<string>)],
        [...(r.vec as Iterable<number>)],
        (r.st as { a: number }).a,
      ]),
    ).toEqual([1, 2, 3, 4].map((i) => [i, i / 2, i % 2 ? null : `s${i}`, [`t${i}`], [i, 1], i]));
    await t.addColumns(new A.Field("extra", new A.Float64(), true));
    await t.alterColumns([{ path: "v", dataType: new A.Float64() }]);
    const after = await t.schema();
    expect(String(after.fields.find((f) => f.name === "v")?.type)).toBe("Float64");
    expect(after.fields.map((f) => f.name)).toContain("extra");
    const empty = await db.createEmptyTable(`${name}_empty`, schema);
    expect(await empty.countRows()).toBe(0);
    expect((await empty.schema()).fields.map((f) => String(f.type))).toEqual(schema.fields.map((f) => String(f.type)));
    const fromRows = await db.createTable(`${name}_rows`, [{ id: 7n, v: 1.5, s: "x", tags: ["a"], vec: [1, 2], st: { a: 1 } }], {
      schema,
    });
    expect(await fromRows.countRows()).toBe(1);
  });
});
