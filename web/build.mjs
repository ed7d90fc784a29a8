// The web app's build: TypeScript from ../protos (buf + protoc-gen-es), a type check, and one
// esbuild bundle, written with index.html and app.css into the Python package
// (libs/boulevard/web/static/, committed so `make run` needs no Node.js).
//
//   node build.mjs [--out DIR] [--node-tests]
//
// The output depends only on the sources, the protos and the locked packages (no source
// maps, no timestamps, no absolute paths), so tests/browser/test_build.py can rebuild it in a
// temporary copy and require the same bytes. --node-tests also bundles, for node, the
// runners tests/browser/ uses: build/vectors.mjs (the TypeScript verifier against
// docs/*-vectors.json) and build/story.mjs (the page's story lines of given games).

import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const outAt = args.indexOf("--out");
const out = outAt >= 0 ? resolve(args[outAt + 1]) : resolve(here, "..", "libs", "boulevard", "web", "static");
const bin = (name) => join(here, "node_modules", ".bin", name);
const run = (cmd, argv) => execFileSync(cmd, argv, { cwd: here, stdio: "inherit" });

rmSync(join(here, "src", "gen"), { recursive: true, force: true });
run(bin("buf"), ["generate", join(here, "..", "protos")]);
run(bin("tsc"), ["--noEmit", "-p", "."]);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await esbuild.build({
  absWorkingDir: here,
  entryPoints: ["src/main.ts"],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
copyFileSync(join(here, "src", "index.html"), join(out, "index.html"));
copyFileSync(join(here, "src", "app.css"), join(out, "app.css"));

if (args.includes("--node-tests")) {
  for (const [entry, outfile] of [["test/run-vectors.mjs", "vectors.mjs"], ["test/run-story.mjs", "story.mjs"]]) {
    await esbuild.build({
      absWorkingDir: here,
      entryPoints: [entry],
      outfile: join(here, "build", outfile),
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node18",
      logLevel: "warning",
    });
  }
}
console.log(`built ${out}`);
