// Canonical JSON as the platform writes it (docs/ledger.md, "Canonical bytes"): keys sorted,
// no whitespace, UTF-8 with JSON's minimal escapes — Python's
// json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False).

import { utf8 } from "./bytes";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function canonicalJson(value: Json): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isSafeInteger(value)) {
      throw new Error(`${value} has no canonical encoding (integers within ±(2**53 − 1) only)`);
    }
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k] as Json)}`).join(",")}}`;
}

export function canonicalBytes(value: Json): Uint8Array {
  return utf8(canonicalJson(value));
}

/** Parse `bytes` as JSON and require that they are exactly its canonical encoding (the
 * platform refuses any other spelling of a record, so every reader sees the same one). */
export function parseCanonical(bytes: Uint8Array): Json | undefined {
  let text: string;
  let value: Json;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text) as Json;
  } catch {
    return undefined;
  }
  try {
    return canonicalJson(value) === text ? value : undefined;
  } catch {
    return undefined;
  }
}
