// RFC 6962 / RFC 9162 Merkle trees as the ledger and the dice log use them
// (docs/ledger.md, "Hashing" and "The Merkle tree"): leaf SHA-256(0x00 ‖ data), node
// SHA-256(0x01 ‖ left ‖ right), the empty tree SHA-256("").

import { concat, equal } from "./bytes";
import { sha256 } from "./crypto";

export class ProofError extends Error {}

export async function leafHash(data: Uint8Array): Promise<Uint8Array> {
  return sha256(concat(new Uint8Array([0]), data));
}

export async function nodeHash(left: Uint8Array, right: Uint8Array): Promise<Uint8Array> {
  return sha256(concat(new Uint8Array([1]), left, right));
}

/** MTH over the given leaf hashes (RFC 6962 §2.1), folding complete subtrees bottom-up so
 * a large journal costs n − 1 node hashes. */
export async function rootOf(leaves: readonly Uint8Array[]): Promise<Uint8Array> {
  if (leaves.length === 0) return sha256(new Uint8Array(0));
  // The split at the largest power of two below n keeps every left subtree complete, so
  // pairing adjacent nodes level by level, carrying an odd last node up unchanged, is MTH.
  let level = [...leaves];
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) {
      next.push(await nodeHash(level[i] as Uint8Array, level[i + 1] as Uint8Array));
    }
    if (level.length % 2 === 1) next.push(level[level.length - 1] as Uint8Array);
    level = next;
  }
  return level[0] as Uint8Array;
}

function checkHash(h: Uint8Array): void {
  if (h.length !== 32) throw new ProofError("a proof node is not a 32-byte hash");
}

/** RFC 9162 §2.1.3.2: throws unless `proof` leads from leaf hash `leaf` at `index` to
 * `root` in a tree of `size` leaves. */
export async function verifyInclusion(
  index: number,
  size: number,
  leaf: Uint8Array,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): Promise<void> {
  if (!(index >= 0 && index < size)) throw new ProofError(`leaf index ${index} is not in a tree of ${size}`);
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    checkHash(p);
    if (sn === 0) throw new ProofError("inclusion proof is too long");
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new ProofError("inclusion proof is too short");
  if (!equal(r, root)) throw new ProofError(`leaf ${index} is not included in the tree of size ${size} with that root`);
}

/** RFC 9162 §2.1.4.2: throws unless the tree (second, secondRoot) extends (first,
 * firstRoot). */
export async function verifyConsistency(
  first: number,
  second: number,
  firstRoot: Uint8Array,
  secondRoot: Uint8Array,
  proof: readonly Uint8Array[],
): Promise<void> {
  proof.forEach(checkHash);
  if (!(first >= 0 && first <= second)) throw new ProofError(`need first ≤ second, got ${first} and ${second}`);
  if (first === 0) {
    if (proof.length > 0) throw new ProofError("proof from the empty tree");
    if (!equal(firstRoot, await sha256(new Uint8Array(0)))) throw new ProofError("wrong root for the empty tree");
    return;
  }
  if (first === second) {
    if (proof.length > 0 || !equal(firstRoot, secondRoot)) {
      throw new ProofError(`two different roots for tree size ${first}`);
    }
    return;
  }
  if (proof.length === 0) throw new ProofError("empty consistency proof");
  const path = [...proof];
  if ((first & (first - 1)) === 0) path.unshift(firstRoot); // a power of two: its root is on the path
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0] as Uint8Array;
  let sr = fr;
  for (const c of path.slice(1)) {
    if (sn === 0) throw new ProofError("consistency proof is too long");
    if (fn % 2 === 1 || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new ProofError("consistency proof is too short");
  if (!equal(fr, firstRoot)) throw new ProofError(`proof does not lead to the root of tree size ${first}`);
  if (!equal(sr, secondRoot)) throw new ProofError(`proof does not lead to the root of tree size ${second}`);
}
