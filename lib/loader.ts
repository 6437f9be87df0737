/**
 * Finds and loads the native addon for the running platform, doing what the loader `napi build --js`
 * generates does: an explicit path from `NAPI_RS_NATIVE_LIBRARY_PATH`, then a binary next to the package
 * (`memwal.<platform>.node`, what a local build writes), then the platform package npm installed as an
 * optional dependency (`memwal-<platform>`). Linux tells glibc from musl. When nothing loads, the error names
 * the platform, the package to install and why each candidate failed, never "build it yourself".
 */

import * as fs from "node:fs";
import * as path from "node:path";

/** Every platform a release publishes a package for (`napi.targets` in package.json, as napi names them). */
export const PLATFORMS: readonly string[] = [
  "linux-x64-gnu",
  "linux-arm64-gnu",
  "linux-x64-musl",
  "linux-arm64-musl",
  "darwin-x64",
  "darwin-arm64",
  "win32-x64-msvc",
];

/** What detectMusl reads: Node's diagnostic report header, and /usr/bin/ldd's text when there is none. */
export interface LibcProbe {
  platform?: string;
  report?: () => { header?: { glibcVersionRuntime?: string } };
  ldd?: () => string;
}

/** True on a musl libc (Alpine): Node's own report has no glibc version there. */
export function detectMusl(probe: LibcProbe = {}): boolean {
  if ((probe.platform ?? process.platform) !== "linux") return false;
  const report = probe.report ?? (() => (process.report?.getReport?.() ?? {}) as { header?: { glibcVersionRuntime?: string } });
  const header = report().header;
  if (header !== undefined) return !header.glibcVersionRuntime;
  try {
    return (probe.ldd ?? (() => fs.readFileSync("/usr/bin/ldd", "utf8")))().includes("musl");
  } catch {
    return false;
  }
}

/** napi's name of a platform (`linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`). */
export function platformKey(platform: string, arch: string, musl: boolean): string {
  if (platform === "linux") return `linux-${arch}-${musl ? "musl" : "gnu"}`;
  if (platform === "win32") return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** The npm package holding a platform's binary. */
export function packageName(key: string): string {
  return `memwal-${key}`;
}

/** The binary's file name, in the platform package and in a local build. */
export function binaryName(key: string): string {
  return `memwal.${key}.node`;
}

/** Where and for what the loader looks; every field defaults to the running process. */
export interface LoadOptions {
  /** The package root (holds package.json and a local build's binary). */
  root: string;
  platform?: string;
  arch?: string;
  musl?: boolean;
  env?: Record<string, string | undefined>;
  /** How a candidate is loaded (`require`); a test passes its own. */
  load?: (id: string) => unknown;
}

/** The environment variables of this process (a function so a bundler does not inline them). */
export function processEnv(): Record<string, string | undefined> {
  return process.env;
}

/** Loads the addon, or throws an error naming the platform, the package to install and each failure. */
export function loadAddon<T>(options: LoadOptions): T {
  const platform = options.platform ?? process.platform;
  const arch = options.arch ?? process.arch;
  const key = platformKey(platform, arch, options.musl ?? detectMusl());
  const env = options.env ?? processEnv();
  const load = options.load ?? ((id: string) => require(id));
  const candidates: string[] = [];
  const explicit = env.NAPI_RS_NATIVE_LIBRARY_PATH;
  if (explicit) candidates.push(path.resolve(explicit));
  else {
    const local = path.join(options.root, binaryName(key));
    if (fs.existsSync(local)) candidates.push(local);
    candidates.push(packageName(key));
  }
  const failures: string[] = [];
  for (const id of candidates) {
    try {
      return load(id) as T;
    } catch (e) {
      failures.push(`${id}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
    }
  }
  throw new Error(loadFailure(key, explicit, failures));
}

function loadFailure(key: string, explicit: string | undefined, failures: string[]): string {
  const tried = failures.map((f) => `\n  - ${f}`).join("");
  if (explicit) return `memwal: NAPI_RS_NATIVE_LIBRARY_PATH=${explicit} could not be loaded on ${key}:${tried}`;
  if (!PLATFORMS.includes(key)) {
    return `memwal: no prebuilt binary for ${key} (published for ${PLATFORMS.join(", ")}); build from source with \`npm run build\` in a checkout, or point NAPI_RS_NATIVE_LIBRARY_PATH at a binary:${tried}`;
  }
  return (
    `memwal: the native binary for ${key} is missing: install the package ${packageName(key)} ` +
    "(npm installs it as an optional dependency; installing with --omit=optional or --no-optional, or from a lock file " +
    `written on another platform, leaves it out; \`npm install ${packageName(key)}\` adds it):${tried}`
  );
}
