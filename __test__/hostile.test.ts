/**
 * Hostile and careless input through the real addon: each case is an
 * InvalidInputError naming what is wrong, and the table is unchanged.
 * Named after the items of the hostile-input issue.
 */
import { Table as ArrowTable, Field, Float64, Int64, Schema, tableToIPC, Utf8, vectorFromArray } from "apache-arrow";
import { connect, InvalidInputError, type Table } from "../lib";
import { ages, people, tmpDir } from "./helpers";

async function table(): Promise<Table> {
  const db = await connect(tmpDir());
  return db.createTable(
    "t",
    people([
      [1, 10],
      [2, 20],
    ]),
  );
}

async function invalidInput(p: Promise<unknown> | (() => unknown), text: string | RegExp): Promise<void> {
  const run = typeof p === "function" ? Promise.resolve().then(p) : p;
  await expect(run).rejects.toBeInstanceOf(InvalidInputError);
  await expect(typeof p === "function" ? Promise.resolve().then(p) : run).rejects.toThrow(text);
}

describe("hostile input never crashes the process", () => {
  test("regression: a 3,000-term OR chain is InvalidInput, not a SIGSEGV", async () => {
    const t = await table();
    const chain = Array(3000).fill("id = 1").join(" OR ");
    await invalidInput(t.countRows(chain), /too deep/);
    await invalidInput(t.delete(chain), /too deep/);
    await invalidInput(
      t
        .query()
        .where(`${Array(2500).fill("age").join(" + ")} > 1`)
        .toArrow(),
      /too deep/,
    );
    expect(await t.countRows()).toBe(2);
  });

  test("regression: a malformed IPC body is InvalidInput, not Internal", async () => {
    const t = await table();
    const good = tableToIPC(
      new ArrowTable({
        id: vectorFromArray([3n], new Int64()),
        age: vectorFromArray([30n], new Int64()),
        name: vectorFromArray(["c"], new Utf8()),
      }),
      "stream",
    );
    for (let i = 8; i < good.length - 8; i += 8) {
      const bad = Buffer.from(good);
      bad.writeBigUInt64LE(1n << 59n, i);
      try {
        await t.add(bad);
      } catch (e) {
        expect((e as { code?: string }).code).toBe("InvalidInput");
      }
    }
  });
});

describe("silent changes are refused", () => {
  test("regression: add of a bigint beyond int64 is refused, not stored as 0", async () => {
    const t = await table();
    await invalidInput(t.add([{ id: 2n ** 70n, age: 1n, name: "x" }]), /out of its range/);
    await invalidInput(t.add([{ id: 1.5, age: 1n, name: "x" }]), /column 'id'/);
    expect(await t.countRows()).toBe(2);
  });

  test("regression: update to a value the column cannot hold is refused, not NULL", async () => {
    const db = await connect(tmpDir());
    const schema = new Schema([new Field("id", new Int64(), false), new Field("v", new Float64(), true)]);
    const t = await db
      .createTable("f", [{ id: 1n, v: 1.5 }], { schema } as never)
      .catch(() =>
        db.createTable("f", new ArrowTable({ id: vectorFromArray([1n], new Int64()), v: vectorFromArray([1.5], new Float64()) })),
      );
    const before = await t.version();
    await invalidInput(t.update({ values: { v: "abc" } }), /column 'v'/);
    await invalidInput(t.update({ valuesSql: { id: "'x'" } }), /column 'id'/);
    await invalidInput(t.update({ values: { v: Number.NaN } }), /finite/);
    expect(await t.version()).toBe(before);
    const rows = (await t.toArrow()).toArray().map((r) => [Number(r.id), r.v]);
    expect(rows).toEqual([[1, 1.5]]);
  });

  test("regression: duplicate and missing columns are refused", async () => {
    const t = await table();
    const dup = new ArrowTable({ id: vectorFromArray([5n], new Int64()) });
    const bytes = Buffer.from(tableToIPC(dup, "stream"));
    // Rename nothing: build a two-`id` schema by hand through the IPC of a table with two fields.
    const two = new ArrowTable(new Schema([new Field("id", new Int64()), new Field("id", new Int64())]));
    await invalidInput(t.add(Buffer.from(tableToIPC(two, "stream"))), /two columns named 'id'/);
    const none = new ArrowTable(new Schema([]));
    await invalidInput(t.add(Buffer.from(tableToIPC(none, "stream"))), /no columns/);
    expect(bytes.length).toBeGreaterThan(0);
    expect(await t.countRows()).toBe(2);
  });

  test("regression: option values that make no sense are InvalidInput", async () => {
    const t = await table();
    await invalidInput(() => t.query().offset(Infinity), /offset\(n\)/);
    await invalidInput(() => t.query().limit(Number.NaN), /limit\(n\)/);
    await invalidInput(() => t.query().limit(-1), /limit\(n\)/);
    await invalidInput(t.checkout(Number.NaN), /checkout\(version\)/);
    await invalidInput(() => t.mergeInsert("id").timeout(Number.NaN), /timeout\(ms\)/);
    await invalidInput(() => t.mergeInsert("id").timeout(-5), /timeout\(ms\)/);
    await invalidInput(
      t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .execute(people([[1, 1]]), { timeoutMs: Infinity }),
      /timeoutMs/,
    );
    // A misspelled option is refused by name, never ignored (was: accepted, no deadline).
    await invalidInput(
      t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .execute(people([[1, 1]]), { timeoutMS: 1 } as never),
      /unknown option 'timeoutMS'/,
    );
    await invalidInput(t.addColumns([{ name: "y", valueSql: "id", dataType: "int" } as never]), /unknown option 'dataType'/);
  });
});

describe("unclear errors", () => {
  test("regression: wrong argument types name the argument", async () => {
    const t = await table();
    await invalidInput(t.countRows(123 as never), /countRows\(filter\) must be a string, got 123/);
    await invalidInput(t.delete(undefined as never), /delete\(predicate\) must be a string/);
    await invalidInput(() => t.mergeInsert(undefined as never), /mergeInsert\(on\)/);
    await invalidInput(() => t.query().select([1] as never), /select\(columns\)\[0\]/);
    await invalidInput(connect("db://x", { apiKey: "k", hostOverride: "not a url" }), /hostOverride/);
    expect(await ages(t)).toEqual([
      [1, 10],
      [2, 20],
    ]);
  });
});

test("argument mistakes on the connection and the merge builder are InvalidInput naming the argument, never Internal", async () => {
  const { connect, InvalidInputError } = await import("../lib");
  const db = await connect("memory://");
  const t = await db.createTable("args", [{ id: 1, v: 2 }]);
  const bad: Array<[string, () => Promise<unknown>]> = [
    ["createTable(name)", () => db.createTable(5 as never, [{ id: 1 }])],
    ["openTable(name)", () => db.openTable(5 as never)],
    ["openTable(namespace)", () => db.openTable("args", 5 as never)],
    ["dropTable(name)", () => db.dropTable(5 as never)],
    ["renameTable(currentName)", () => db.renameTable(5 as never, "x")],
    ["createEmptyTable(schema)", () => db.createEmptyTable("e", 5 as never)],
    ["whenMatchedUpdateAll(options)", async () => t.mergeInsert("id").whenMatchedUpdateAll(5 as never)],
    ["whenMatchedUpdateAll(options.where)", async () => t.mergeInsert("id").whenMatchedUpdateAll({ where: 5 as never })],
    ["whenNotMatchedBySourceDelete(options)", async () => t.mergeInsert("id").whenNotMatchedBySourceDelete({ nope: 1 } as never)],
  ];
  for (const [name, f] of bad) {
    const e = await f().then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(InvalidInputError);
    expect(String((e as Error).message)).toContain(name);
  }
});
