// Words for people: a legal action as the label of its control. Generic over the four games
// (reflection over the generated descriptors), so every action the engine lists has a
// label, whatever it is. The events' words, the game's story, are src/story.ts.

import { createRegistry, toJson, type Message } from "@bufbuild/protobuf";
import type { Action } from "./gen/boulevard/v1/engine_pb";
import { file_boulevard_v1_engine } from "./gen/boulevard/v1/engine_pb";
import { file_boulevard_v1_las_vegas } from "./gen/boulevard/v1/las_vegas_pb";
import { file_boulevard_v1_long_shot } from "./gen/boulevard/v1/long_shot_pb";
import { file_boulevard_v1_lords_of_vegas } from "./gen/boulevard/v1/lords_of_vegas_pb";
import { file_boulevard_v1_vegas_showdown } from "./gen/boulevard/v1/vegas_showdown_pb";

const registry = createRegistry(
  file_boulevard_v1_engine,
  file_boulevard_v1_las_vegas,
  file_boulevard_v1_long_shot,
  file_boulevard_v1_lords_of_vegas,
  file_boulevard_v1_vegas_showdown,
);

/** "buildCasino" / "BuildCasino" / "build_casino" → "build casino". */
export function words(name: string): string {
  return name
    .replace(/_/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .trim();
}

function value(v: unknown): string {
  if (Array.isArray(v)) return v.length ? v.map(value).join(" ") : "none";
  if (v !== null && typeof v === "object") {
    return Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${words(k)} ${value(x)}`)
      .join(", ");
  }
  return String(v);
}

/** The command inside an Action: its name and its fields, for the label and for tests. */
export function command(action: Action): { name: string; fields: Record<string, unknown> } {
  const game = action.game;
  if (game.case === undefined) return { name: "nothing", fields: {} };
  const cmd = (game.value as unknown as { command: { case?: string; value?: Message } }).command;
  if (cmd.case === undefined || cmd.value === undefined) return { name: "nothing", fields: {} };
  const schema = registry.getMessage(cmd.value.$typeName);
  const json = (schema ? toJson(schema, cmd.value, { alwaysEmitImplicit: true }) : {}) as Record<string, unknown>;
  delete json.seat;
  return { name: cmd.case, fields: json };
}

/** A legal action as a button's label, e.g. "place dice: number 3". Enum values lose their
 * type prefix (LORDS_OF_VEGAS_COLOUR_GOLD → gold). */
export function actionLabel(action: Action): string {
  const { name, fields } = command(action);
  const rest = Object.entries(fields)
    .map(([k, v]) => `${words(k)} ${enumWords(value(v))}`)
    .join(", ");
  return rest ? `${words(name)}: ${rest}` : words(name);
}

function enumWords(s: string): string {
  return s.replace(/\b(?:LORDS_OF_VEGAS|LAS_VEGAS|VEGAS_SHOWDOWN|LONG_SHOT)_[A-Z]+?_(KIND_)?([A-Z_]+)\b/g, (_m, _k, v: string) => v.toLowerCase().replace(/_/g, " "));
}
