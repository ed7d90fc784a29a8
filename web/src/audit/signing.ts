// The signed and hashed statements of docs/auditing.md, byte for byte.

import { concat, lp, u32, u64, utf8 } from "./bytes";
import { sha256 } from "./crypto";

export const COMMAND_DOMAIN = "boulevard.game.command.v1";
export const RECEIPT_DOMAIN = "boulevard.game.receipt.v1";
export const RECEIPT_DOMAIN_V2 = "boulevard.game.receipt.v2"; // receipts that say when
export const CHAIN_DOMAIN = "boulevard.game.chain.v1";

/** What a seat signs for SubmitAction: lp(domain) ‖ lp(game_id) ‖ u32(seat) ‖
 * u64(expected_version) ‖ lp(idempotency_key) ‖ lp(action), where `action` is the Action
 * message's deterministic protobuf encoding. */
export function commandSigningBytes(
  gameId: string,
  seat: number,
  expectedVersion: bigint | number,
  idempotencyKey: string,
  action: Uint8Array,
): Uint8Array {
  return concat(
    lp(COMMAND_DOMAIN),
    lp(gameId),
    u32(seat),
    u64(expectedVersion),
    lp(idempotencyKey),
    lp(action),
  );
}

/** What the engine signs in a receipt: lp(domain) ‖ lp(game_id) ‖ u64(version) ‖ chain_head,
 * and from v2 on ‖ u64(time_unix_ms), the time of the envelope at `version`. A receipt
 * with time 0 is a v1 receipt (kept from before receipts were timed). */
export function receiptSigningBytes(
  gameId: string,
  version: bigint | number,
  chainHead: Uint8Array,
  timeUnixMs: bigint | number = 0,
): Uint8Array {
  if (BigInt(timeUnixMs) === 0n) return concat(lp(RECEIPT_DOMAIN), lp(gameId), u64(version), chainHead);
  return concat(lp(RECEIPT_DOMAIN_V2), lp(gameId), u64(version), chainHead, u64(timeUnixMs));
}

/** chain_hash(v) = SHA-256("boulevard.game.chain.v1" ‖ 0x00 ‖ stored_bytes(v)). */
export async function chainHash(stored: Uint8Array): Promise<Uint8Array> {
  return sha256(concat(utf8(CHAIN_DOMAIN), new Uint8Array([0]), stored));
}

/** A key's id: lowercase hex SHA-256 of its 32 raw bytes. */
export async function keyId(publicKey: Uint8Array): Promise<string> {
  const h = await sha256(publicKey);
  return Array.from(h, (x) => x.toString(16).padStart(2, "0")).join("");
}
