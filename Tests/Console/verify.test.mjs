// Unit tests of the console's verification modules (node --test), on the vectors that the
// Swift suite (ConsoleVectorsTests) checks against the ledger's own hashing and proofs:
// JCS, commitments, leaf and chain hashes, inclusion and consistency proofs, signed notes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { webcrypto } from "node:crypto";
import { canonicalize } from "../../Sources/AuthLedgerServer/Console/jcs.js";
import { fromBase64, fromHex, toBase64, toHex } from "../../Sources/AuthLedgerServer/Console/bytes.js";
import { chainHash, commitment, hashedForm, leafHash, pointerTokens } from "../../Sources/AuthLedgerServer/Console/leaf.js";
import { checkConsistency, checkInclusion, rootFromInclusionProof } from "../../Sources/AuthLedgerServer/Console/merkle.js";
import { parseNote, parseVerifierKey, verifyCheckpoint } from "../../Sources/AuthLedgerServer/Console/note.js";

// Node 18 (Debian's) has WebCrypto only under node:crypto; the page's modules use the global.
if (!globalThis.crypto) globalThis.crypto = webcrypto;

const V = JSON.parse(readFileSync(new URL("./vectors.json", import.meta.url), "utf8"));
const b64 = (list) => list.map(fromBase64);
const flip = (bytes, at = 0) => { const c = Uint8Array.from(bytes); c[at] ^= 1; return c; };

test("JCS gives the canonical text of each vector", () => {
  assert.ok(V.jcs.length >= 5);
  for (const v of V.jcs) assert.equal(canonicalize(v.input), v.canonical, JSON.stringify(v.input));
});

test("JCS sorts keys by UTF-16 code units, not by code points", () => {
  // U+FB33 sorts after U+1F600 (a surrogate pair starting 0xD83D) in UTF-16 order.
  assert.equal(canonicalize({ "\ufb33": 1, "\u{1f600}": 2 }), '{"\u{1f600}":2,"\ufb33":1}');
});

test("commitments are base64url SHA-256 of JCS([salt, value])", async () => {
  assert.ok(V.commitments.length >= 2);
  for (const c of V.commitments) assert.deepEqual(await commitment(c.salt, c.value), { _sd: c.commitment });
  const c = V.commitments[0];
  assert.notDeepEqual(await commitment(c.salt + "x", c.value), { _sd: c.commitment });
});

test("JSON pointer tokens unescape ~1 and ~0", () => {
  assert.deepEqual(pointerTokens("/data/context/a~1b~0c"), ["data", "context", "a/b~c"]);
  assert.throws(() => pointerTokens("data/name"));
});

test("every event's leaf hash chains to the hash the ledger recorded", async () => {
  assert.ok(V.events.length >= 40);
  assert.ok(V.events.some((e) => e.disclosures), "some events carry disclosures");
  assert.ok(V.events.some((e) => JSON.stringify(e).includes('"_sd"') && !e.disclosures), "some events are erased");
  let prev = "0".repeat(64);
  for (const e of V.events) {
    assert.equal(e.prev, prev, `prev of seq ${e.seq}`);
    const leaf = await leafHash(e);
    assert.equal(toHex(await chainHash(e.prev, leaf)), e.hash, `seq ${e.seq}`);
    prev = e.hash;
  }
});

test("a changed value, salt or field changes the leaf", async () => {
  const e = V.events.find((x) => x.disclosures && x.data && typeof x.data.name === "string");
  const leaf = toHex(await leafHash(e));
  const renamed = structuredClone(e); renamed.data.name += "!";
  const salted = structuredClone(e); const p = Object.keys(salted.disclosures)[0]; salted.disclosures[p] = "AAAA" + salted.disclosures[p].slice(4);
  const moved = structuredClone(e); moved.seq += 1;
  for (const x of [renamed, salted, moved]) assert.notEqual(toHex(await leafHash(x)), leaf);
  // The hashed form holds the commitment in place of the value, and no disclosures.
  const form = await hashedForm(e);
  assert.equal(form.disclosures, undefined);
  assert.equal(typeof form.data.name._sd, "string");
  assert.equal(e.data.name.length > 0, true, "the event itself is left unchanged");
});

test("inclusion proofs lead to the checkpoint's root", async () => {
  const root = parseNote(V.checkpoint.note).root;
  assert.ok(V.inclusion.length >= 3);
  for (const p of V.inclusion) {
    const e = V.events[p.leafIndex];
    const leaf = await leafHash(e);
    assert.deepEqual(await checkInclusion(p.leafIndex, p.treeSize, leaf, b64(p.proof), root), { ok: true });
    // A changed leaf, proof hash, index or size does not.
    assert.equal((await checkInclusion(p.leafIndex, p.treeSize, flip(leaf), b64(p.proof), root)).ok, false);
    if (p.proof.length) assert.equal((await checkInclusion(p.leafIndex, p.treeSize, leaf, [flip(fromBase64(p.proof[0])), ...b64(p.proof.slice(1))], root)).ok, false);
    assert.equal((await checkInclusion(p.leafIndex ^ 1, p.treeSize, leaf, b64(p.proof), root)).ok, false);
    // (The size is bound by the signed checkpoint, not by the path: a neighbouring size may
    // order the same path alike; one that needs a longer path does not.)
    assert.equal((await checkInclusion(p.leafIndex, p.treeSize * 4, leaf, b64(p.proof), root)).ok, false);
    assert.equal((await checkInclusion(p.leafIndex, p.treeSize, leaf, b64(p.proof).slice(0, -1), root)).ok, false);
  }
  await assert.rejects(rootFromInclusionProof(5, 5, new Uint8Array(32), []));
});

test("consistency proofs link the older checkpoints to the newer one", async () => {
  assert.ok(V.consistency.length >= 3);
  for (const c of V.consistency) {
    const oldRoot = parseNote(c.oldCheckpoint).root, newRoot = parseNote(V.checkpoint.note).root;
    assert.equal(c.treeSize, parseNote(V.checkpoint.note).size);
    assert.deepEqual(await checkConsistency(c.oldSize, c.treeSize, oldRoot, newRoot, b64(c.proof)), { ok: true }, `${c.oldSize}`);
    assert.equal((await checkConsistency(c.oldSize, c.treeSize, flip(oldRoot), newRoot, b64(c.proof))).ok, false);
    assert.equal((await checkConsistency(c.oldSize, c.treeSize, oldRoot, flip(newRoot), b64(c.proof))).ok, false);
    if (c.proof.length) assert.equal((await checkConsistency(c.oldSize, c.treeSize, oldRoot, newRoot, b64(c.proof).slice(1))).ok, false);
  }
  const root = parseNote(V.checkpoint.note).root;
  assert.deepEqual(await checkConsistency(3, 3, root, root, []), { ok: true });
  assert.equal((await checkConsistency(3, 3, root, flip(root), [])).ok, false);
  assert.equal((await checkConsistency(4, 3, root, root, [])).ok, false);
});

test("the checkpoint's signature checks against the verifier key, and only it", async () => {
  const { note, vkey } = V.checkpoint;
  const good = await verifyCheckpoint(note, vkey);
  assert.equal(good.ok, true, good.why);
  assert.equal(good.checkpoint.size, V.events.length);
  assert.deepEqual(good.cosignatures, []);
  // The body changed (size, root), the signature changed, another key: not verified.
  const lines = note.split("\n");
  const resized = [lines[0], String(Number(lines[1]) - 1), ...lines.slice(2)].join("\n");
  assert.equal((await verifyCheckpoint(resized, vkey)).ok, false);
  const sigLine = lines.find((l) => l.startsWith("\u2014 "));
  const raw = fromBase64(sigLine.split(" ")[2]);
  const badSig = note.replace(sigLine, sigLine.split(" ").slice(0, 2).join(" ") + " " + toBase64(flip(raw, 10)));
  const r = await verifyCheckpoint(badSig, vkey);
  assert.equal(r.ok, false);
  assert.match(r.why, /signature does not check/);
  const other = V.checkpoint.otherVkey;
  assert.equal((await verifyCheckpoint(note, other)).ok, false);
  // A witness's cosignature line is listed by name and never counted as checked.
  const cosigned = note + "\u2014 witness.example/w1 " + toBase64(new Uint8Array(76)) + "\n";
  const c = await verifyCheckpoint(cosigned, vkey);
  assert.equal(c.ok, true);
  assert.deepEqual(c.cosignatures, [{ name: "witness.example/w1", checked: false }]);
});

test("a verifier key must be well formed and its id must match", async () => {
  const k = await parseVerifierKey(V.checkpoint.vkey);
  assert.equal(k.publicKey.length, 32);
  const [name, id, key] = [V.checkpoint.vkey.split("+")[0], V.checkpoint.vkey.split("+")[1], V.checkpoint.vkey.split("+").slice(2).join("+")];
  await assert.rejects(parseVerifierKey(`${name}+00000000+${key}`), /id does not match/);
  await assert.rejects(parseVerifierKey(`${name}+${id}`));
  await assert.rejects(parseVerifierKey(`other+${id}+${key}`), /id does not match/);
});

test("a note without a blank line or a signature is refused", () => {
  assert.throws(() => parseNote("origin\n1\n" + toBase64(new Uint8Array(32)) + "\n"));
  assert.throws(() => parseNote("origin\n1\n" + toBase64(new Uint8Array(32)) + "\n\n"), /no signature/);
  assert.throws(() => parseNote("origin\n01\n" + toBase64(new Uint8Array(32)) + "\n\n\u2014 a AAAAAAAA\n"), /size/);
  assert.deepEqual(fromHex("00ff"), Uint8Array.from([0, 255]));
});
