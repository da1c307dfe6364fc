// RFC 9162 (RFC 6962) Merkle proofs, checked by computing the root here: a proof checks
// when the root it leads to equals the root of a checkpoint whose signature was checked,
// never a root the server states beside the proof. Sizes and indexes are Numbers (exact up
// to 2^53), halved with Math.floor, never with 32-bit bit operations.
import { concat, equalBytes, sha256 } from "./bytes.js";

const odd = (n) => n % 2 === 1;
const half = (n) => Math.floor(n / 2);
const powerOfTwo = (n) => { while (n > 1 && !odd(n)) n = half(n); return n === 1; };

/** SHA-256(0x01 ‖ left ‖ right): an interior node. */
export async function nodeHash(left, right) {
  return sha256(concat(new Uint8Array([1]), left, right));
}

/**
 * The root that an inclusion proof (RFC 9162 section 2.1.3.2) leads to from `leaf` at
 * `index` in a tree of `size` leaves; throws with the reason when the proof cannot fit.
 */
export async function rootFromInclusionProof(index, size, leaf, proof) {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) {
    throw new Error(`leaf index ${index} is not inside a tree of size ${size}`);
  }
  let fn = index, sn = size - 1, r = leaf;
  for (const p of proof) {
    if (p.length !== 32) throw new Error("a proof hash is not 32 bytes");
    if (sn === 0) throw new Error("the proof is longer than the tree allows");
    if (odd(fn) || fn === sn) {
      r = await nodeHash(p, r);
      if (!odd(fn)) { while (!odd(fn) && fn !== 0) { fn = half(fn); sn = half(sn); } }
    } else {
      r = await nodeHash(r, p);
    }
    fn = half(fn); sn = half(sn);
  }
  if (sn !== 0) throw new Error("the proof is shorter than the tree needs");
  return r;
}

/** Whether the inclusion proof leads from `leaf` to `root` (a reason in `.why` when not). */
export async function checkInclusion(index, size, leaf, proof, root) {
  try {
    const r = await rootFromInclusionProof(index, size, leaf, proof);
    return equalBytes(r, root) ? { ok: true } : { ok: false, why: "the proof leads to a root other than the checkpoint's" };
  } catch (e) {
    return { ok: false, why: e.message };
  }
}

/**
 * Whether a consistency proof (RFC 9162 section 2.1.4.2) shows that the tree of
 * `oldSize` with `oldRoot` is a prefix of the tree of `newSize` with `newRoot`.
 */
export async function checkConsistency(oldSize, newSize, oldRoot, newRoot, proof) {
  if (!Number.isSafeInteger(oldSize) || !Number.isSafeInteger(newSize) || oldSize < 1 || oldSize > newSize) {
    return { ok: false, why: `no consistency proof goes from size ${oldSize} to ${newSize}` };
  }
  if (proof.some((p) => p.length !== 32)) return { ok: false, why: "a proof hash is not 32 bytes" };
  if (oldSize === newSize) {
    if (proof.length !== 0) return { ok: false, why: "a proof between equal sizes must be empty" };
    return equalBytes(oldRoot, newRoot) ? { ok: true } : { ok: false, why: "two different roots for the same size" };
  }
  let path = proof;
  // An old tree that is a full power of two is itself a node of the new tree.
  if (powerOfTwo(oldSize)) path = [oldRoot, ...proof];
  if (path.length === 0) return { ok: false, why: "the proof is empty" };
  let fn = oldSize - 1, sn = newSize - 1;
  while (odd(fn)) { fn = half(fn); sn = half(sn); }
  let fr = path[0], sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return { ok: false, why: "the proof is longer than the trees allow" };
    if (odd(fn) || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      if (!odd(fn)) { while (!odd(fn) && fn !== 0) { fn = half(fn); sn = half(sn); } }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn = half(fn); sn = half(sn);
  }
  if (sn !== 0) return { ok: false, why: "the proof is shorter than the trees need" };
  if (!equalBytes(fr, oldRoot)) return { ok: false, why: `the proof does not lead to the old root (size ${oldSize})` };
  if (!equalBytes(sr, newRoot)) return { ok: false, why: `the proof does not lead to the new root (size ${newSize})` };
  return { ok: true };
}
