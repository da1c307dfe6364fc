// Proofs checked in the page: an event's leaf hash recomputed here, its inclusion proof
// walked up to a root computed here, and that root compared with a checkpoint whose
// Ed25519 signature checks against the verifier key the auditor pinned. Also continuity
// (a consistency proof from the last checkpoint verified here) and evidence bundles.
import { ApiError, get, getJSON } from "./api.js";
import { fromBase64 } from "./bytes.js";
import { leafHash } from "./leaf.js";
import { checkConsistency, checkInclusion } from "./merkle.js";
import { canVerify, parseNote, verifyCheckpoint } from "./note.js";

const VKEY_KEY = "authledger.verifierKey";
const LAST_KEY = "authledger.lastCheckpoint";

/** The pinned verifier key, or null. */
export const pinnedKey = () => localStorage.getItem(VKEY_KEY);

/** Pins `key` (the caller checked it parses). */
export function pinKey(key) { localStorage.setItem(VKEY_KEY, key.trim()); }

/** Why this page cannot verify here, or null when it can (a secure context with WebCrypto). */
export function cannotVerify() {
  if (!globalThis.isSecureContext) return "this page is not in a secure context (use HTTPS, or a loopback address)";
  if (!canVerify()) return "this browser has no WebCrypto";
  return null;
}

/** The checkpoint to verify against: /checkpoint, or /checkpoint/latest while that answers 404 (not witnessed yet). */
export async function fetchCheckpoint() {
  try {
    return { text: (await get("/checkpoint", { as: "text" })).body, witnessed: true };
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 404) throw e;
    return { text: (await get("/checkpoint/latest", { as: "text" })).body, witnessed: false };
  }
}

const cosignText = (list) => list.length === 0 ? "" :
  ` Cosignatures (not checked: no witness policy pinned): ${list.map((c) => c.name).join(", ")}.`;

/**
 * Verifies that `event` (its recorded form, as the history gives it) is in the log: the
 * result {ok, text, ms}. `text` starts with "Verified" only when every check passed.
 */
export async function verifyEvent(event) {
  const started = performance.now();
  const done = (ok, text) => ({ ok, text, ms: performance.now() - started });
  const no = cannotVerify();
  if (no) return done(false, `Cannot verify: ${no}.`);
  const key = pinnedKey();
  if (!key) return done(false, "Not verified: no verifier key is pinned (pin one under Verifier key).");
  try {
    const cp = await fetchCheckpoint();
    const v = await verifyCheckpoint(cp.text, key);
    if (!v.ok) return done(false, `Not verified: ${v.why}.`);
    const size = v.checkpoint.size;
    if (!Number.isSafeInteger(event.seq) || event.seq < 1) return done(false, "Not verified: the event has no valid seq.");
    if (event.seq > size) return done(false, `Not verified: the checkpoint (size ${size}) is older than seq ${event.seq}; try again later.`);
    const [proof, leaf] = await Promise.all([
      getJSON(`/v1/proofs/inclusion?seq=${event.seq}&size=${size}`),
      leafHash(event),
    ]);
    if (proof.leafIndex !== event.seq - 1 || proof.treeSize !== size) {
      return done(false, `Not verified: the proof is for leaf ${proof.leafIndex} of ${proof.treeSize}, not seq ${event.seq} of ${size}.`);
    }
    const r = await checkInclusion(event.seq - 1, size, leaf, proof.proof.map(fromBase64), v.checkpoint.root);
    if (!r.ok) return done(false, `Not verified: ${r.why} (the event or its proof was changed).`);
    const witnessed = cp.witnessed ? "" : " Not witnessed yet (the log's own checkpoint).";
    return done(true, `Verified: seq ${event.seq} is in the log ${v.checkpoint.origin} of ${size} events.${witnessed}${cosignText(v.cosignatures)}`);
  } catch (e) {
    return done(false, `Not verified: ${e.message}.`);
  }
}

/**
 * Continuity: checks the current checkpoint against the last one verified here (a
 * consistency proof between them, whichever is larger), then keeps the larger. Returns {ok, text}.
 */
export async function checkContinuity() {
  const no = cannotVerify();
  if (no) return { ok: false, text: `Cannot check: ${no}.` };
  const key = pinnedKey();
  if (!key) return { ok: false, text: "Not checked: no verifier key is pinned." };
  try {
    const cp = await fetchCheckpoint();
    const now = await verifyCheckpoint(cp.text, key);
    if (!now.ok) return { ok: false, text: `Not consistent: the current checkpoint does not verify: ${now.why}.` };
    const saved = localStorage.getItem(LAST_KEY);
    const last = saved ? await verifyCheckpoint(saved, key) : null;
    if (!last || !last.ok) {
      localStorage.setItem(LAST_KEY, cp.text);
      return { ok: true, first: true, text: `No earlier checkpoint verified here for this key: kept this one (size ${now.checkpoint.size}).` };
    }
    const [a, b] = last.checkpoint.size <= now.checkpoint.size ? [last, now] : [now, last];
    let proof = [];
    if (a.checkpoint.size !== b.checkpoint.size) {
      proof = (await getJSON(`/v1/proofs/consistency?from=${a.checkpoint.size}&to=${b.checkpoint.size}`)).proof.map(fromBase64);
    }
    const r = await checkConsistency(a.checkpoint.size, b.checkpoint.size, a.checkpoint.root, b.checkpoint.root, proof);
    if (!r.ok) return { ok: false, text: `Not consistent: ${r.why}; from size ${a.checkpoint.size} to ${b.checkpoint.size}.` };
    localStorage.setItem(LAST_KEY, b === now ? cp.text : saved);
    if (a.checkpoint.size === b.checkpoint.size) return { ok: true, text: `Consistent: the same log of ${b.checkpoint.size} events as verified earlier (size ${a.checkpoint.size}).` };
    return { ok: true, text: `Consistent: the log of ${b.checkpoint.size} events extends the one of ${a.checkpoint.size} verified earlier.` };
  } catch (e) {
    return { ok: false, text: `Not consistent: ${e.message}.` };
  }
}

/** An evidence bundle for `events` (recorded forms): the checkpoint, the pinned key, a proof per event. */
export async function evidenceBundle(events) {
  const cp = await fetchCheckpoint();
  const note = parseNote(cp.text);
  const usable = events.filter((e) => e.seq <= note.size);
  const proofs = [];
  const queue = [...usable];
  const worker = async () => {
    for (let e = queue.shift(); e; e = queue.shift()) {
      const p = await getJSON(`/v1/proofs/inclusion?seq=${e.seq}&size=${note.size}`);
      proofs.push({ seq: e.seq, leafIndex: p.leafIndex, treeSize: p.treeSize, proof: p.proof });
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  proofs.sort((x, y) => x.seq - y.seq);
  return { origin: note.origin, verifierKey: pinnedKey() || (await get("/checkpoint/vkey", { as: "text" })).body.trim(), checkpoint: cp.text, events: usable, proofs };
}

/** Offers `bundle` as a JSON file download named `name`. */
export function download(bundle, name) {
  const url = URL.createObjectURL(new Blob([JSON.stringify(bundle, null, 1) + "\n"], { type: "application/json" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
