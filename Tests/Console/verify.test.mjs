// Unit tests of the console's verification modules (node --test), on the vectors that the
// Swift suite (ConsoleVectorsTests) checks against the ledger's own hashing and proofs:
// JCS, commitments, leaf and chain hashes, inclusion and consistency proofs, signed notes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { webcrypto } from "node:crypto";
import { canonicalize } from "../../Sources/AuthLedgerServer/Console/jcs.js";
import { concat, fromBase64, fromHex, sha256, toBase64, toHex } from "../../Sources/AuthLedgerServer/Console/bytes.js";
import { chainHash, commitment, hashedForm, leafHash, pointerTokens } from "../../Sources/AuthLedgerServer/Console/leaf.js";
import { checkConsistency, checkInclusion, rootFromInclusionProof } from "../../Sources/AuthLedgerServer/Console/merkle.js";
import { parseNote, parseVerifierKey, verifyCheckpoint } from "../../Sources/AuthLedgerServer/Console/note.js";
import { checkUserHistory, foldPrefixProof, indexKey, u64be, usersVerifierKey, valueCommitment } from "../../Sources/AuthLedgerServer/Console/userproof.js";

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

// History complete (userproof.js) on the user proofs of the vectors: every user of the
// export, and one without events, against the events the export holds for them.
const eventsOf = (user) => V.events.filter((e) => e.user === user);

test("the index log's verifier key is the pinned key under <origin>/users", async () => {
  assert.equal(await usersVerifierKey(V.checkpoint.vkey), V.usersVkey);
});

test("every user proof of the vectors checks: History complete with the user's events", async () => {
  assert.ok(V.userProofs.length >= 3 && V.userProofs.some((p) => p.count === 0));
  for (const p of V.userProofs) {
    const r = await checkUserHistory(p.user, p, eventsOf(p.user), V.checkpoint.vkey);
    assert.equal(r.ok, true, `${p.user}: ${r.text}`);
    assert.match(r.text, /^History complete: the \d+ events shown are all of /);
    assert.equal(r.count, eventsOf(p.user).length);
  }
});

test("a history with one event left out, changed or added is Not complete", async () => {
  const p = V.userProofs.find((x) => x.count >= 3);
  const mine = eventsOf(p.user);
  const hidden = mine.filter((_, i) => i !== 1);
  let r = await checkUserHistory(p.user, p, hidden, V.checkpoint.vkey);
  assert.equal(r.ok, false);
  assert.match(r.text, new RegExp(`^Not complete: the index commits to ${p.count} events of ${p.user} up to seq ${p.size}; the history shown holds ${p.count - 1}`));
  // The same number of events, one of them replaced by another of the log: the hash differs.
  const other = V.events.find((e) => e.user !== p.user);
  const swapped = mine.map((e, i) => (i === 1 ? { ...e, at: "2020-01-01T00:00:00Z" } : e));
  r = await checkUserHistory(p.user, p, swapped, V.checkpoint.vkey);
  assert.equal(r.ok, false);
  assert.match(r.text, /do not make the committed stream hash/);
  r = await checkUserHistory(p.user, p, [...mine, { ...other, user: p.user, seq: p.size + 5 }].slice(0, mine.length), V.checkpoint.vkey);
  assert.equal(r.ok, true, "events after the proof's size are left out");
  r = await checkUserHistory(p.user, p, [...mine.slice(0, 1), other, ...mine.slice(1)], V.checkpoint.vkey);
  assert.equal(r.ok, false);
  // A user without events shown one: not complete either.
  const none = V.userProofs.find((x) => x.count === 0);
  r = await checkUserHistory(none.user, none, [{ ...mine[0], user: none.user }], V.checkpoint.vkey);
  assert.equal(r.ok, false);
});

test("a user proof changed in any part, or checked against another key, is Not complete", async () => {
  const p = V.userProofs.find((x) => x.count >= 3 && x.proof.siblings.length >= 2);
  const mine = eventsOf(p.user);
  const b64flip = (s) => toBase64(flip(fromBase64(s)));
  const cases = [
    ["another user", (q) => { q.user = "someone-else"; }, /the proof is for/],
    ["a sibling", (q) => { q.proof.siblings[1] = b64flip(q.proof.siblings[1]); }, /does not fold to the index root/],
    ["the index root", (q) => { q.indexRoot = b64flip(q.indexRoot); }, /does not fold to the index root/],
    ["the count", (q) => { q.count += 1; }, /not the user's count/],
    ["the stream hash", (q) => { q.streamHash = b64flip(q.streamHash); }, /not the user's count/],
    ["the terminal key", (q) => { q.proof.terminal.key = b64flip(q.proof.terminal.key); }, /off the user's path|does not fold/],
    ["the entry's proof", (q) => { q.entry.proof = q.entry.proof.map(b64flip); }, /entry for size .* is not in its checkpoint/],
    ["the entry's index", (q) => { q.entry.index = q.entry.index === 0 ? 1 : 0; }, /is not in its checkpoint/],
    ["the log checkpoint's size", (q) => { q.size -= 1; }, /checkpoint is of size/],
    ["the index log's signature", (q) => { q.usersCheckpoint = q.usersCheckpoint.replace(/ (\S+)\n$/, (_, s) => " " + toBase64(flip(fromBase64(s), 10)) + "\n"); }, /index log's checkpoint does not verify/],
    ["the log checkpoint swapped for the index log's", (q) => { q.checkpoint = q.usersCheckpoint; }, /log's checkpoint does not verify/],
  ];
  for (const [what, change, why] of cases) {
    const q = structuredClone(p);
    change(q);
    const r = await checkUserHistory(p.user, q, mine, V.checkpoint.vkey);
    assert.equal(r.ok, false, what);
    assert.match(r.text, /^Not complete: /, what);
    assert.match(r.text, why, `${what}: ${r.text}`);
  }
  const r = await checkUserHistory(p.user, p, mine, V.checkpoint.otherVkey);
  assert.equal(r.ok, false);
  assert.match(r.text, /log's checkpoint does not verify/);
});

test("prefix proofs fold as the index's hashing says (leaf 0x02, node 0x03, zeros for empty)", async () => {
  // A hand-made index of two users whose keys differ at the first bit: the root is node(left, right).
  const a = await indexKey("u-left"), b = await indexKey("u-right");
  const c = await valueCommitment(1, new Uint8Array(32), 7);
  const leaf = async (k) => sha256(concat(Uint8Array.from([2]), k, c));
  const terminal = (k) => ({ type: "leaf", key: toBase64(k), commitment: toBase64(c) });
  const [la, lb] = [await leaf(a), await leaf(b)];
  const bit0 = (k) => k[0] >> 7;
  const want = bit0(a) === 0 ? await sha256(concat(Uint8Array.from([3]), la, lb)) : await sha256(concat(Uint8Array.from([3]), lb, la));
  if (bit0(a) !== bit0(b)) {
    assert.deepEqual(await foldPrefixProof(a, [toBase64(lb)], terminal(a)), want);
    assert.deepEqual(await foldPrefixProof(b, [toBase64(la)], terminal(b)), want);
  }
  // One leaf alone is the root; an empty index folds to zeros.
  assert.deepEqual(await foldPrefixProof(a, [], terminal(a)), la);
  assert.deepEqual(await foldPrefixProof(a, [], { type: "empty" }), new Uint8Array(32));
  await assert.rejects(foldPrefixProof(a, [], { type: "other" }), /neither a leaf nor empty/);
  assert.deepEqual(u64be(258), Uint8Array.from([0, 0, 0, 0, 0, 0, 1, 2]));
});
