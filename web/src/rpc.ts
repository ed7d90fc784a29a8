// The platform's four services over Connect, from the page's own origin (the gateway serves
// the app and the APIs together: docs/clients.md, "From a browser"), with the player's
// bearer token on every call.

import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { DiceService } from "./gen/boulevard/v1/dice_pb";
import { EngineService } from "./gen/boulevard/v1/engine_pb";
import { LedgerService } from "./gen/boulevard/v1/ledger_pb";
import { MatchmakingService } from "./gen/boulevard/v1/matchmaking_pb";

// Kept for the tab only (sessionStorage): a bearer token does not outlive the tab on disk.
const TOKEN_KEY = "boulevard.token";

/** The bearer JWT this browser logged in with ("" when none). */
export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(jwt: string): void {
  if (jwt) sessionStorage.setItem(TOKEN_KEY, jwt);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** The player the token names (its `sub`), read without verifying: the services verify it;
 * the page only shows it. */
export function playerOf(jwt: string): string {
  try {
    const body = jwt.split(".")[1] ?? "";
    const json = atob(body.replace(/-/g, "+").replace(/_/g, "/"));
    const sub = (JSON.parse(json) as { sub?: unknown }).sub;
    return typeof sub === "string" ? sub : "";
  } catch {
    return "";
  }
}

const auth: Interceptor = (next) => async (req) => {
  const jwt = token();
  if (jwt) req.header.set("authorization", `Bearer ${jwt}`);
  return next(req);
};

const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  interceptors: [auth],
});

export const matchmaking: Client<typeof MatchmakingService> = createClient(MatchmakingService, transport);
export const engine: Client<typeof EngineService> = createClient(EngineService, transport);
export const dice: Client<typeof DiceService> = createClient(DiceService, transport);
export const ledger: Client<typeof LedgerService> = createClient(LedgerService, transport);
