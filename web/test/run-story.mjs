// node build/story.mjs CASES.json: the page's story lines (src/story.ts) for each case, a
// game's envelopes in order ({"game": …, "envelopes": [base64, …]}); prints one JSON array
// of arrays of lines, for tests/browser/test_story.py to compare with the terminal's.
import { readFileSync } from "node:fs";
import { fromBinary } from "@bufbuild/protobuf";
import { EventEnvelopeSchema } from "../src/gen/boulevard/v1/events_pb";
import { namesOf, storyLine } from "../src/story";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = cases.map(({ game, envelopes }) => {
  let names = [];
  return envelopes.map((b64) => {
    const env = fromBinary(EventEnvelopeSchema, Buffer.from(b64, "base64"));
    if (env.type === "GameCreated") names = namesOf(env);
    return storyLine(game, env, names);
  });
});
console.log(JSON.stringify(out));
