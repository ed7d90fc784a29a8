// node build/vectors.mjs DOCS_DIR: check the TypeScript verifier against the vectors;
// prints one JSON line {checked, failures} and exits 1 on any failure.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { checkVectors } from "./vectors";

const docs = process.argv[2];
const read = (name) => JSON.parse(readFileSync(join(docs, name), "utf8"));
const report = await checkVectors(read("auditing-vectors.json"), read("fairness-vectors.json"));
console.log(JSON.stringify(report));
process.exit(report.failures.length === 0 && report.checked > 0 ? 0 : 1);
