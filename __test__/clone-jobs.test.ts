/**
 * 0.39's cloneTable (a table of its own from a version of another, addressed by folder), the finished Jobs of
 * createIndexAsync and dropTableAsync, and the refusal by name of materialized views.
 */
import * as path from "node:path";
import { connect, InvalidInputError, Job, NotSupportedError, TableNotFoundError } from "../lib";
import { tableKinds, tmpDir } from "./helpers";

const rows = (n: number, from = 1) => Array.from({ length: n }, (_, i) => ({ id: from + i, vector: [from + i, 0.5] }));

describe("cloneTable", () => {
  test("clones the latest version, a version or a tag; the clone is independent of its source", async () => {
    const dir = tmpDir();
    const db = await connect(dir);
    const src = await db.createTable("source", rows(2));
    const v1 = await src.version();
    await (await src.tags()).create("first", v1);
    await src.add(rows(1, 3));

    const latest = await db.cloneTable("latest", path.join(dir, "source"));
    expect(await latest.countRows()).toBe(3);
    expect((await latest.listVersions()).length).toBe(1);
    expect(await db.cloneTable("byVersion", path.join(dir, "source"), { sourceVersion: v1 }).then((t) => t.countRows())).toBe(2);
    // 0.39 addresses the table as DIR/name.lance.
    expect(await db.cloneTable("byTag", `${dir}/source.lance`, { sourceTag: "first" }).then((t) => t.countRows())).toBe(2);

    await latest.add(rows(1, 10));
    await src.delete("id = 1");
    expect(await latest.countRows()).toBe(4);
    expect(await src.countRows()).toBe(2);
    expect((await db.tableNames()).sort()).toEqual(["byTag", "byVersion", "latest", "source"]);
    // Schema and rows as the source had them.
    expect((await latest.schema()).fields.map((f) => `${f.name}:${f.type}`)).toEqual(
      (await src.schema()).fields.map((f) => `${f.name}:${f.type}`),
    );
  });

  test("clones a table of another folder", async () => {
    const other = tmpDir();
    await (await connect(other)).createTable("elsewhere", rows(4));
    const db = await connect(tmpDir());
    expect(await (await db.cloneTable("here", path.join(other, "elsewhere"))).countRows()).toBe(4);
  });

  test("refusals: both version and tag, a missing source, a target that exists, an unknown option", async () => {
    const dir = tmpDir();
    const db = await connect(dir);
    await db.createTable("s", rows(1));
    const uri = path.join(dir, "s");
    await expect(db.cloneTable("c", uri, { sourceVersion: 1, sourceTag: "x" })).rejects.toThrow(
      "Cannot specify both source_version and source_tag",
    );
    await expect(db.cloneTable("c", path.join(dir, "nope.lance"))).rejects.toThrow(TableNotFoundError);
    await expect(db.cloneTable("s", uri)).rejects.toThrow(/already exists/);
    await expect(db.cloneTable("c", uri, { deep: true } as never)).rejects.toThrow(InvalidInputError);
    await expect(db.cloneTable("c", "s3://bucket/s.lance")).rejects.toThrow(NotSupportedError);
  });
});

describe("jobs and materialized views", () => {
  const { kinds } = tableKinds();

  test.each(kinds)("createIndexAsync and dropTableAsync answer finished jobs (%s)", async (kind, open) => {
    const db = await open();
    const name = `job_${kind.replace(/\W/g, "_")}`;
    const t = await db.createTable(name, rows(300));
    const job = await t.createIndexAsync("vector", { name: "v_idx" });
    expect(job).toBeInstanceOf(Job);
    expect([job.id, job.state, await job.status()]).toEqual([null, "finished", "finished"]);
    await job.wait();
    await job.cancel();
    expect((await t.listIndices()).map((i) => i.name)).toEqual(["v_idx"]);
    await expect(job.events()).rejects.toThrow(NotSupportedError);
    const drop = await db.dropTableAsync(name);
    await drop.wait();
    expect(await db.tableNames()).not.toContain(name);
    await expect(db.dropTableAsync(name)).rejects.toThrow(TableNotFoundError);
  });

  test.each(kinds)("materialized views are refused by name (%s)", async (_kind, open) => {
    const db = await open();
    await expect(db.openMaterializedView("v")).rejects.toThrow(/materialized views are not supported by memwal/);
    await expect(db.listMaterializedViews()).rejects.toThrow(/only on local databases/);
    await expect(db.createMaterializedView("v", "src", { where: "id > 1" })).rejects.toThrow(NotSupportedError);
  });
});
