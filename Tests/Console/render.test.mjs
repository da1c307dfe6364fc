// The history row's summary: the console shows who acted (meta.actor) and who appended the
// event through the service (meta.caller). Pure strings for these events: no DOM needed.
import { test } from "node:test";
import assert from "node:assert/strict";

const { summary } = await import("../../Sources/AuthLedgerServer/Console/render.js");

test("a history row names the actor and the caller", () => {
  const text = summary({ data: { deviceId: "p1" }, meta: { actor: "service:ci", caller: "token:ci" } }).join("");
  assert.equal(text, "deviceId: p1 · by service:ci · via token:ci");
});

test("an event from before callers were recorded shows no caller", () => {
  const text = summary({ data: { deviceId: "p1" }, meta: { actor: "device:p1" } }).join("");
  assert.equal(text, "deviceId: p1 · by device:p1");
});

test("a caller from a client certificate is shown as recorded", () => {
  const text = summary({ data: {}, meta: { caller: "cert:spiffe://example.org/mailer" } }).join("");
  assert.equal(text, "via cert:spiffe://example.org/mailer");
});
