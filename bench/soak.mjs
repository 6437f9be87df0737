// npm run soak (node soak.mjs): "Soak J", a served table under an endless stream.
// The memwal-server binary in its own process, a fresh data folder and a short retention; a seeded table fed
// 200-row memWal upserts (half updates of acknowledged ids, half new ids; id int64, a float64, a 16-char utf8,
// a 128-d float32 vector) by SOAK_CLIENTS closed-loop clients at whatever rate the machine sustains, one
// vector search (limit 10) about every second, and every SOAK_SAMPLE_SECS a sample of the data folder's size,
// the live rows, the fragment count and the server's /metrics. Prints a markdown table per minute and the
// verdicts against the issue's targets (size <= 2x live after the first retention period; the last minute's
// upsert p50 and p99 within 1.2x of the first minute's); writes results/soak.json and results/soak.svg.
// `node soak.mjs --svg [FILE]` only redraws results/soak.svg from a run's JSON (default results/soak.json).
// Exits non-zero if the server dies or the acknowledged writes do not add up (countRows against the distinct
// ids written). Every failed call is counted and reported.
//
// Env: SOAK_SECONDS (600), SOAK_RETENTION_SECS (30), SOAK_CLEANUP_EVERY_SECS (10), SOAK_CLIENTS (4),
// SOAK_SEED_ROWS (10000), SOAK_SAMPLE_SECS (5), SOAK_CALL_TIMEOUT_SECS (120), SOAK_RETRIES (0: a failed request
// is a failed call, not retried by the client), SOAK_RATE (upserts/s over all clients; 0, the default: no cap),
// SOAK_SEARCH_EVERY_SECS (1; 0: no searches), SOAK_INDEX (none, the default: searches are flat over every row; ivf_pq: an IVF_PQ index built on the seed
// rows, that the server's upkeep keeps folding the stream into, searched with its defaults),
// MEMWAL_SERVER_BIN (default: release/memwal-server under $CARGO_TARGET_DIR, ../target or
// ~/.cache/memwal-target), MEMWAL_LOG (the server's log level, default info).
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { rowMaker } from "./rows.mjs";

// apache-arrow and the memwal build from the package root (bench/node_modules need not exist).
const require = createRequire(new URL("../package.json", import.meta.url));
const arrow = require("apache-arrow");
const { tableToIPC } = arrow;
const memwal = require("./dist/lib/index.js");

function envNum(name, def, min = 0) {
  const v = process.env[name];
  if (v === undefined || v === "") return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}=${v}: expected a number >= ${min}`);
  return n;
}
const SECONDS = envNum("SOAK_SECONDS", 600, 1);
const RETENTION = envNum("SOAK_RETENTION_SECS", 30, 1);
const CLEANUP_EVERY = envNum("SOAK_CLEANUP_EVERY_SECS", 10, 1);
const CLIENTS = envNum("SOAK_CLIENTS", 4, 1);
const SEED_ROWS = envNum("SOAK_SEED_ROWS", 10_000, 400);
const SAMPLE_MS = envNum("SOAK_SAMPLE_SECS", 5, 0.5) * 1000;
const CALL_TIMEOUT_MS = envNum("SOAK_CALL_TIMEOUT_SECS", 120, 1) * 1000;
const RETRIES = envNum("SOAK_RETRIES", 0, 0);
const RATE = envNum("SOAK_RATE", 0, 0); // upserts/s over all clients; 0: as fast as the closed loops go
const INDEX = process.env.SOAK_INDEX || "none";
// Seconds between the reader's searches; 0: no searches (to see the writes' tail without the searches' CPU).
const SEARCH_EVERY_MS = envNum("SOAK_SEARCH_EVERY_SECS", 1, 0) * 1000;
if (!["none", "ivf_pq"].includes(INDEX)) throw new Error(`SOAK_INDEX=${INDEX}: expected none or ivf_pq`);
const DIM = 128;
const BATCH = 200;
const HALF = BATCH / 2;
const API_KEY = "k";
const TABLE = "events";
const MB = 1e6;
// Colour codes in the server's log (built so, not as a regex literal with a control character).
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

const { rnd, table: rowsTable } = rowMaker(arrow, DIM);

/** worker.mjs's row shape, as the Arrow IPC stream bytes memwal takes. */
const rows = (ids) => tableToIPC(rowsTable(ids), "stream");

const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);
const now = () => performance.now();
const pct = (lat, q) => {
  if (!lat.length) return NaN;
  const s = Float64Array.from(lat).sort();
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};
const errText = (e) => String(e?.message ?? e).slice(0, 300);

// Stopping: the run's end, the server's death or a signal; every wait below ends early on it.
let stopping = false;
let stopResolve;
const stopped = new Promise((r) => {
  stopResolve = r;
});
function stopNow() {
  stopping = true;
  stopResolve();
}
const sleep = (ms) => Promise.race([new Promise((r) => setTimeout(r, ms).unref()), stopped]);

function withTimeout(p, ms, what) {
  let timer;
  return Promise.race([
    p,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer in ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function serverBinary() {
  const cands = [
    process.env.MEMWAL_SERVER_BIN,
    process.env.CARGO_TARGET_DIR && path.join(process.env.CARGO_TARGET_DIR, "release/memwal-server"),
    new URL("../target/release/memwal-server", import.meta.url).pathname,
    path.join(os.homedir(), ".cache/memwal-target/release/memwal-server"),
  ].filter(Boolean);
  const bin = cands.find((c) => fs.existsSync(c));
  if (!bin) throw new Error(`memwal-server not found (tried ${cands.join(", ")}); build it: cargo build --release -p memwal-server`);
  return bin;
}

/** Every file under `dir` (relative path, size); files removed meanwhile are skipped. */
async function walk(dir, rel = "", out = []) {
  let entries;
  try {
    entries = await fsp.readdir(path.join(dir, rel), { withFileTypes: true });
  } catch (e) {
    if (e.code === "ENOENT") return out;
    throw e;
  }
  await Promise.all(
    entries.map(async (e) => {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) return walk(dir, r, out);
      try {
        out.push([r, (await fsp.stat(path.join(dir, r))).size]);
      } catch (err) {
        if (err.code !== "ENOENT") throw err;
      }
    }),
  );
  return out;
}

/** The data folder by part: the table's data files, deletion files, manifests, the WALs, the rest. */
async function folderSize(dir) {
  const files = await walk(dir);
  const s = {
    total: 0,
    files: files.length,
    data: 0,
    dataFiles: 0,
    deletions: 0,
    versions: 0,
    manifests: 0,
    wal: 0,
    walFiles: 0,
    other: 0,
  };
  for (const [rel, size] of files) {
    s.total += size;
    const parts = rel.split(path.sep);
    if (parts[0] === ".memwal") {
      s.wal += size;
      s.walFiles++;
    } else if (parts.includes("data")) {
      s.data += size;
      s.dataFiles++;
    } else if (parts.includes("_deletions")) s.deletions += size;
    else if (parts.includes("_versions")) {
      s.versions += size;
      s.manifests++;
    } else s.other += size;
  }
  return s;
}

/**
 * The unlabelled samples of /metrics (`memwal_x_total 3`), by name without the prefix, and under `phases` the
 * cumulative buckets of the upsert phase histogram: { queue: [[le, count], ...], wal: ..., lock: ..., apply: ... }.
 */
function parseMetrics(text) {
  const out = { phases: {} };
  for (const line of text.split("\n")) {
    const m = /^memwal_([a-z_]+) (\S+)$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
    const b = /^memwal_upsert_phase_duration_seconds_bucket\{(.*)\} (\S+)$/.exec(line);
    if (b) {
      const phase = /phase="([a-z]+)"/.exec(b[1])?.[1];
      const le = /le="([^"]+)"/.exec(b[1])?.[1];
      if (phase && le) {
        if (out.phases[phase] === undefined) out.phases[phase] = [];
        out.phases[phase].push([le === "+Inf" ? Infinity : Number(le), Number(b[2])]);
      }
    }
    // The whole request as the server saw it (body read, decode, the phases above, the answer), on the
    // merge_insert route (the duration histogram has route and method labels, no status): what the client's
    // latency holds besides the network and the client itself.
    const h = /^memwal_http_request_duration_seconds_bucket\{(.*)\} (\S+)$/.exec(line);
    if (h?.[1].includes("/merge_insert/")) {
      const le = /le="([^"]+)"/.exec(h[1])?.[1];
      if (le) {
        if (out.phases.http === undefined) out.phases.http = [];
        out.phases.http.push([le === "+Inf" ? Infinity : Number(le), Number(h[2])]);
      }
    }
  }
  return out;
}

/** A quantile (upper bucket bound, ms) of the upserts observed between two samples' phase histograms. */
/** The server's upsert phases (`memwal_upsert_phase_duration_seconds`), then the whole request (`http`). */
const PHASES = ["body", "prep", "queue", "wal", "lock", "apply", "reply", "http"];

/** A bucket bound in ms, briefly. */
const fmtBound = (ms) => (Number.isFinite(ms) ? (ms < 1 ? ms.toFixed(2) : ms.toFixed(0)) : "n/a");

function phaseQuantile(before, after, phase, q) {
  const a = after?.phases?.[phase];
  if (!a) return NaN;
  const b = new Map((before?.phases?.[phase] ?? []).map(([le, n]) => [le, n]));
  const d = a.map(([le, n]) => [le, n - (b.get(le) ?? 0)]);
  const total = d.at(-1)?.[1] ?? 0;
  if (total <= 0) return NaN;
  const hit = d.find(([, n]) => n >= q * total);
  return hit ? hit[0] * 1000 : NaN;
}

/** The server's resident memory, MB: all, anonymous (heap) and file-backed (mapped files, reclaimable). */
function rss(pid) {
  try {
    const st = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(st)?.[1] ?? NaN) / 1024;
    return { all: kb("VmRSS"), anon: kb("RssAnon"), file: kb("RssFile") };
  } catch {
    return { all: NaN, anon: NaN, file: NaN };
  }
}

async function startServer(bin, dataDir, logFile) {
  const args = ["--data", dataDir, "--port", "0", "--retention-secs", String(RETENTION), "--cleanup-every-secs", String(CLEANUP_EVERY)];
  // The key by environment (as --help advises: not in `ps`).
  const child = spawn(bin, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, MEMWAL_API_KEY: API_KEY, MEMWAL_LOG: process.env.MEMWAL_LOG ?? "info", NO_COLOR: "1" },
  });
  const log = fs.createWriteStream(logFile);
  const state = { child, args, exit: null, log };
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    const onData = (c) => {
      log.write(c);
      if (seen !== null) {
        seen += c;
        const m = /listening on (http:\/\/\S+)/.exec(seen.replace(ANSI, ""));
        if (m) {
          seen = null;
          resolve(m[1]);
        }
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code, signal) => {
      state.exit = { code, signal, at_s: streamStart ? (now() - streamStart) / 1000 : 0 };
      reject(new Error(`memwal-server exited (code ${code}, signal ${signal}) before listening`));
      if (!state.stopping) stopNow();
    });
    setTimeout(() => reject(new Error("memwal-server did not report listening in 30 s")), 30_000).unref();
  });
  return { ...state, url, state };
}

async function stopServer(srv) {
  if (srv.state.exit) return srv.state.exit;
  srv.state.stopping = true;
  const exited = new Promise((r) => srv.child.once("exit", (code, signal) => r({ code, signal })));
  srv.child.kill("SIGTERM"); // merges buffered rows (up to --shutdown-flush-ms), then exits
  const t = setTimeout(() => srv.child.kill("SIGKILL"), 45_000);
  const r = await exited;
  clearTimeout(t);
  return r;
}

let streamStart = 0;

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "memwal-soak-"));
  const dataDir = path.join(tmp, "server");
  const logFile = path.join(tmp, "server.log");
  let srv = null;
  const cleanup = () => {
    try {
      if (srv && !srv.state.exit) srv.child.kill("SIGKILL");
    } catch {}
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, () => {
      console.error(`\n${sig}: stopping the server, removing ${tmp}`);
      cleanup();
      process.exit(130);
    });
  }
  try {
    return await run(tmp, dataDir, logFile, (s) => {
      srv = s;
    });
  } finally {
    cleanup();
  }
}

async function run(tmp, dataDir, logFile, setServer) {
  const bin = serverBinary();
  // The seed goes in chunks of at most SEED_CHUNK rows (one request each, within the server's body limit).
  const SEED_CHUNK = 100_000;
  const seedChunk = (i) => rows(range(i, Math.min(SEED_ROWS, i + SEED_CHUNK)));
  const seedIpc = seedChunk(0);
  const probeRows = Math.min(SEED_ROWS, SEED_CHUNK);

  // Bytes per live row, measured once: the seed rows written to a fresh local table (same package, same
  // shape), its folder's size over the row count; the Arrow IPC size of the same rows beside it.
  const localDir = path.join(tmp, "local");
  const local = await memwal.connect(localDir);
  await local.createTable("probe", seedIpc);
  const localBytes = (await walk(localDir)).reduce((a, [, s]) => a + s, 0);
  const bytesPerRow = localBytes / probeRows;
  const ipcBytesPerRow = seedIpc.byteLength / probeRows;
  fs.rmSync(localDir, { recursive: true, force: true });

  const srv = await startServer(bin, dataDir, logFile);
  setServer(srv);
  const pid = srv.child.pid;
  const url = srv.url;
  const cfg = {
    seconds: SECONDS,
    retention_secs: RETENTION,
    cleanup_every_secs: CLEANUP_EVERY,
    clients: CLIENTS,
    seed_rows: SEED_ROWS,
    batch_rows: BATCH,
    sample_secs: SAMPLE_MS / 1000,
    client_retries: RETRIES,
    rate_cap_upserts_per_s: RATE || null,
    index: INDEX,
    server: bin,
    server_args: srv.args,
    bytes_per_row: bytesPerRow,
    bytes_per_row_method: `folder size of a fresh local table of the first ${probeRows} seed rows / ${probeRows}`,
    ipc_bytes_per_row: ipcBytesPerRow,
    machine: `${os.cpus().length} x ${os.cpus()[0]?.model ?? "cpu"}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
    started: new Date().toISOString(),
  };
  console.log(
    `Soak J: ${SECONDS} s, ${CLIENTS} clients x ${BATCH}-row memWal upserts (half updates), seed ${SEED_ROWS} rows, ` +
      `retention ${RETENTION} s, cleanup every ${CLEANUP_EVERY} s, index ${INDEX}; server ${url} (pid ${pid}), data ${dataDir}`,
  );
  console.log(
    `live bytes per row: ${bytesPerRow.toFixed(1)} (fresh local table of the seed rows: folder size / rows; Arrow IPC: ${ipcBytesPerRow.toFixed(1)})`,
  );

  const retry = { retries: RETRIES, connectRetries: RETRIES, readRetries: RETRIES };
  const db = await memwal.connect("db://soak", {
    apiKey: API_KEY,
    region: "local",
    hostOverride: url,
    clientConfig: { retryConfig: retry },
  });
  const tbl = await db.createTable(TABLE, seedIpc);
  for (let i = SEED_CHUNK; i < SEED_ROWS; i += SEED_CHUNK) await tbl.add(seedChunk(i));
  if (INDEX === "ivf_pq") {
    await tbl.createIndex("vec", { config: memwal.Index.ivfPq({ numPartitions: 64, numSubVectors: 16 }) });
  }
  const upsert = (data) => tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(data);
  // Warm-up, not timed and adding no id: one upsert of seed rows, one search.
  await upsert(rows(range(0, BATCH)));
  await tbl
    .search(Array.from({ length: DIM }, rnd))
    .limit(10)
    .toArray();

  const acked = range(0, SEED_ROWS); // ids whose insert was acknowledged (update targets)
  let nextId = SEED_ROWS;
  let ackedCalls = 0;
  const upserts = []; // [start s, ms]
  const searches = []; // [start s, ms]
  const samples = [];
  const failures = []; // { t, what, error }
  const failCounts = new Map();
  const uncertain = []; // first new id of each failed upsert (ids base .. base + HALF - 1)
  const countMismatch = []; // acknowledged upserts whose inserted / updated counts are not HALF / HALF
  const shortSearches = [];
  const fail = (what, e) => {
    const f = { t: +((now() - streamStart) / 1000).toFixed(2), what, error: errText(e) };
    failures.push(f);
    const n = (failCounts.get(what) ?? 0) + 1;
    failCounts.set(what, n);
    if (n <= 3) console.log(`  FAILED ${what} at ${f.t} s: ${f.error}${n === 3 ? " (further ones of this kind not printed)" : ""}`);
  };

  let nextSlot = 0; // SOAK_RATE: the stream time (ms) the next upsert may start
  async function writer() {
    while (!stopping) {
      if (RATE > 0) {
        const slot = nextSlot;
        nextSlot = Math.max(nextSlot, now() - streamStart) + 1000 / RATE;
        await sleep(slot - (now() - streamStart));
        if (stopping) break;
      }
      const base = nextId;
      nextId += HALF;
      const upd = new Set();
      while (upd.size < HALF) upd.add(acked[Math.floor(rnd() * acked.length)]);
      const data = rows([...upd, ...range(base, base + HALF)]);
      const t0 = now();
      try {
        const r = await withTimeout(upsert(data), CALL_TIMEOUT_MS, "upsert");
        upserts.push([(t0 - streamStart) / 1000, now() - t0]);
        ackedCalls++;
        if (r.numInsertedRows !== HALF || r.numUpdatedRows !== HALF) {
          countMismatch.push({ base, inserted: r.numInsertedRows, updated: r.numUpdatedRows });
        }
        for (let i = base; i < base + HALF; i++) acked.push(i);
      } catch (e) {
        uncertain.push(base);
        // 503 "overloaded" (the flusher is behind): refused before the WAL, retry after 1 s, as the server says.
        const busy = e?.code === "Busy" || /overloaded/.test(errText(e));
        fail(busy ? "upsert busy" : "upsert", e);
        if (busy) await sleep(1000);
      }
    }
  }

  async function reader() {
    while (!stopping && SEARCH_EVERY_MS > 0) {
      const q = Array.from({ length: DIM }, rnd);
      const t0 = now();
      try {
        const r = await withTimeout(tbl.search(q).limit(10).toArray(), CALL_TIMEOUT_MS, "search");
        searches.push([(t0 - streamStart) / 1000, now() - t0]);
        if (r.length !== 10) shortSearches.push({ t: (t0 - streamStart) / 1000, rows: r.length });
      } catch (e) {
        fail("search", e);
      }
      await sleep(Math.max(0, SEARCH_EVERY_MS - (now() - t0)));
    }
  }

  const get = (p) => withTimeout(fetch(`${url}${p}`, { headers: { "x-api-key": API_KEY } }), 30_000, p);
  async function sample() {
    const t = (now() - streamStart) / 1000;
    const [size, count, stats, metrics, health, ixStats] = await Promise.allSettled([
      folderSize(dataDir),
      withTimeout(tbl.countRows(), CALL_TIMEOUT_MS, "countRows"),
      withTimeout(tbl.stats(), CALL_TIMEOUT_MS, "stats"),
      get("/metrics").then(async (r) => {
        if (!r.ok) throw new Error(`/metrics: HTTP ${r.status}`);
        return parseMetrics(await r.text());
      }),
      get("/health").then(async (r) => {
        const j = await r.json();
        return r.ok && j.status === "ok" ? "ok" : `HTTP ${r.status} ${JSON.stringify(j).slice(0, 200)}`;
      }),
      INDEX === "none" ? null : withTimeout(tbl.indexStats("vec_idx"), CALL_TIMEOUT_MS, "indexStats"),
    ]);
    const val = (r, what) => {
      if (r.status === "fulfilled") return r.value;
      fail(`sample ${what}`, r.reason);
      return null;
    };
    const sz = val(size, "size");
    const live = val(count, "countRows");
    const st = val(stats, "stats");
    const m = val(metrics, "metrics") ?? {};
    const h = val(health, "health");
    const ix = val(ixStats, "indexStats");
    if (h !== null && h !== "ok") fail("sample health", h);
    const mem = rss(pid);
    const s = {
      t: +t.toFixed(2),
      size_bytes: sz?.total ?? null,
      folder: sz,
      live_rows: live,
      live_bytes: live === null ? null : live * bytesPerRow,
      ratio: sz && live ? sz.total / (live * bytesPerRow) : null,
      fragments: st?.fragmentStats?.numFragments ?? null,
      small_fragments: st?.fragmentStats?.numSmallFragments ?? null,
      table_total_bytes: st?.totalBytes ?? null,
      server_rss_mb: mem.all,
      server_rss_anon_mb: mem.anon,
      server_rss_file_mb: mem.file,
      unindexed_rows: ix?.numUnindexedRows ?? null,
      health: h,
      metrics: m,
    };
    samples.push(s);
    return s;
  }

  async function sampler() {
    let next = 0;
    let lastPrint = -Infinity;
    while (!stopping) {
      const s = await sample();
      if (s.t - lastPrint >= 30) {
        lastPrint = s.t;
        console.log(
          `  ${s.t.toFixed(0).padStart(5)} s: ${upserts.length} upserts, ${searches.length} searches, ${failures.length} failed; ` +
            `data ${f1(s.size_bytes / MB)} MB, live ${f1(s.live_bytes / MB)} MB (x${f2(s.ratio)}), ${s.fragments} fragments, ` +
            `cleanups ${s.metrics.cleanups_total}, compactions ${s.metrics.compactions_total}, server RSS ${f1(s.server_rss_mb)} MB (anon ${f1(s.server_rss_anon_mb)})` +
            (s.unindexed_rows === null ? "" : `, ${s.unindexed_rows} rows not yet indexed`),
        );
      }
      next += SAMPLE_MS;
      await sleep(Math.max(0, next - (now() - streamStart)));
    }
  }

  streamStart = now();
  const tasks = [...Array.from({ length: CLIENTS }, writer), reader(), sampler()];
  await sleep(SECONDS * 1000);
  const serverDied = srv.state.exit !== null;
  stopNow();
  const runSecs = (now() - streamStart) / 1000; // the stream's length (calls in flight then still finish)
  await Promise.all(tasks);
  const elapsed = (now() - streamStart) / 1000;

  // Accounting: every acknowledged insert is a distinct id; a failed upsert's new ids may or may not have
  // landed (each is all or nothing), so they are counted in the table.
  const acct = {
    acked_upserts: ackedCalls,
    failed_upserts: uncertain.length,
    count_mismatches: countMismatch.slice(0, 20),
    count_mismatch_total: countMismatch.length,
    ok: false,
  };
  if (!serverDied) {
    try {
      await sample();
      // The ids of failed upserts' ranges found in the table, 200 ranges a query.
      const perBase = new Map();
      for (let i = 0; i < uncertain.length; i += 200) {
        const bases = uncertain.slice(i, i + 200);
        const where = bases.map((b) => `(id >= ${b} AND id < ${b + HALF})`).join(" OR ");
        const found = await withTimeout(
          tbl
            .query()
            .where(where)
            .select(["id"])
            .limit(bases.length * HALF + 1)
            .toArray(),
          CALL_TIMEOUT_MS,
          "query",
        );
        for (const r of found) {
          const b = SEED_ROWS + Math.floor((Number(r.id) - SEED_ROWS) / HALF) * HALF;
          perBase.set(b, (perBase.get(b) ?? 0) + 1);
        }
      }
      let landed = 0;
      const partial = [];
      for (const [b, n] of perBase) {
        landed += n;
        if (n !== HALF) partial.push({ base: b, rows: n });
      }
      acct.failed_upserts_landed = perBase.size;
      acct.failed_upserts_landed_rows = landed;
      acct.failed_upserts_partial = partial;
      acct.expected_rows = SEED_ROWS + ackedCalls * HALF + landed;
      acct.count_rows = await tbl.countRows();
      acct.count_rows_new_ids = await tbl.countRows(`id >= ${SEED_ROWS}`);
      await withTimeout(tbl.flushLsm(), CALL_TIMEOUT_MS, "flushLsm");
      acct.count_rows_after_flush = await tbl.countRows();
      acct.ok =
        countMismatch.length === 0 &&
        partial.length === 0 &&
        acct.count_rows === acct.expected_rows &&
        acct.count_rows_after_flush === acct.expected_rows &&
        acct.count_rows_new_ids === acct.expected_rows - SEED_ROWS;
    } catch (e) {
      acct.error = errText(e);
    }
  }
  const finalMetrics = serverDied
    ? null
    : await get("/metrics")
        .then(async (r) => parseMetrics(await r.text()))
        .catch(() => null);
  const exit = await stopServer(srv);
  srv.log.end();
  const logText = fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8").replace(ANSI, "") : "";
  const warnLines = logText.split("\n").filter((l) => /\b(WARN|ERROR)\b/.test(l));
  // The server logs each 503 overloaded refusal at ERROR; the other lines are the ones to read.
  const otherWarn = warnLines.filter((l) => !/overloaded/.test(l));

  // Per minute and per 10 s.
  const bucketStats = (w) => {
    // Whole buckets over the stream; a last one under a second (or w / 10) is folded into the one before.
    const n = Math.max(1, Math.ceil((runSecs - Math.min(1, w / 10)) / w));
    return Array.from({ length: n }, (_, i) => {
      const from = i * w,
        to = i === n - 1 ? runSecs : (i + 1) * w;
      // The last bucket also takes what came after the stream stopped (the calls then in flight, the final sample).
      const inT = (t) => t >= from && (i === n - 1 || t < to);
      const inB = (a) => a.filter(([t]) => inT(t)).map(([, ms]) => ms);
      const u = inB(upserts),
        q = inB(searches);
      const ss = samples.filter((s) => inT(s.t));
      const mx = (f) => {
        const v = ss.map(f).filter((x) => x !== null && Number.isFinite(x));
        return v.length ? Math.max(...v) : NaN;
      };
      const lastSample = ss.at(-1);
      return {
        from,
        to,
        upserts: u.length,
        upserts_per_s: u.length / (to - from),
        p50_ms: pct(u, 0.5),
        p99_ms: pct(u, 0.99),
        search_p50_ms: pct(q, 0.5),
        searches: q.length,
        busy: failures.filter((f) => inT(f.t) && f.what === "upsert busy").length,
        failed: failures.filter((f) => inT(f.t) && f.what !== "upsert busy").length,
        size_mb_max: mx((s) => s.size_bytes) / MB,
        live_mb_last: lastSample?.live_bytes != null ? lastSample.live_bytes / MB : NaN,
        ratio_max: mx((s) => s.ratio),
        fragments_max: mx((s) => s.fragments),
        small_fragments_max: mx((s) => s.small_fragments),
        server_rss_mb_max: mx((s) => s.server_rss_mb),
        server_rss_anon_mb_max: mx((s) => s.server_rss_anon_mb),
        unindexed_max: mx((s) => s.unindexed_rows),
        // The server's own view of where upserts waited (bucket bounds, so "<= x ms").
        phase_p99_ms: Object.fromEntries(
          PHASES.map((ph) => [ph, phaseQuantile(samples.filter((s) => s.t < from).at(-1)?.metrics, lastSample?.metrics, ph, 0.99)]),
        ),
      };
    });
  };
  const minutes = bucketStats(60);
  const tens = bucketStats(10);

  // Verdicts.
  // From the first moment a cleanup can have removed anything: files of the first retention period become
  // removable at RETENTION s and the next background cleanup comes within CLEANUP_EVERY s. Before that the folder
  // holds every file written since the start, which with half the writes updates is 2x live or more whatever
  // compaction does.
  const sizeFrom = RETENTION + CLEANUP_EVERY;
  const afterRet = samples.filter((s) => s.t >= sizeFrom && s.ratio !== null);
  const worst = afterRet.reduce((a, s) => (a === null || s.ratio > a.ratio ? s : a), null);
  const firstWin = upserts.filter(([t]) => t < 60).map(([, ms]) => ms);
  const lastWin = upserts.filter(([t]) => t >= runSecs - 60).map(([, ms]) => ms);
  const lat = {
    first: { p50: pct(firstWin, 0.5), p99: pct(firstWin, 0.99), n: firstWin.length },
    last: { p50: pct(lastWin, 0.5), p99: pct(lastWin, 0.99), n: lastWin.length },
  };
  lat.p50_ratio = lat.last.p50 / lat.first.p50;
  lat.p99_ratio = lat.last.p99 / lat.first.p99;
  // Fragments: a growing table needs more of them (one per ~64 MiB compaction run, more as deleted rows wait
  // in them); what must stay bounded is the count per byte of live data (one fragment per flush would grow it
  // without bound). Compared: the last minute's max per live GB against the max over the first half (after
  // the first minute, when a small table's few fragments make the ratio noisy).
  const frag = samples.map((s) => s.fragments).filter((x) => x !== null);
  const perGb = (pred) =>
    samples.filter((s) => pred(s) && s.fragments !== null && s.live_bytes > 0).map((s) => s.fragments / (s.live_bytes / 1e9));
  const fragMax = frag.length ? Math.max(...frag) : NaN;
  const perGbFirst = perGb((s) => s.t >= 60 && s.t < runSecs / 2);
  const perGbLast = perGb((s) => s.t >= runSecs - 60);
  const fragFirst = perGbFirst.length ? Math.max(...perGbFirst) : NaN;
  const fragLast = perGbLast.length ? Math.max(...perGbLast) : NaN;
  const verdicts = {
    size: {
      target: "data folder <= 2x live after the first retention period (and the cleanup that follows it)",
      from_s: sizeFrom,
      max_ratio: worst?.ratio ?? null,
      at_s: worst?.t ?? null,
      samples: afterRet.length,
      pass: worst !== null && worst.ratio <= 2,
    },
    latency: {
      target: "last minute's upsert p50 and p99 within 1.2x of the first minute's",
      ...lat,
      pass: lat.p50_ratio <= 1.2 && lat.p99_ratio <= 1.2,
    },
    fragments: {
      target: "bounded: fragments per GB of live data, last-minute max <= 1.5x the max over the first half (after minute 1)",
      max: fragMax,
      per_gb_first_half_max: fragFirst,
      per_gb_last_minute_max: fragLast,
      pass: fragLast <= 1.5 * fragFirst,
    },
    failures: {
      upserts: failures.filter((f) => f.what === "upsert").length,
      upserts_busy: failures.filter((f) => f.what === "upsert busy").length,
      searches: failures.filter((f) => f.what === "search").length,
      samples: failures.filter((f) => f.what.startsWith("sample")).length,
    },
    accounting: acct,
    server: {
      died_during_run: serverDied,
      exit_during_run: serverDied ? srv.state.exit : null,
      exit_at_stop: exit,
      warn_error_log_lines: warnLines.length,
      warn_error_log_lines_other_than_overloaded: otherWarn.length,
    },
  };

  // Report.
  let md = `| minute | upserts/s | upsert p50 ms | upsert p99 ms | search p50 ms | data MB (max) | live MB (end) | data/live (max) | fragments (max, small) | server RSS MB (anon) | refused 503 / failed |\n`;
  md += `|---|---|---|---|---|---|---|---|---|---|---|\n`;
  for (const [i, m] of minutes.entries()) {
    const label = m.to - m.from < 59.5 ? `${i + 1} (${f1(m.to - m.from)} s)` : `${i + 1}`;
    md += `| ${label} | ${f1(m.upserts_per_s)} | ${f2(m.p50_ms)} | ${f2(m.p99_ms)} | ${f2(m.search_p50_ms)} | ${f1(m.size_mb_max)} | ${f1(m.live_mb_last)} | ${f2(m.ratio_max)} | ${m.fragments_max}, ${m.small_fragments_max} | ${f1(m.server_rss_mb_max)} (${f1(m.server_rss_anon_mb_max)}) | ${m.busy} / ${m.failed} |\n`;
  }
  md += `\nServer-side upsert phases, p99 per minute (upper bucket bounds, ms; ${PHASES.join(" / ")}): ${minutes
    .map((m) => PHASES.map((ph) => fmtBound(m.phase_p99_ms[ph])).join(" / "))
    .join("; ")}\n`;
  const fm = finalMetrics ?? samples.at(-1)?.metrics ?? {};
  const v = verdicts;
  const pf = (b) => (b ? "PASS" : "FAIL");
  const lines = [
    `- size: max data/live after the first retention period and the next cleanup (t >= ${v.size.from_s} s, ${v.size.samples} samples) ${f2(v.size.max_ratio)} at ${v.size.at_s} s: ${pf(v.size.pass)} (target <= 2)`,
    `- latency: upsert p50 ${f2(lat.first.p50)} -> ${f2(lat.last.p50)} ms (x${f2(lat.p50_ratio)}), p99 ${f2(lat.first.p99)} -> ${f2(lat.last.p99)} ms (x${f2(lat.p99_ratio)}), first minute vs last 60 s: ${pf(v.latency.pass)} (target <= 1.2x)`,
    `- fragments: max ${fragMax}; per GB of live data max ${f1(fragFirst)} in the first half (after minute 1), ${f1(fragLast)} in the last minute: ${pf(v.fragments.pass)} (target: last minute <= 1.5x first half)`,
    `- failed calls: ${v.failures.upserts_busy} upserts refused as overloaded (503 busy; the writer waits 1 s), ${v.failures.upserts} other upsert failures, ${v.failures.searches} searches, ${v.failures.samples} sample reads; ${shortSearches.length} searches returned fewer than 10 rows`,
    `- accounting: ${acct.acked_upserts} acknowledged upserts; countRows ${acct.count_rows ?? "n/a"} (after flushLsm ${acct.count_rows_after_flush ?? "n/a"}) vs distinct ids written ${acct.expected_rows ?? "n/a"} (seed + acknowledged inserts + ${acct.failed_upserts_landed_rows ?? 0} rows of the ${acct.failed_upserts} failed upserts, found by id); ${acct.count_mismatch_total} upserts with counts other than ${HALF}/${HALF}: ${acct.ok ? "OK" : `OFF${acct.error ? ` (${acct.error})` : ""}`}`,
    `- server: ${serverDied ? `DIED during the run (${JSON.stringify(srv.state.exit)})` : "alive for the whole run"}; exit at stop ${JSON.stringify(exit)}; ${warnLines.length} WARN/ERROR log lines (${warnLines.length - otherWarn.length} of them 503 overloaded refusals)`,
    `- /metrics at the end: cleanups ${fm.cleanups_total}, versions removed ${fm.cleanup_versions_removed_total}, bytes removed ${f1(fm.cleanup_bytes_removed_total / MB)} MB, cleanup failures ${fm.cleanup_failures_total}; compactions ${fm.compactions_total}, fragments compacted ${fm.fragments_compacted_total}, compaction failures ${fm.compaction_failures_total}; flushes ${fm.flushes_total}, flush failures ${fm.flush_failures_total}, tables poisoned ${fm.tables_poisoned}`,
    ...(INDEX === "none"
      ? []
      : [
          `- index (${INDEX}): rows not yet indexed, max per minute: ${minutes.map((m) => m.unindexed_max).join(", ")} (the server folds new rows in when idle; a search covers them exactly)`,
        ]),
    `- live MB = countRows x ${f1(bytesPerRow)} B (${cfg.bytes_per_row_method}; Arrow IPC ${f1(ipcBytesPerRow)} B); fragments from table.stats().fragmentStats.numFragments; data = every file under the server's --data folder (table + WAL)`,
  ];
  md += `\n${lines.join("\n")}\n\nMachine: ${cfg.machine}, ${cfg.started}\n`;
  console.log(`\n${md}`);
  for (const l of otherWarn.slice(0, 5)) console.log(`  server log: ${l.slice(0, 240)}`);

  const resultsDir = new URL("results/", import.meta.url).pathname;
  fs.mkdirSync(resultsDir, { recursive: true });
  const result = {
    config: cfg,
    run_s: runSecs,
    elapsed_s: elapsed,
    verdicts,
    minutes,
    buckets_10s: tens,
    samples,
    failures,
    short_searches: shortSearches,
    final_metrics: finalMetrics,
    server_warn_error_lines: [...otherWarn.slice(0, 40), ...warnLines.filter((l) => /overloaded/.test(l)).slice(0, 10)],
    upserts: upserts.map(([t, ms]) => [+t.toFixed(3), +ms.toFixed(3)]),
    searches: searches.map(([t, ms]) => [+t.toFixed(3), +ms.toFixed(3)]),
    markdown: md,
  };
  fs.writeFileSync(path.join(resultsDir, "soak.json"), JSON.stringify(result, null, 1));
  fs.writeFileSync(path.join(resultsDir, "soak.svg"), soakSvg(result));
  console.log(`wrote ${path.join(resultsDir, "soak.json")} and soak.svg`);
  return serverDied || !acct.ok ? 1 : 0;
}

function f1(x) {
  return Number.isFinite(x) ? x.toFixed(1) : "n/a";
}
function f2(x) {
  return Number.isFinite(x) ? x.toFixed(2) : "n/a";
}

async function redrawSvg(file) {
  const dir = new URL("results/", import.meta.url).pathname;
  const r = JSON.parse(fs.readFileSync(file ?? path.join(dir, "soak.json"), "utf8"));
  fs.writeFileSync(path.join(dir, "soak.svg"), soakSvg(r));
  console.log(`wrote ${path.join(dir, "soak.svg")}`);
  return 0;
}

/** 1, 2 or 5 x 10^k, about max / n. */
function niceStep(max, n = 5) {
  const raw = Math.max(max / n, 1e-9);
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw);
}

/**
 * Two stacked panels over the run: (a) the data folder's size and the live rows' size (MB; 2x live dashed, the
 * first retention period marked), (b) upsert p50 / p99 per 10 s and search p50 per 10 s (ms, log scale).
 */
function soakSvg(r) {
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const W = 900,
    L = 75,
    R = 20,
    PH = 260,
    top = 66,
    gap = 80;
  const T = r.elapsed_s;
  const x = (s) => L + (Math.min(T, Math.max(0, s)) / T) * (W - L - R);
  const H = top + 2 * PH + gap + 50;
  const c = r.config;
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">\n`;
  svg += `<rect width="${W}" height="${H}" fill="white"/>\n`;
  svg += `<text x="${L}" y="18" font-size="14">${esc(`Soak J: ${c.clients} clients x ${c.batch_rows}-row memWal upserts (half updates), ${f1(T)} s, retention ${c.retention_secs} s, cleanup every ${c.cleanup_every_secs} s`)}</text>\n`;
  svg += `<text x="${L}" y="34" fill="#555">${esc(`${c.machine}; ${c.started}`)}</text>\n`;
  const xStep = niceStep(T, 8);
  const xAxis = (y0) => {
    let s = `<line x1="${L}" y1="${y0 + PH}" x2="${W - R}" y2="${y0 + PH}" stroke="#333"/>`;
    for (let t = 0; t <= T + 1e-9; t += xStep) {
      s += `<line x1="${x(t)}" y1="${y0}" x2="${x(t)}" y2="${y0 + PH}" stroke="#eee"/><text x="${x(t)}" y="${y0 + PH + 14}" text-anchor="middle">${t}</text>`;
    }
    s += `<text x="${(L + W - R) / 2}" y="${y0 + PH + 30}" text-anchor="middle">time since the stream started (s)</text>\n`;
    return s;
  };
  const yLabel = (y0, text) => `<text transform="translate(16,${y0 + PH / 2}) rotate(-90)" text-anchor="middle">${esc(text)}</text>\n`;
  const line = (pts, color, extra = "", width = 1.8) => {
    const p = pts.filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b));
    return p.length
      ? `<polyline fill="none" stroke="${color}" stroke-width="${width}" ${extra} points="${p.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(" ")}"/>\n`
      : "";
  };
  const dots = (pts, color) =>
    `${pts
      .filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b))
      .map(([a, b]) => `<circle cx="${a.toFixed(1)}" cy="${b.toFixed(1)}" r="2" fill="${color}"/>`)
      .join("")}\n`;
  const legend = (y0, items) => {
    let s = `<rect x="${L + 8}" y="${y0 + 6}" width="${items.reduce((a, [t]) => Math.max(a, t.length), 0) * 6.2 + 40}" height="${items.length * 15 + 6}" fill="white" fill-opacity="0.85" stroke="#ccc"/>`;
    items.forEach(([t, color, dash], i) => {
      const y = y0 + 18 + i * 15;
      s += `<line x1="${L + 14}" y1="${y - 4}" x2="${L + 34}" y2="${y - 4}" stroke="${color}" stroke-width="2" ${dash ? `stroke-dasharray="${dash}"` : ""}/><text x="${L + 40}" y="${y}">${esc(t)}</text>`;
    });
    return `${s}\n`;
  };

  // (a) sizes.
  const ya = top;
  const ss = r.samples.filter((s) => s.size_bytes !== null);
  const maxMb = Math.max(
    1,
    ...ss.map((s) => s.size_bytes / MB),
    ...ss.filter((s) => s.live_bytes !== null).map((s) => (2 * s.live_bytes) / MB),
  );
  const yStep = niceStep(maxMb, 5);
  const yMax = Math.ceil(maxMb / yStep) * yStep;
  const ymb = (mb) => ya + PH - (mb / yMax) * PH;
  svg += `<text x="${L}" y="${ya - 6}" font-size="12">(a) data folder vs live rows</text>\n`;
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    svg += `<line x1="${L}" y1="${ymb(v)}" x2="${W - R}" y2="${ymb(v)}" stroke="#eee"/><text x="${L - 6}" y="${ymb(v) + 4}" text-anchor="end">${+v.toFixed(6)}</text>`;
  }
  svg += xAxis(ya) + yLabel(ya, "MB");
  svg += `<line x1="${x(c.retention_secs)}" y1="${ya}" x2="${x(c.retention_secs)}" y2="${ya + PH}" stroke="#999" stroke-dasharray="2 3"/><text x="${x(c.retention_secs) + 4}" y="${ya + PH - 6}" fill="#777">retention</text>\n`;
  const live = ss.filter((s) => s.live_bytes !== null);
  svg += line(
    live.map((s) => [x(s.t), ymb((2 * s.live_bytes) / MB)]),
    "#999",
    `stroke-dasharray="6 4"`,
    1,
  );
  svg += line(
    live.map((s) => [x(s.t), ymb(s.live_bytes / MB)]),
    "#2ca02c",
  );
  svg += line(
    ss.map((s) => [x(s.t), ymb(s.size_bytes / MB)]),
    "#1f77b4",
  );
  svg += legend(ya, [
    ["data folder (table + WAL)", "#1f77b4"],
    [`live rows x ${f1(c.bytes_per_row)} B`, "#2ca02c"],
    ["2x live (target ceiling)", "#999", "6 4"],
  ]);

  // (b) latency, log scale.
  const yb = top + PH + gap;
  const b = r.buckets_10s;
  const vals = b.flatMap((k) => [k.p50_ms, k.p99_ms, k.search_p50_ms]).filter((v) => Number.isFinite(v) && v > 0);
  const lo = 10 ** Math.floor(Math.log10(Math.min(...vals, 1)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...vals, 10)));
  const yms = (ms) => yb + PH - ((Math.log10(Math.max(lo, ms)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * PH;
  svg += `<text x="${L}" y="${yb - 6}" font-size="12">(b) latency per 10 s (log scale)</text>\n`;
  for (let d = lo; d <= hi * 1.0001; d *= 10) {
    for (const m of [1, 2, 5]) {
      const v = d * m;
      if (v > hi * 1.0001) break;
      svg += `<line x1="${L}" y1="${yms(v)}" x2="${W - R}" y2="${yms(v)}" stroke="${m === 1 ? "#ddd" : "#f3f3f3"}"/><text x="${L - 6}" y="${yms(v) + 4}" text-anchor="end">${+v.toPrecision(3)}</text>`;
    }
  }
  svg += xAxis(yb) + yLabel(yb, "ms");
  const mid = (k) => x((k.from + k.to) / 2);
  for (const [f, color] of [
    ["p99_ms", "#d62728"],
    ["p50_ms", "#1f77b4"],
    ["search_p50_ms", "#2ca02c"],
  ]) {
    const pts = b.filter((k) => Number.isFinite(k[f])).map((k) => [mid(k), yms(k[f])]);
    svg += line(pts, color) + dots(pts, color);
  }
  svg += legend(yb, [
    ["upsert p99", "#d62728"],
    ["upsert p50", "#1f77b4"],
    ["search p50 (top-10, flat)", "#2ca02c"],
  ]);
  return `${svg}</svg>\n`;
}

// `node soak.mjs --svg [results/soak.json]`: only redraws results/soak.svg from a run's JSON.
const redraw = process.argv[2] === "--svg";
(redraw ? redrawSvg(process.argv[3]) : main()).then(
  (code) => process.exit(code),
  (e) => {
    console.error(`soak failed: ${e?.stack ?? e}`);
    process.exit(1);
  },
);
