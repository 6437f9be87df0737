/**
 * `connectNamespace`, as @lancedb/lancedb 0.39 names it: a connection through a namespace implementation. memwal
 * has 0.39's `dir` implementation (a folder, its tables and its child namespaces: the layout `connect(folder)`
 * reads); the others (`rest`, custom ones) are refused by name.
 */
import { type Connection, type ConnectionOptions, connect } from "./connection";
import { call, invalid, notSupported } from "./errors";

/** The `dir` implementation's properties, as 0.39 takes them. */
export interface DirNamespaceProperties {
  /** The folder (required). */
  root?: string;
  /** Whether child namespaces may be made (default true). */
  manifestEnabled?: boolean;
  /** Backend properties as strings (`root`, `manifest_enabled`); the typed fields above override them. */
  extraProperties?: Record<string, string>;
  /** Backend properties given at the top level (`manifest_enabled: "false"`), read like `extraProperties`. */
  [key: string]: unknown;
}

/** The backend properties the `dir` implementation reads. */
const DIR_KEYS = ["root", "manifest_enabled"];

/**
 * Connects through namespace implementation `implName` with its `properties`; `options` as {@link connect}'s.
 * `"dir"`: `{ root, manifestEnabled?, extraProperties? }` opens the folder `root` (any other backend property is
 * refused by name rather than ignored).
 */
export async function connectNamespace(
  implName: string,
  properties: DirNamespaceProperties,
  options?: ConnectionOptions,
): Promise<Connection> {
  const { root, manifest } = await call(async () => dirProperties(implName, properties));
  const conn = await connect(root, options);
  conn.childNamespaces = manifest;
  return conn;
}

/** The folder and the manifest flag of a `dir` namespace's properties (checked). */
function dirProperties(implName: unknown, properties: DirNamespaceProperties): { root: string; manifest: boolean } {
  if (typeof implName !== "string" || implName.length === 0) throw invalid("implName must be a non-empty string");
  if (implName !== "dir")
    throw notSupported(`connectNamespace: the namespace implementation '${implName}' is not supported by memwal (only "dir")`);
  if (typeof properties !== "object" || properties === null)
    throw invalid("connectNamespace(properties) must be an object of the implementation's properties");
  const { root, manifestEnabled, extraProperties, ...rest } = properties;
  const backend: Record<string, unknown> = { ...(extraProperties ?? {}), ...rest };
  for (const [k, v] of Object.entries(backend)) {
    if (!DIR_KEYS.includes(k))
      throw notSupported(`connectNamespace("dir"): the property '${k}' is not supported by memwal (known: ${DIR_KEYS.join(", ")})`);
    if (typeof v !== "string") throw invalid(`connectNamespace("dir"): the property '${k}' must be a string, got ${String(v)}`);
  }
  const folder = root ?? backend.root;
  if (typeof folder !== "string" || folder.length === 0)
    throw invalid('connectNamespace("dir") needs a root: the folder of the namespace, as a non-empty string');
  if (manifestEnabled !== undefined && typeof manifestEnabled !== "boolean")
    throw invalid(`connectNamespace("dir"): manifestEnabled must be a boolean, got ${String(manifestEnabled)}`);
  const text = backend.manifest_enabled;
  if (text !== undefined && text !== "true" && text !== "false")
    throw invalid(`connectNamespace("dir"): manifest_enabled must be "true" or "false", got ${String(text)}`);
  return { root: folder, manifest: manifestEnabled ?? (text === undefined ? true : text === "true") };
}
