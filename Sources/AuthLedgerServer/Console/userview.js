// A user: devices, cooling and pending challenges at a position (the As of slider over the
// user's events, and Compare's From), and the history, paged and filtered in the page.
// The first page of the history and the current devices come first; the whole history
// (for the slider and the filters) is loaded behind them in large pages.
import { ApiError, getJSON, seg } from "./api.js";
import { $, el, fill, outcome } from "./dom.js";
import { cannotVerify, download, evidenceBundle, pinnedKey, verifyEvent } from "./proof.js";
import { checkUserHistory } from "./userproof.js";
import { watchUser } from "./live.js";
import { renderCooling, renderDevices, renderPending, summary } from "./render.js";
import { writeRoute } from "./route.js";

export const EVENT_TYPES = ["policy.set", "device.verification_requested", "device.registered", "device.renamed",
  "device.accessed", "device.push_token_updated", "device.revoked", "device.all_revoked", "challenge.issued",
  "challenge.approved", "challenge.denied", "challenge.expired", "otp.issued", "otp.failed", "otp.verified", "user.erased"];

const PAGE = Number(document.body.dataset.pageSize) || 100;
const BULK = 10_000;

const s = {
  gen: 0, user: null, events: [], bySeq: new Map(), complete: false, filtered: [], page: 1,
  at: null, from: null, compare: false, type: "", since: "", until: "", toAnswer: null, fromAnswer: null,
  wanted: null, querying: false, watch: null,
};

const q = (seq, at) => `?includeRevoked=true${seq === null ? "" : `&at=${seq}&asOf=${encodeURIComponent(at)}`}`;

/** The slider index of a seq (the last event at or before it); the end ("now") for null. */
function indexOf(seq) {
  if (seq === null) return s.events.length;
  let lo = 0, hi = s.events.length - 1, found = 0;
  while (lo <= hi) { const m = (lo + hi) >> 1; if (s.events[m].seq <= seq) { found = m; lo = m + 1; } else hi = m - 1; }
  return found;
}
const positionAt = (i) => (i >= s.events.length ? null : s.events[i]);
const valueText = (i) => { const e = positionAt(i); return e ? `seq ${e.seq}, ${e.at}, ${e.type}` : "now (the head)"; };

function route(push = false) {
  writeRoute({ user: s.user, at: s.at ?? "", from: s.compare ? s.from ?? "" : "", type: s.type, since: s.since, until: s.until, page: s.page > 1 ? s.page : "" }, { push });
}

/** Devices (with their cooling window) and pending challenges of the user at `e` (an event of theirs; null: now). */
async function stateAt(e) {
  const base = `/v1/users/${seg(s.user)}`;
  const p = e ? q(e.seq, e.at) : q(null);
  const [devices, pending] = await Promise.all([getJSON(base + "/devices" + p), getJSON(base + "/pending" + p)]);
  return { devices, cooling: devices.cooling, pending };
}

function renderState(answer, e) {
  s.toAnswer = answer;
  renderDevices(answer.devices, s.events);
  renderCooling(answer.cooling);
  renderPending(answer.pending);
  document.body.dataset.shownAt = e ? String(e.seq) : "now";
  if (s.compare) showChanges();
}

/** Watches the user's devices (with their cooling window) and pending challenges: while As
 *  of is at now, each new answer replaces the shown one (the regions update live). */
function startWatch(user, gen) {
  s.watch?.abort();
  s.watch = new AbortController();
  watchUser(user, {
    signal: s.watch.signal,
    onAnswer: (projection, answer, position) => {
      if (gen !== s.gen || !s.toAnswer || s.at !== null || s.querying) return;
      const next = { ...s.toAnswer };
      if (projection === "devices") Object.assign(next, { devices: answer, cooling: answer.cooling });
      else if (projection === "pending") next.pending = answer;
      else return;
      renderState(next, null);
      document.body.dataset.watched = String(position);
    },
  });
}

/** Moves As of to index `i`: the label and URL at once; the answer for the latest position
 *  only (moves made while a query runs collapse into one query for the last of them). */
async function showAt(i) {
  const e = positionAt(i);
  s.at = e ? e.seq : null;
  $("asof").setAttribute("aria-valuetext", valueText(i));
  fill($("asof-text"), valueText(i));
  route();
  s.wanted = i;
  if (s.querying) return;
  s.querying = true;
  try {
    while (s.wanted !== null) {
      const gen = s.gen, j = s.wanted;
      s.wanted = null;
      const answer = await stateAt(positionAt(j));
      if (gen === s.gen && s.wanted === null) renderState(answer, positionAt(j));
    }
  } finally {
    s.querying = false;
  }
}

async function showFrom(i) {
  const gen = s.gen;
  const e = positionAt(i);
  s.from = e ? e.seq : null;
  $("from").setAttribute("aria-valuetext", valueText(i));
  fill($("from-text"), valueText(i));
  route();
  const answer = await stateAt(e);
  if (gen !== s.gen) return;
  s.fromAnswer = answer;
  await showChanges();
}

/** Changes: one line per device added, revoked or renamed from the From position to As of. */
function showChanges() {
  if (!s.fromAnswer || !s.toAnswer) return;
  const before = new Map((s.fromAnswer.devices.devices || []).map((d) => [d.deviceId, d]));
  const lines = [];
  for (const d of s.toAnswer.devices.devices || []) {
    const b = before.get(d.deviceId);
    const label = d.name ? `${d.deviceId} (${d.name})` : d.deviceId;
    if ((!b || b.status === "pending") && d.status !== "pending") lines.push(`added: ${label}`);
    if (d.status === "revoked" && (!b || b.status !== "revoked")) lines.push(`revoked: ${label}`);
    if (b && b.name && d.name && b.name !== d.name) lines.push(`renamed: ${d.deviceId} from ${b.name} to ${d.name}`);
  }
  fill($("changes"), lines.length ? lines.map((t) => el("li", {}, t)) : el("li", {}, "No device added, revoked or renamed."));
  document.body.dataset.changes = String(lines.length);
}

function parseTime(text, label) {
  if (!text) return null;
  const t = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : text + "Z");
  if (Number.isNaN(t)) throw new Error(`${label} is not a time (e.g. 2026-03-01T09:00:00Z)`);
  return t;
}

function applyFilters() {
  const since = parseTime(s.since, "From time"), until = parseTime(s.until, "To time");
  s.filtered = s.events.filter((e) => (!s.type || e.type === s.type) &&
    (since === null || Date.parse(e.at) >= since) && (until === null || Date.parse(e.at) <= until));
}

function renderHistory() {
  const pages = Math.max(1, Math.ceil(s.filtered.length / PAGE));
  s.page = Math.min(Math.max(1, s.page), pages);
  const rows = s.filtered.slice((s.page - 1) * PAGE, s.page * PAGE);
  fill($("history").tBodies[0], rows.length ? rows.map(historyRow) : el("tr", {}, el("td", { colspan: 5 }, "No events.")));
  const first = rows.length ? (s.page - 1) * PAGE + 1 : 0;
  fill($("page-text"), `Events ${first}–${first + rows.length - 1 < first ? 0 : first + rows.length - 1} of ${s.filtered.length}${s.complete ? "" : " (loading…)"}, page ${s.page} of ${pages}`);
  $("prev").disabled = s.page <= 1;
  $("next").disabled = s.page >= pages;
}

function historyRow(e) {
  return el("tr", { "data-seq": e.seq },
    el("td", { class: "seq" }, String(e.seq)), el("td", { class: "time" }, e.at), el("td", {}, e.type),
    el("td", { class: "summary" }, summary(e)),
    el("td", { class: "proof" },
      el("button", { type: "button", "data-verify": e.seq, "aria-label": `Verify seq ${e.seq}` }, "Verify"),
      el("button", { type: "button", "data-evidence": e.seq, "aria-label": `Download evidence for seq ${e.seq}` }, "Evidence"),
      el("span", { class: "status", role: "status", id: `proof-${e.seq}` })));
}

function setEvents(list) {
  s.events = list;
  s.bySeq = new Map(list.map((e) => [e.seq, e]));
}

/** Opens `user` with the view of `r` (a route: at, from, type, since, until, page). */
export async function openUser(user, r = {}) {
  const gen = ++s.gen;
  Object.assign(s, { user, complete: false, page: Number(r.page) || 1, type: r.type || "", since: r.since || "", until: r.until || "",
    compare: r.from !== undefined, toAnswer: null, fromAnswer: null,
    // Kept in the URL until the history is loaded and they are applied.
    at: r.at ? Number(r.at) : null, from: r.from ? Number(r.from) : null });
  setEvents([]);
  s.watch?.abort();
  delete document.body.dataset.watched;
  fill($("complete"), "");
  delete $("complete").dataset.ok;
  $("user").value = user;
  $("type").value = s.type; $("since").value = s.since; $("until").value = s.until;
  fill($("user-name"), user);
  fill($("user-status"), `Loading ${user}…`);
  $("compare").setAttribute("aria-pressed", String(s.compare));
  $("compare-box").hidden = !s.compare;
  $("asof").disabled = true;
  route();
  let first;
  try {
    const [page, now] = await Promise.all([getJSON(`/v1/users/${seg(user)}/history?limit=${PAGE}`), stateAt(null)]);
    if (gen !== s.gen) return;
    first = page;
    setEvents(page);
    s.toAnswer = now;
    renderDevices(now.devices, s.events);
    renderCooling(now.cooling);
    renderPending(now.pending);
  } catch (e) {
    if (gen !== s.gen) return;
    $("user-view").hidden = true;
    fill($("user-status"), e instanceof ApiError && e.status === 404 ? `No user ${user} in the log.` : `Could not load ${user}: ${e.message}`);
    return;
  }
  $("user-view").hidden = false;
  try { applyFilters(); } catch (e) { fill($("history-status"), e.message); }
  renderHistory();
  document.body.dataset.firstPage = user;
  fill($("user-status"), `${user}: ${s.toAnswer.devices.erased ? "personal data erased; " : ""}loading the whole history…`);
  // The whole history, for the slider and the filters.
  let all = first.length < PAGE ? first : [];
  if (first.length >= PAGE) {
    for (let after = 0; ;) {
      const page = await getJSON(`/v1/users/${seg(user)}/history?after=${after}&limit=${BULK}`);
      if (gen !== s.gen) return;
      all = all.concat(page);
      if (page.length < BULK) break;
      after = page[page.length - 1].seq;
    }
  }
  setEvents(all);
  s.complete = true;
  try { applyFilters(); fill($("history-status"), ""); } catch (e) { fill($("history-status"), e.message); }
  renderHistory();
  for (const id of ["asof", "from"]) { $(id).max = String(s.events.length); }
  $("asof").disabled = false;
  const at = r.at ? indexOf(Number(r.at)) : s.events.length;
  $("asof").value = String(at);
  fill($("user-status"), `${user}: ${s.events.length} events${s.toAnswer.devices.erased ? "; personal data erased" : ""}.`);
  if (s.compare) { $("from").value = String(r.from ? indexOf(Number(r.from)) : 0); }
  await showAt(at);
  if (s.compare) await showFrom(Number($("from").value));
  if (gen === s.gen) startWatch(user, gen);
  document.body.dataset.loaded = user;
  await checkComplete(gen);
}

/** Completeness: the user's proof at the newest index log entry, checked in the page over
 *  the whole history it loaded (events appended since are fetched up to the proof's size). */
async function checkComplete(gen = s.gen) {
  const out = $("complete");
  delete out.dataset.ok;
  if (!s.complete) return;
  const no = cannotVerify();
  if (no) { fill(out, `Completeness: cannot check: ${no}.`); return; }
  const key = pinnedKey();
  if (!key) { fill(out, "Completeness: not checked: no verifier key is pinned (pin one under Verifier key)."); return; }
  fill(out, "Completeness: checking…");
  const started = performance.now();
  let r;
  try {
    const user = s.user;
    const proof = await getJSON(`/v1/users/${seg(user)}/proof`);
    let events = s.events;
    const newest = events.length ? events[events.length - 1].seq : 0;
    // The proof may be at a size the loaded history has not reached: fetch the rest.
    for (let after = newest; after < proof.size;) {
      const page = await getJSON(`/v1/users/${seg(user)}/history?after=${after}&limit=${BULK}`);
      if (gen !== s.gen) return;
      events = events.concat(page);
      if (page.length < BULK) break;
      after = page[page.length - 1].seq;
    }
    r = await checkUserHistory(user, proof, events, key);
  } catch (e) {
    r = { ok: false, text: `Not complete: ${e.message}.` };
  }
  if (gen !== s.gen) return;
  const [word, ...rest] = r.text.split(":");
  fill(out, outcome(r.ok, word + ":", rest.join(":").trim()));
  out.dataset.ms = (performance.now() - started).toFixed(1);
  out.dataset.ok = String(r.ok);
}

async function onVerify(seq) {
  const e = s.bySeq.get(seq);
  const out = $(`proof-${seq}`);
  if (!e || !out) return;
  delete out.dataset.ok;
  fill(out, "Checking…");
  const r = await verifyEvent(e);
  const [word, ...rest] = r.text.split(":");
  fill(out, outcome(r.ok, word + ":", rest.join(":").trim()));
  out.dataset.ms = r.ms.toFixed(1);
  out.dataset.ok = String(r.ok);
}

async function onEvidence(events, name, statusEl) {
  try {
    const bundle = await evidenceBundle(events);
    download(bundle, name);
    if (statusEl) fill(statusEl, `Evidence downloaded: ${bundle.events.length} event(s) against the checkpoint of size ${bundle.proofs[0]?.treeSize ?? "?"}.`);
  } catch (e) {
    if (statusEl) fill(statusEl, `No evidence: ${e.message}`);
  }
}

/** Wires the user view's controls (once). */
export function wireUserView() {
  for (const t of EVENT_TYPES) $("type").append(el("option", { value: t }, t));
  $("asof").addEventListener("input", () => showAt(Number($("asof").value)));
  $("from").addEventListener("input", () => showFrom(Number($("from").value)));
  $("compare").addEventListener("click", () => {
    s.compare = !s.compare;
    $("compare").setAttribute("aria-pressed", String(s.compare));
    $("compare-box").hidden = !s.compare;
    $("from").max = String(s.events.length);
    if (s.compare) showFrom(Number($("from").value)); else { s.from = null; route(); }
  });
  $("filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    Object.assign(s, { type: $("type").value, since: $("since").value.trim(), until: $("until").value.trim(), page: 1 });
    try { applyFilters(); fill($("history-status"), `${s.filtered.length} events match.`); } catch (e) { fill($("history-status"), e.message); return; }
    renderHistory();
    route(true);
  });
  $("prev").addEventListener("click", () => { s.page--; renderHistory(); route(); });
  $("next").addEventListener("click", () => { s.page++; renderHistory(); route(); });
  $("history").addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (!b) return;
    if (b.dataset.verify) onVerify(Number(b.dataset.verify));
    if (b.dataset.evidence) {
      const e = s.bySeq.get(Number(b.dataset.evidence));
      if (e) onEvidence([e], `evidence-${s.user}-seq-${e.seq}.json`, $(`proof-${e.seq}`));
    }
  });
  $("check-complete").addEventListener("click", () => checkComplete());
  $("evidence-page").addEventListener("click", () => {
    const rows = s.filtered.slice((s.page - 1) * PAGE, s.page * PAGE);
    onEvidence(rows, `evidence-${s.user}-page-${s.page}.json`, $("history-status"));
  });
}
