// The front page, shown before any user is chosen: The log (its size and newest
// checkpoint, verified here against the pinned key as Verify does; the witnesses when the
// server has a policy), Recent events (the newest first, a page of 50, paged back; the Live
// feed adds to the newest page) and Users (by key prefix, paged, from GET /v1/users).
// Every user is a link to that user's view; every page of it has its own URL.
import { ApiError, get, getJSON, savedToken } from "./api.js";
import { $, el, fill, outcome } from "./dom.js";
import { verifyCheckpoint } from "./note.js";
import { cannotVerify, fetchCheckpoint, pinnedKey } from "./proof.js";
import { sseFrames } from "./live.js";
import { writeRoute } from "./route.js";

const RECENT = 50;
const USERS = 50;

// older: the Recent events page ends before this seq (null: the newest page);
// prefix/after: the Users page; head: the log's last seq when the page was read.
const h = { older: null, prefix: "", after: "", head: 0, gen: 0, pages: [] };

/** A link to `user`'s view (its URL is the view's: a deep link). */
export function userLink(user) {
  return el("a", { href: "#" + new URLSearchParams({ user }).toString() }, user);
}

function route(push = false) {
  writeRoute({ older: h.older ?? "", prefix: h.prefix, after: h.after }, { push });
}

/** The log's size and newest checkpoint, checked here against the pinned key; the witnesses. */
export async function showLog() {
  const out = $("log-checkpoint");
  delete out.dataset.ok;
  fill(out, "Checkpoint: reading…");
  let cp;
  try {
    cp = await fetchCheckpoint();
  } catch (e) {
    fill(out, "Checkpoint: ", e instanceof ApiError && e.status === 403
      ? "this token has no audit scope: the checkpoint cannot be read." : `not read (${e.message}).`);
    return;
  }
  const no = cannotVerify();
  const key = pinnedKey();
  let r;
  if (no) r = { ok: false, text: `Cannot verify: ${no}.` };
  else if (!key) r = { ok: false, text: "Not verified: no verifier key is pinned (pin one under Verifier key)." };
  else {
    const v = await verifyCheckpoint(cp.text, key);
    if (!v.ok) r = { ok: false, text: `Not verified: ${v.why}.` };
    else {
      const names = v.cosignatures.map((c) => c.name);
      r = { ok: true, size: v.checkpoint.size, text: `Verified: the log ${v.checkpoint.origin} holds ${v.checkpoint.size} events,` +
        ` signed by the pinned key.${cp.witnessed ? "" : " Not witnessed yet (the log's own checkpoint)."}` +
        (names.length ? ` Cosignatures (not checked: no witness policy pinned): ${names.join(", ")}.` : "") };
    }
  }
  const [word, ...rest] = r.text.split(":");
  fill(out, "Checkpoint: ", outcome(r.ok, word + ":", rest.join(":").trim()));
  out.dataset.ok = String(r.ok);
  if (r.ok) out.dataset.size = String(r.size);
  showWitnesses();
}

/** The witnesses' state (GET /health lists them when the server has a witness policy). */
async function showWitnesses() {
  let list = null;
  try { list = (await getJSON("/health", { token: null })).witnesses ?? null; } catch { /* no witnesses shown */ }
  $("witnesses-box").hidden = !list;
  if (!list) return;
  fill($("witnesses"), list.length ? list.map((w) => el("li", { "data-witness": w.witness },
    el("strong", {}, String(w.witness)), ": ",
    w.size === null ? "has cosigned nothing yet" : `holds size ${w.size}`,
    w.behind > 0 ? `, ${w.behind} events behind` : ", up to date",
    w.users ? `; of the index log ${w.users.size === null ? "nothing yet" : `size ${w.users.size}`}${w.users.behind > 0 ? `, ${w.users.behind} entries behind` : ", up to date"}` : null,
    w.error ? [" — ", el("span", { class: "bad" }, "last error:"), " " + String(w.error)] : null)) : el("li", {}, "The policy names no witness."));
}

/**
 * Reads the events with seq `from`…`to` from the feed (/v1/events, Server-Sent Events,
 * with fetch: the Authorization header goes along), then stops: their recorded forms in order.
 */
async function readEvents(from, to) {
  const ctrl = new AbortController();
  const res = await fetch(`/v1/events?from=${from}`, {
    headers: { Authorization: "Bearer " + savedToken(), Accept: "text/event-stream" }, signal: ctrl.signal, cache: "no-store", credentials: "omit",
  });
  if (!res.ok) {
    let code, message;
    try { ({ error: code, message } = await res.json()); } catch { /* no body */ }
    throw new ApiError(res.status, code, message);
  }
  const events = [];
  try {
    for await (const frame of sseFrames(res.body)) {
      events.push(JSON.parse(frame.data));
      if (events[events.length - 1].seq >= to) break;
    }
  } finally {
    ctrl.abort();
  }
  return events.filter((e) => e.seq <= to);
}

function eventRow(e) {
  return el("tr", { "data-seq": e.seq },
    el("td", { class: "seq" }, String(e.seq)), el("td", { class: "time" }, String(e.at)), el("td", {}, String(e.type)),
    el("td", {}, e.user === undefined || e.user === null ? el("em", {}, "the log's policy") : userLink(e.user)));
}

/** The Recent events page ending before `h.older` (the newest page when null), newest first. */
async function showRecent() {
  const gen = ++h.gen;
  fill($("recent-status"), "Reading the recent events…");
  try {
    const head = (await getJSON("/v1/users?limit=1")).position;
    if (gen !== h.gen) return;
    h.head = head;
    const to = h.older === null ? head : Math.min(h.older - 1, head);
    const from = Math.max(1, to - RECENT + 1);
    const events = to >= 1 ? await readEvents(from, to) : [];
    if (gen !== h.gen) return;
    events.reverse();
    fill($("recent").tBodies[0], events.length ? events.map(eventRow) : el("tr", {}, el("td", { colspan: 4 }, "No events.")));
    fill($("recent-status"), events.length
      ? `Events ${events[events.length - 1].seq}–${events[0].seq} of ${head}, newest first${h.older === null ? "; the Live feed adds new ones here" : ""}.`
      : "The log is empty.");
    $("recent-newer").disabled = h.older === null;
    $("recent-older").disabled = from <= 1;
    $("recent").dataset.from = String(from);
    document.body.dataset.recent = String(to);
  } catch (e) {
    if (gen === h.gen) fill($("recent-status"), `Could not read the events: ${e.message}`);
  }
}

/** A new event of the Live feed: on top of the newest page of Recent events. */
export function addRecent(event) {
  if ($("home").hidden || h.older !== null || !event || !Number.isSafeInteger(event.seq)) return;
  const body = $("recent").tBodies[0];
  if (body.querySelector(`tr[data-seq="${event.seq}"]`)) return;
  if (!body.querySelector("tr[data-seq]")) body.replaceChildren();
  body.prepend(eventRow(event));
  while (body.children.length > RECENT) body.lastElementChild.remove();
}

/** The Users page of `h.prefix` after `h.after`. */
async function showUsers() {
  fill($("users-status"), "Searching…");
  try {
    const q = new URLSearchParams({ prefix: h.prefix, limit: String(USERS) });
    if (h.after) q.set("after", h.after);
    const list = await getJSON(`/v1/users?${q}`);
    const rows = list.users.map((u) => el("tr", { "data-user": u.user },
      el("td", {}, userLink(u.user)), el("td", { class: "seq" }, String(u.events)),
      el("td", { class: "seq" }, String(u.lastSeq)), el("td", { class: "time" }, String(u.lastAt ?? ""))));
    fill($("users").tBodies[0], rows.length ? rows : el("tr", {}, el("td", { colspan: 4 }, "No user with this prefix.")));
    const what = h.prefix ? `Users whose key starts with “${h.prefix}”` : "Users";
    fill($("users-status"), `${what}${h.after ? ` after “${h.after}”` : ""}: ${list.users.length}${list.next ? ", more on the next page" : ""}.`);
    $("users-next").disabled = !list.next;
    $("users-next").dataset.after = list.next ?? "";
    $("users-first").disabled = !h.after;
    document.body.dataset.users = h.prefix + "|" + h.after;
  } catch (e) {
    fill($("users-status"), e instanceof ApiError && e.status === 400 ? `Not a prefix: ${e.message}` : `Could not list the users: ${e.message}`);
  }
}

/** Shows the front page with the view of route `r` (older, prefix, after). */
export async function showHome(r = {}) {
  $("home").hidden = false;
  $("user-view").hidden = true;
  h.older = r.older ? Number(r.older) : null;
  h.prefix = r.prefix ?? "";
  h.after = r.after ?? "";
  $("prefix").value = h.prefix;
  await Promise.all([showRecent(), showUsers(), showLog()]);
}

/** Hides the front page (a user is shown). */
export function hideHome() { $("home").hidden = true; }

/** Wires the front page's controls (once). */
export function wireHome() {
  $("recent-older").addEventListener("click", () => { h.older = Number($("recent").dataset.from); route(true); showRecent(); });
  $("recent-newer").addEventListener("click", () => {
    const next = (h.older ?? h.head + 1) + RECENT;
    h.older = next > h.head ? null : next;
    route(true);
    showRecent();
  });
  $("users-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    h.prefix = $("prefix").value;
    h.after = "";
    route(true);
    showUsers();
  });
  $("users-next").addEventListener("click", () => { h.after = $("users-next").dataset.after; route(true); showUsers(); });
  $("users-first").addEventListener("click", () => { h.after = ""; route(true); showUsers(); });
}
