// An event's leaf hash (the ledger's hashing, docs/REFERENCE.md and README "Verifying an
// export independently"): the hashed form is the recorded event without prev, hash and
// disclosures, with each value named in disclosures (a JSON pointer to its salt) replaced
// by its commitment {"_sd": base64url(SHA-256(JCS([salt, value])))}; the leaf is
// SHA-256(0x00 ‖ JCS(hashed form)), the chain hash SHA-256(prev ‖ leaf).
import { canonicalBytes } from "./jcs.js";
import { concat, fromHex, sha256, toBase64Url } from "./bytes.js";

/** The commitment object {"_sd": D} of `value` under `salt`. */
export async function commitment(salt, value) {
  return { _sd: toBase64Url(await sha256(canonicalBytes([salt, value]))) };
}

/** The reference tokens of an RFC 6901 JSON pointer ("/data/context/ip" → ["data","context","ip"]). */
export function pointerTokens(pointer) {
  if (typeof pointer !== "string" || !pointer.startsWith("/")) throw new Error("not a JSON pointer: " + pointer);
  return pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function clone(v) {
  return v === null || typeof v !== "object" ? v : JSON.parse(JSON.stringify(v));
}

/** The hashed form of a recorded event (a new object; the event is left as it is). */
export async function hashedForm(event) {
  const form = clone(event);
  delete form.prev;
  delete form.hash;
  const disclosures = form.disclosures;
  delete form.disclosures;
  if (disclosures === undefined) return form;
  if (disclosures === null || typeof disclosures !== "object" || Array.isArray(disclosures)) {
    throw new Error("disclosures must be an object of JSON pointers to salts");
  }
  for (const [pointer, salt] of Object.entries(disclosures)) {
    const tokens = pointerTokens(pointer);
    let parent = form;
    for (const t of tokens.slice(0, -1)) {
      if (parent === null || typeof parent !== "object" || !(t in parent)) throw new Error("disclosure " + pointer + " names no value");
      parent = parent[t];
    }
    const last = tokens[tokens.length - 1];
    if (parent === null || typeof parent !== "object" || !(last in parent)) throw new Error("disclosure " + pointer + " names no value");
    parent[last] = await commitment(salt, parent[last]);
  }
  return form;
}

/** The canonical bytes C of the event's hashed form. */
export async function canonicalEventBytes(event) {
  return canonicalBytes(await hashedForm(event));
}

/** leaf = SHA-256(0x00 ‖ C), as a Uint8Array. */
export async function leafHash(event) {
  return sha256(concat(new Uint8Array([0]), await canonicalEventBytes(event)));
}

/** hash = SHA-256(prev ‖ leaf) over the raw bytes (prev as the event's hex). */
export async function chainHash(prevHex, leaf) {
  return sha256(concat(fromHex(prevHex), leaf));
}
