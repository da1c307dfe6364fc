// The Live feed reader (live.js) under node --test: it sends the token in the
// Authorization header, parses Server-Sent Events (comments, multi-line data, CRLF), and
// after the stream ends reconnects with Last-Event-ID set to the last id it received.
import { test } from "node:test";
import assert from "node:assert/strict";

const store = new Map([["authledger.token", "tok-123"]]);
globalThis.sessionStorage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v), removeItem: (k) => store.delete(k) };
const { follow } = await import("../../Sources/AuthLedgerServer/Console/live.js");

function streamOf(chunks) {
  return new ReadableStream({ start(c) { for (const x of chunks) c.enqueue(new TextEncoder().encode(x)); c.close(); } });
}

/** A fetch that answers each call with the next of `bodies` (then waits until aborted), recording the calls. */
function serve(bodies, calls) {
  globalThis.fetch = async (url, init) => {
    calls.push({ url, headers: { ...init.headers } });
    const body = bodies.shift();
    if (!body) { await new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(new Error("aborted")))); }
    return { ok: true, status: 200, body: streamOf(body) };
  };
}

test("events are parsed, and a broken stream resumes with Last-Event-ID", async () => {
  const calls = [];
  const bodies = [
    ["retry: 1000\n: connected\n\n", "id: 7\nevent: device.registered\ndata: {\"seq\":7,", "\"user\":\"bob\"}\n\n", ": heartbeat\n\n",
     "id: 8\r\nevent: device.renamed\r\ndata: {\"seq\":8}\r\n\r\n"],
    ["id: 9\nevent: device.accessed\ndata: {\"seq\":9}\n\n"],
  ];
  const ac = new AbortController();
  const seen = [];
  serve(bodies, calls);
  const done = follow({
    onEvent: (seq, type, event) => { seen.push([seq, type, event?.seq]); if (seq === 9) ac.abort(); },
    onState: () => {},
    signal: ac.signal,
  });
  await done;
  assert.deepEqual(seen, [[7, "device.registered", 7], [8, "device.renamed", 8], [9, "device.accessed", 9]]);
  assert.equal(calls[0].url, "/v1/events");
  assert.equal(calls[0].headers.Authorization, "Bearer tok-123");
  assert.equal(calls[0].headers["Last-Event-ID"], undefined);
  assert.equal(calls[1].headers["Last-Event-ID"], "8");
});

test("a user's watch asks for devices and pending on one connection and reports their answers", async () => {
  const { watchUser } = await import("../../Sources/AuthLedgerServer/Console/live.js");
  const calls = [];
  const bodies = [[
    "retry: 1000\n\n",
    "id: 4\nevent: snapshot\ndata: {\"projection\":\"devices\",\"user\":\"a b\",\"answer\":{\"devices\":[]}}\n\n",
    "id: 4\nevent: snapshot\ndata: {\"projection\":\"pending\",\"user\":\"a b\",\"answer\":[]}\n\n",
    "id: 9\nevent: progress\ndata: {\"position\":9}\n\n",
    "id: 12\nevent: changed\ndata: {\"projection\":\"pending\",\"user\":\"a b\",\"answer\":[{\"challengeId\":\"c1\"}]}\n\n",
  ], []];
  const ac = new AbortController();
  const seen = [];
  serve(bodies, calls);
  const done = watchUser("a b", { signal: ac.signal, onAnswer: (p, a, id) => { seen.push([p, a, id]); if (seen.length === 3) setTimeout(() => ac.abort(), 1200); } });
  await done;
  assert.equal(calls[0].url, "/v1/watch?devices=a%20b&pending=a%20b&includeRevoked=true");
  assert.deepEqual(seen, [["devices", { devices: [] }, 4], ["pending", [], 4], ["pending", [{ challengeId: "c1" }], 12]]);
  // The reconnection resumes after the last id (the progress's included)
  assert.equal(calls[1].headers["Last-Event-ID"], "12");
});
