// Refuses to pack a package that would not work: the compiled JS and its types must exist and be newer
// than every source file in lib/, and the host's native binary must exist (a local build at the root, or
// the platform package's copy that `napi artifacts` placed under npm/).
const fs = require("node:fs");
const path = require("node:path");

const root = path.join(__dirname, "..");
const problems = [];

function sources(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

for (const src of sources(path.join(root, "lib"))) {
  const rel = path.relative(root, src).replace(/\.ts$/, "");
  for (const ext of [".js", ".d.ts"]) {
    const out = path.join(root, "dist", rel + ext);
    if (!fs.existsSync(out)) problems.push(`missing ${path.relative(root, out)} (run \`npm run build\`)`);
    else if (fs.statSync(out).mtimeMs < fs.statSync(src).mtimeMs) {
      problems.push(`${path.relative(root, out)} is older than ${path.relative(root, src)} (run \`npm run build\`)`);
    }
  }
}

const loader = path.join(root, "dist", "lib", "loader.js");
if (fs.existsSync(loader)) {
  const { platformKey, binaryName, detectMusl } = require(loader);
  const key = platformKey(process.platform, process.arch, detectMusl());
  const candidates = [path.join(root, binaryName(key)), path.join(root, "npm", key, binaryName(key))];
  if (!candidates.some((p) => fs.existsSync(p))) {
    problems.push(`no native binary for ${key} (looked for ${candidates.map((p) => path.relative(root, p)).join(", ")})`);
  }
}

if (problems.length > 0) {
  console.error(`memwal prepack: refusing to pack:\n  - ${problems.join("\n  - ")}`);
  process.exit(1);
}
