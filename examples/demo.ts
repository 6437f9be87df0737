/**
 * The main job, end to end on the embedded defaults: a local folder table
 * fed by streamed upserts, then the same stream through the bundled server
 * on loopback with the MemWAL path.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { connect, serve, type Table } from "../lib";

const BATCH = 500;
const BATCHES = 200;

function batch(i: number): Array<Record<string, unknown>> {
  // Half of each batch updates existing keys, half inserts new ones.
  const rows = [];
  for (let j = 0; j < BATCH; j++) {
    const id = j % 2 === 0 ? (i * 7919 + j) % 100_000 : 100_000 + i * BATCH + j;
    rows.push({ id: BigInt(id), value: i + j / 1000, name: `row-${id}` });
  }
  return rows;
}

async function stream(label: string, tbl: Table, memWal: boolean): Promise<void> {
  let inserted = 0;
  let updated = 0;
  const lat: number[] = [];
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < BATCHES; i++) {
    const s = process.hrtime.bigint();
    const b = tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
    const r = await (memWal ? b.memWal() : b).execute(batch(i));
    lat.push(Number(process.hrtime.bigint() - s) / 1e6);
    inserted += r.numInsertedRows;
    updated += r.numUpdatedRows;
    if ((i + 1) % 20 === 0) process.stdout.write(`\r${label}: ${i + 1}/${BATCHES} upserts of ${BATCH} rows`);
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  lat.sort((a, b) => a - b);
  const p = (q: number) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))].toFixed(2);
  const rows = await tbl.countRows();
  console.log(
    `\n${label}: ${((BATCH * BATCHES) / secs).toFixed(0)} rows/s, p50 ${p(0.5)} ms, p99 ${p(0.99)} ms per upsert; ` +
      `inserted ${inserted}, updated ${updated}; countRows() = ${rows} (expected ${100_000 + inserted})`,
  );
  if (rows !== 100_000 + inserted) throw new Error(`${label}: countRows() does not see every acknowledged row`);
}

async function seed(): Promise<Array<Record<string, unknown>>> {
  const rows = [];
  for (let id = 0; id < 100_000; id++) rows.push({ id: BigInt(id), value: 0, name: `row-${id}` });
  return rows;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "memwal-demo-"));
  const base = await seed();

  const local = await connect(path.join(dir, "local"));
  const t = await local.createTable("events", base);
  await stream("local table, direct merge insert", t, false);
  const v = await t.version();
  const s = await t.optimize();
  console.log(
    `local table: at version ${v}; optimize() merged ${s.compaction.fragmentsRemoved} fragments into ${s.compaction.fragmentsAdded}`,
  );

  const server = await serve({ dataDir: path.join(dir, "server"), apiKey: "demo-key" });
  try {
    const remote = await connect("db://demo", { apiKey: "demo-key", hostOverride: server.url });
    const rt = await remote.createTable("events", base);
    await stream(`bundled server (${server.url}), MemWAL`, rt, true);
  } finally {
    await server.close();
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
