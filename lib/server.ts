/**
 * `serve()`: runs the bundled memwal server (the LanceDB REST protocol with
 * the MemWAL write path) in this process, on loopback by default.
 */
import { call, MemwalError } from "./errors";
import { type NativeServeOptions, native } from "./native";

/** How `serve()` runs the server: folder, address, key, limits, flush policy. */
export type ServeOptions = NativeServeOptions;

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
