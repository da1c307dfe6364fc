// C2SP signed notes and tlog-checkpoints: the body (origin, size, base64 root, optional
// extension lines), a blank line, and signature lines "— <name> <base64(key id ‖ signature)>".
// The log's line is checked with Ed25519 (WebCrypto) against a pinned verifier key
// "<name>+<hex key id>+<base64(0x01 ‖ public key)>"; other lines (witness cosignatures)
// are listed, never counted as checked.
import { concat, equalBytes, fromBase64, fromHex, sha256 } from "./bytes.js";

const EM_DASH = "\u2014";

/** Splits a signed note into its body text (with its final newline) and signature lines. */
export function parseNote(text) {
  if (typeof text !== "string") throw new Error("the checkpoint is not text");
  const cut = text.indexOf("\n\n");
  if (cut < 0) throw new Error("the checkpoint has no blank line before its signatures");
  const body = text.slice(0, cut + 1);
  const lines = body.slice(0, -1).split("\n");
  if (lines.length < 3) throw new Error("the checkpoint body needs an origin, a size and a root");
  const [origin, sizeText, rootText] = lines;
  if (!/^[0-9]{1,16}$/.test(sizeText) || (sizeText.length > 1 && sizeText[0] === "0")) throw new Error("the checkpoint size is not a decimal number");
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size)) throw new Error("the checkpoint size is too large");
  const root = fromBase64(rootText);
  if (root.length !== 32) throw new Error("the checkpoint root is not 32 bytes");
  const signatures = [];
  const rest = text.slice(cut + 2);
  for (const line of rest.split("\n")) {
    if (line === "") continue;
    const m = line.match(/^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/);
    if (!m) throw new Error("a signature line is malformed");
    const raw = fromBase64(m[2]);
    if (raw.length < 5) throw new Error("a signature is too short");
    signatures.push({ name: m[1], keyId: raw.slice(0, 4), signature: raw.slice(4), line });
  }
  if (signatures.length === 0) throw new Error("the checkpoint has no signature");
  return { body, origin, size, root, extensions: lines.slice(3), signatures };
}

/** The key id of an Ed25519 verifier key: SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key)[0..4]. */
export async function keyId(name, publicKey) {
  const digest = await sha256(concat(new TextEncoder().encode(name + "\n"), new Uint8Array([1]), publicKey));
  return digest.slice(0, 4);
}

/** Parses and checks a verifier key "<name>+<hex id>+<base64(0x01 ‖ key)>"; throws with the reason. */
export async function parseVerifierKey(text) {
  // The base64 key may itself hold "+": split at the first two only.
  const t = String(text).trim();
  const a = t.indexOf("+"), b = a < 0 ? -1 : t.indexOf("+", a + 1);
  if (a <= 0 || b < 0) throw new Error("a verifier key is <name>+<key id>+<key>");
  const [name, idHex, keyB64] = [t.slice(0, a), t.slice(a + 1, b), t.slice(b + 1)];
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new Error("the verifier key's id is not 8 hex digits");
  const encoded = fromBase64(keyB64);
  if (encoded.length !== 33 || encoded[0] !== 1) throw new Error("the verifier key is not an Ed25519 key");
  const publicKey = encoded.slice(1);
  const id = fromHex(idHex);
  if (!equalBytes(id, await keyId(name, publicKey))) throw new Error("the verifier key's id does not match its name and key");
  return { name, keyId: id, publicKey };
}

/** Whether WebCrypto can verify Ed25519 here (a secure context with a current browser). */
export function canVerify() {
  return typeof crypto !== "undefined" && crypto.subtle !== undefined;
}

/**
 * Checks a checkpoint note against a verifier key: its log signature line (the key's
 * name and id) must carry a valid Ed25519 signature of the body, and the origin must be
 * the key's name. Returns {ok, why?, checkpoint, cosignatures} — cosignatures are the
 * other lines, each {name, checked: false}.
 */
export async function verifyCheckpoint(text, verifierKey) {
  let note, key;
  try {
    note = parseNote(text);
    key = await parseVerifierKey(verifierKey);
  } catch (e) {
    return { ok: false, why: e.message };
  }
  const cosignatures = note.signatures
    .filter((s) => !(s.name === key.name && equalBytes(s.keyId, key.keyId)))
    .map((s) => ({ name: s.name, checked: false }));
  if (note.origin !== key.name) return { ok: false, why: `the checkpoint's origin ${note.origin} is not the pinned key's ${key.name}`, cosignatures };
  const mine = note.signatures.filter((s) => s.name === key.name && equalBytes(s.keyId, key.keyId));
  if (mine.length === 0) return { ok: false, why: "no signature by the pinned key", cosignatures };
  let good = false;
  try {
    const k = await crypto.subtle.importKey("raw", key.publicKey, { name: "Ed25519" }, false, ["verify"]);
    for (const s of mine) {
      if (s.signature.length === 64 && await crypto.subtle.verify({ name: "Ed25519" }, k, s.signature, new TextEncoder().encode(note.body))) good = true;
    }
  } catch (e) {
    return { ok: false, why: "this browser cannot check Ed25519 signatures (" + e.message + ")", cosignatures };
  }
  if (!good) return { ok: false, why: "the checkpoint's signature does not check against the pinned key", cosignatures };
  return { ok: true, checkpoint: note, cosignatures };
}

export { EM_DASH };
