/**
 * `serve()`: runs the bundled memwal server (the LanceDB REST protocol with
 * the MemWAL write path) in this process, on loopback by default.
 */
import { call, MemwalError } from "./errors";
import { native } from "./native";

export interface ServeOptions {
  /** Folder holding the tables and their WALs. */
  dataDir: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
  /** Required API key (any key is accepted when omitted). */
  apiKey?: string;
  /** Largest request body in bytes (default 256 MiB). */
  maxBodyBytes?: number;
  /** Memtable rows that trigger a flush into the base table. */
  flushRows?: number;
  /** Longest a memtable waits before it is flushed, ms. */
  flushIntervalMs?: number;
}

export interface Server {
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  port: number;
  /** Flushes nothing further, stops accepting and returns once closed (the WAL keeps every acknowledged write). */
  close(): Promise<void>;
}

export async function serve(options: ServeOptions): Promise<Server> {
  const serveFn = native.serve;
  if (!serveFn) throw new MemwalError("NotSupported", "this build of the addon has no server");
  const s = await call(() => serveFn(options));
  return { url: s.url, port: s.port, close: () => call(() => s.close()) };
}
