// A seat's secrets, kept in this browser only (IndexedDB): its Ed25519 key pair, made by
// WebCrypto with a private half that cannot be exported (the server, and this page's own
// scripts, never see it), its client seed (drawn here, committed on the ticket, revealed to
// the engine once the dice commitment is published), and the engine's receipts for its moves.

import type { StoredReceipt } from "./audit/evidence";
import { hex } from "./audit/bytes";

export interface Seat {
  ticketId: string;
  gameId: string; // "" until assigned
  seat: number;
  playerToken: string;
  privateKey: CryptoKey | null; // null once the game is over: the key is dropped
  publicKey: string; // hex of the raw 32-byte public key
  clientSeed: string;
  revealed: boolean;
  receipts: StoredReceipt[];
}

const DB = "boulevard";
const STORE = "seats";

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: "ticketId" });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function tx<T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await open();
  return new Promise((resolve, reject) => {
    const req = f(db.transaction(STORE, mode).objectStore(STORE));
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

// Saves run one after another, in the order they were asked for: each stores the seat as
// it is then, so a late one (a receipt) never brings back what an earlier one removed.
let saving: Promise<unknown> = Promise.resolve();

export function saveSeat(seat: Seat): Promise<IDBValidKey> {
  const next = saving.then(() => tx("readwrite", (s) => s.put(seat)));
  saving = next.catch(() => undefined);
  return next;
}

export async function allSeats(): Promise<Seat[]> {
  return tx("readonly", (s) => s.getAll() as IDBRequest<Seat[]>);
}

export async function seatFor(gameId: string): Promise<Seat | undefined> {
  return (await allSeats()).find((s) => s.gameId === gameId);
}

/** Forget a finished game's key: it signs nothing more (its receipts stay for the audit). */
export async function retireKey(seat: Seat): Promise<void> {
  // In place: the page's other saves of this seat (a late receipt) must not bring it back.
  seat.privateKey = null;
  await saveSeat(seat);
}

/** A fresh seat for a ticket: a non-extractable Ed25519 key and 128 random bits of seed. */
export async function newSeat(): Promise<Seat> {
  const keys = (await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"])) as CryptoKeyPair;
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", keys.publicKey));
  const seed = hex(crypto.getRandomValues(new Uint8Array(16)));
  return { ticketId: "", gameId: "", seat: 0, playerToken: "", privateKey: keys.privateKey, publicKey: hex(raw), clientSeed: seed, revealed: false, receipts: [] };
}

export async function sign(seat: Seat, message: Uint8Array): Promise<Uint8Array> {
  if (seat.privateKey === null) throw new Error("this seat's key was dropped when its game ended");
  return new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, seat.privateKey, message.slice().buffer as ArrayBuffer));
}
