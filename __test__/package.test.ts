/**
 * The package as npm ships it: the loader's choice among a NAPI_RS_NATIVE_LIBRARY_PATH binary, a local build
 * and the platform package (and its error naming the package to install), musl detection, and package.json's
 * promises (every exports target is built, one npm/ package per napi target with the right os/cpu/libc).
 * scripts/pack-test.sh installs the real tarballs into a fresh project; this checks the parts it cannot vary.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { binaryName, detectMusl, loadAddon, PLATFORMS, packageName, platformKey } from "../lib/loader";

const root = path.join(__dirname, "..");
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));

function recorder(loadable: string[]) {
  const tried: string[] = [];
  const load = (id: string) => {
    tried.push(id);
    if (loadable.includes(id)) return { id };
    throw new Error(`Cannot find module '${id}'\nRequire stack: ...`);
  };
  return { tried, load };
}

describe("the native loader", () => {
  test("names platforms as napi does", () => {
    expect(platformKey("linux", "x64", false)).toBe("linux-x64-gnu");
    expect(platformKey("linux", "arm64", true)).toBe("linux-arm64-musl");
    expect(platformKey("darwin", "arm64", false)).toBe("darwin-arm64");
    expect(platformKey("win32", "x64", false)).toBe("win32-x64-msvc");
    expect(packageName("linux-x64-gnu")).toBe("memwal-linux-x64-gnu");
    expect(binaryName("darwin-x64")).toBe("memwal.darwin-x64.node");
  });

  test("detects this machine's libc from Node's report", () => {
    const glibc = (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime;
    expect(detectMusl()).toBe(process.platform === "linux" && !glibc);
  });

  test("tells musl from glibc by the report, then by ldd, and is never musl off Linux", () => {
    const report = (glibcVersionRuntime?: string) => () => ({ header: { glibcVersionRuntime } });
    expect(detectMusl({ platform: "linux", report: report("2.36") })).toBe(false);
    expect(detectMusl({ platform: "linux", report: report(undefined) })).toBe(true);
    const noHeader = () => ({});
    expect(detectMusl({ platform: "linux", report: noHeader, ldd: () => "#!/bin/sh\n# musl libc (x86_64)" })).toBe(true);
    expect(detectMusl({ platform: "linux", report: noHeader, ldd: () => "GNU C Library" })).toBe(false);
    const unreadable = () => {
      throw new Error("ENOENT");
    };
    expect(detectMusl({ platform: "linux", report: noHeader, ldd: unreadable })).toBe(false);
    expect(detectMusl({ platform: "darwin", report: report(undefined) })).toBe(false);
  });

  test("prefers a local build, then the platform package", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "memwal-loader-"));
    const local = path.join(dir, "memwal.linux-arm64-gnu.node");
    fs.writeFileSync(local, "");
    const r = recorder([local]);
    expect(loadAddon({ root: dir, platform: "linux", arch: "arm64", musl: false, env: {}, load: r.load })).toEqual({ id: local });
    const p = recorder(["memwal-linux-arm64-gnu"]);
    expect(loadAddon({ root: dir, platform: "linux", arch: "arm64", musl: false, env: {}, load: p.load })).toEqual({
      id: "memwal-linux-arm64-gnu",
    });
    expect(p.tried).toEqual([local, "memwal-linux-arm64-gnu"]);
    fs.rmSync(dir, { recursive: true });
  });

  test("NAPI_RS_NATIVE_LIBRARY_PATH wins and is the only candidate", () => {
    const r = recorder([]);
    const env = { NAPI_RS_NATIVE_LIBRARY_PATH: "/opt/x/memwal.node" };
    expect(() => loadAddon({ root, platform: "linux", arch: "x64", musl: false, env, load: r.load })).toThrow(
      /NAPI_RS_NATIVE_LIBRARY_PATH=\/opt\/x\/memwal.node could not be loaded on linux-x64-gnu/,
    );
    expect(r.tried).toEqual(["/opt/x/memwal.node"]);
  });

  test("a missing platform package is named, with why each candidate failed", () => {
    const r = recorder([]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "memwal-loader-"));
    expect(() => loadAddon({ root: dir, platform: "linux", arch: "x64", musl: true, env: {}, load: r.load })).toThrow(
      /install the package memwal-linux-x64-musl[\s\S]*memwal-linux-x64-musl: Cannot find module/,
    );
    fs.rmSync(dir, { recursive: true });
  });

  test("an unsupported platform says which are published", () => {
    const r = recorder([]);
    expect(() => loadAddon({ root: os.tmpdir(), platform: "freebsd", arch: "x64", env: {}, load: r.load })).toThrow(
      /no prebuilt binary for freebsd-x64 \(published for linux-x64-gnu, /,
    );
  });
});

describe("package.json", () => {
  test("every exports target exists after a build, types first", () => {
    for (const [subpath, target] of Object.entries(pkg.exports as Record<string, string | Record<string, string>>)) {
      const files = typeof target === "string" ? [target] : Object.values(target);
      if (typeof target !== "string") expect(Object.keys(target)[0]).toBe("types");
      for (const f of files) expect([subpath, fs.existsSync(path.join(root, f))]).toEqual([subpath, true]);
    }
  });

  test("node10 stubs point at the same files as the exports map", () => {
    for (const sub of ["arrow", "embedding"]) {
      const stub = JSON.parse(fs.readFileSync(path.join(root, sub, "package.json"), "utf8"));
      expect(path.join(sub, stub.main)).toBe(path.normalize(pkg.exports[`./${sub}`].default));
      expect(path.join(sub, stub.types)).toBe(path.normalize(pkg.exports[`./${sub}`].types));
    }
  });

  test("one npm/ package per napi target, with os, cpu and libc", () => {
    expect(fs.readdirSync(path.join(root, "npm")).sort()).toEqual([...PLATFORMS].sort());
    expect(pkg.napi.targets).toHaveLength(PLATFORMS.length);
    for (const key of PLATFORMS) {
      const p = JSON.parse(fs.readFileSync(path.join(root, "npm", key, "package.json"), "utf8"));
      expect(p.name).toBe(packageName(key));
      expect(p.main).toBe(binaryName(key));
      expect(p.version).toBe(pkg.version);
      const [platform, arch, abi] = key.split("-");
      expect([p.os, p.cpu]).toEqual([[platform], [arch]]);
      if (platform === "linux") expect(p.libc).toEqual([abi === "musl" ? "musl" : "glibc"]);
    }
  });
});
