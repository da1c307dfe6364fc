// History complete: a user proof (GET /v1/users/{u}/proof, docs/VERIFIABLE-LOG.md "User
// proofs") checked in the page. The prefix proof is folded here from the user's value up to
// the index root; the index log's checkpoint is checked against the pinned key under the
// name <origin>/users (the same Ed25519 key, as `authledger checkpoint --vkey --users`
// prints it), the entry u64be(size) ‖ R ‖ indexRoot is proved in it, the log's checkpoint
// at that size is checked against the pinned key and gives R; and the stream hash is
// recomputed over the events the page loaded. Only when all of it holds are the events the
// page shows all of the user's events up to that size.
import { concat, equalBytes, fromBase64, sha256, toHex } from "./bytes.js";
import { leafHash } from "./leaf.js";
import { checkInclusion } from "./merkle.js";
import { keyId, parseVerifierKey, verifyCheckpoint } from "./note.js";

const KEY_PREFIX = new TextEncoder().encode("authledger/user-index/v1:");
const ZERO = new Uint8Array(32);

/** u64 big-endian bytes of a safe integer. */
export function u64be(n) {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${n} is not a count or seq`);
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n));
  return out;
}

/** The index key of a user: SHA-256("authledger/user-index/v1:" ‖ UTF-8(user)). */
export const indexKey = (user) => sha256(concat(KEY_PREFIX, new TextEncoder().encode(user)));

/** A user's value commitment: SHA-256(u64be(count) ‖ streamHash ‖ u64be(last)). */
export const valueCommitment = (count, streamHash, last) => sha256(concat(u64be(count), streamHash, u64be(last)));

const bit = (k, i) => (k[i >> 3] >> (7 - (i & 7))) & 1;
const leafNode = (k, c) => sha256(concat(new Uint8Array([2]), k, c));
const innerNode = (l, r) => sha256(concat(new Uint8Array([3]), l, r));

/**
 * The root a prefix proof folds up to for key `k`: the terminal (a leaf, or empty) at the
 * depth of the number of siblings, then one inner node per sibling, from the deepest up
 * (siblings are listed from the root down). Throws when the proof cannot belong to `k`.
 */
export async function foldPrefixProof(k, siblings, terminal) {
  if (!Array.isArray(siblings) || siblings.length > 256) throw new Error("the prefix proof has no valid siblings");
  const depth = siblings.length;
  let h;
  if (terminal?.type === "empty") {
    h = ZERO;
  } else if (terminal?.type === "leaf") {
    const tk = fromBase64(terminal.key), tc = fromBase64(terminal.commitment);
    if (tk.length !== 32 || tc.length !== 32) throw new Error("the prefix proof's leaf is not two 32-byte hashes");
    for (let i = 0; i < depth; i++) if (bit(tk, i) !== bit(k, i)) throw new Error("the prefix proof's leaf is off the user's path");
    h = await leafNode(tk, tc);
  } else {
    throw new Error("the prefix proof's terminal is neither a leaf nor empty");
  }
  for (let i = depth - 1; i >= 0; i--) {
    const s = fromBase64(siblings[i]);
    if (s.length !== 32) throw new Error("a prefix proof sibling is not 32 bytes");
    h = bit(k, i) === 0 ? await innerNode(h, s) : await innerNode(s, h);
  }
  return h;
}

/** The index log's verifier key: the pinned log key under the name <name>/users. */
export async function usersVerifierKey(pinned) {
  const key = await parseVerifierKey(pinned);
  const name = key.name + "/users";
  const raw = String(pinned).trim();
  return `${name}+${toHex(await keyId(name, key.publicKey))}+${raw.slice(raw.indexOf("+", raw.indexOf("+") + 1) + 1)}`;
}

/** The stream hash of `events` (in log order): s_0 = zeros, s_k = SHA-256(s_{k-1} ‖ leaf_k). */
export async function streamHash(events) {
  let s = ZERO;
  for (const e of events) s = await sha256(concat(s, await leafHash(e)));
  return s;
}

/**
 * Checks `proof` (a user proof as the server answers it) for `user` against the pinned
 * verifier key, and the user's `events` (their recorded forms, as the history gives them;
 * those after the proof's size are left out). Returns {ok, text, size, count}; `text` starts
 * with "History complete" only when every check passed, else with "Not complete" and why.
 */
export async function checkUserHistory(user, proof, events, pinned) {
  const no = (why) => ({ ok: false, text: `Not complete: ${why}.` });
  try {
    if (proof.user !== user) return no(`the proof is for ${JSON.stringify(proof.user)}, not ${JSON.stringify(user)}`);
    const { size, count, last } = proof;
    for (const [name, v] of [["size", size], ["count", count], ["last", last]]) {
      if (!Number.isSafeInteger(v) || v < 0) return no(`the proof's ${name} is not a number`);
    }
    const stream = fromBase64(proof.streamHash), indexRoot = fromBase64(proof.indexRoot);
    const k = await indexKey(user);
    const t = proof.proof?.terminal;
    const root = await foldPrefixProof(k, proof.proof?.siblings, t);
    if (!equalBytes(root, indexRoot)) return no("the prefix proof does not fold to the index root");
    const shown = t.type === "leaf" && equalBytes(fromBase64(t.key), k);
    if (shown !== count > 0) return no(count > 0 ? "the prefix proof does not show the user" : "the prefix proof shows the user, the proof says no events");
    if (shown && !equalBytes(fromBase64(t.commitment), await valueCommitment(count, stream, last))) {
      return no("the prefix proof's value is not the user's count, stream hash and last seq");
    }
    // The log's checkpoint at the proof's size gives R; the index log's checkpoint holds the entry.
    const log = await verifyCheckpoint(proof.checkpoint, pinned);
    if (!log.ok) return no(`the log's checkpoint does not verify: ${log.why}`);
    if (log.checkpoint.size !== size) return no(`the log's checkpoint is of size ${log.checkpoint.size}, not ${size}`);
    const users = await verifyCheckpoint(proof.usersCheckpoint, await usersVerifierKey(pinned));
    if (!users.ok) return no(`the index log's checkpoint does not verify: ${users.why}`);
    const entry = proof.entry ?? {};
    if (entry.treeSize !== users.checkpoint.size) return no("the entry's tree size is not the index log checkpoint's");
    const leaf = await sha256(concat(new Uint8Array([0]), u64be(size), log.checkpoint.root, indexRoot));
    const inc = await checkInclusion(entry.index, entry.treeSize, leaf, (entry.proof ?? []).map(fromBase64), users.checkpoint.root);
    if (!inc.ok) return no(`the index log's entry for size ${size} is not in its checkpoint: ${inc.why}`);
    // The events the page loaded, up to the size: they must make the committed stream hash.
    const mine = events.filter((e) => e.seq <= size);
    for (let i = 1; i < mine.length; i++) {
      if (!(mine[i].seq > mine[i - 1].seq)) return no("the history is not in log order");
    }
    if (mine.some((e) => e.user !== user)) return no("the history holds another user's event");
    const newest = mine.length ? mine[mine.length - 1].seq : 0;
    if (mine.length !== count) {
      return { ...no(`the index commits to ${count} events of ${user} up to seq ${size}; the history shown holds ${mine.length}`), size, count };
    }
    if (newest !== last || !equalBytes(await streamHash(mine), stream)) {
      return { ...no(`the ${count} events shown do not make the committed stream hash (an event was changed, left out or replaced)`), size, count };
    }
    const cos = users.cosignatures.length ? ` Cosignatures of the index log (not checked: no witness policy pinned): ${users.cosignatures.map((c) => c.name).join(", ")}.` : "";
    return {
      ok: true, size, count,
      text: `History complete: the ${count} events shown are all of ${user}'s events in the log ${log.checkpoint.origin} up to seq ${size} (index log entry ${entry.index} of ${entry.treeSize}).${cos}`,
    };
  } catch (e) {
    return no(e.message);
  }
}
