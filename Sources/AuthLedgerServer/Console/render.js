// The user's views rendered from the API's answers: the Devices table, Cooling, Pending
// challenges, and a history row's summary. Names are text, never markup.
import { $, el, erased, fill, isCommitment } from "./dom.js";

const cell = (v) => (v === null || v === undefined ? "" : String(v));

/** The commitment of the device's name in the history (its last name event), if erased. */
function nameCommitment(deviceId, events) {
  for (let i = events.length - 1; i >= 0; i--) {
    const d = events[i].data || {};
    if (d.deviceId === deviceId && "name" in d) return isCommitment(d.name) ? d.name._sd : null;
  }
  return null;
}

/** The Devices table from a devices answer ({devices: [...], erased?}). */
export function renderDevices(answer, events) {
  const rows = (answer.devices || []).map((d) => {
    const name = d.name === null && answer.erased ? erased(nameCommitment(d.deviceId, events)) : cell(d.name);
    return el("tr", { "data-device": d.deviceId },
      el("td", { class: "mono" }, cell(d.deviceId)), el("td", {}, name), el("td", {}, cell(d.kind)),
      el("td", {}, cell(d.status)), el("td", {}, cell(d.via)), el("td", { class: "time" }, cell(d.registeredAt)),
      el("td", { class: "time" }, cell(d.lastAccessAt)), el("td", { class: "mono" }, cell(d.keyThumbprint)));
  });
  if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 8 }, "No devices at this position.")));
  fill($("devices").tBodies[0], rows);
}

/** The Cooling region from a cooling answer (or the devices answer's `cooling`). */
export function renderCooling(c) {
  if (!c) { fill($("cooling-text"), "Unknown."); return; }
  fill($("cooling-text"), c.active ? `Active until ${c.until}: registering, renaming and revoking devices are refused until then.` : "Not active.");
}

/** The Pending challenges region from a pending answer (an array, or {pending: [...]}). */
export function renderPending(answer) {
  const items = Array.isArray(answer) ? answer : answer.pending || answer.challenges || [];
  if (items.length === 0) { fill($("pending-list"), el("li", {}, "None.")); return; }
  fill($("pending-list"), items.map((c) => el("li", {},
    el("code", {}, cell(c.challengeId)), ` ${cell(c.action)} from ${cell(c.requestingDeviceId)}, expires ${cell(c.expiresAt)}`,
    c.context ? [" (", summaryParts(c.context), ")"] : null)));
}

/** `key: value` parts of an object, nested objects flattened (`context.ip`), erased values marked. */
export function summaryParts(data, prefix = "") {
  const parts = [];
  for (const [k, v] of Object.entries(data || {})) {
    if (parts.length) parts.push(", ");
    const key = prefix + k;
    if (isCommitment(v)) parts.push(key + ": ", erased(v._sd));
    else if (v === null) parts.push(key + ": ", erased(null));
    else if (typeof v === "object") parts.push(...summaryParts(v, key + "."));
    else parts.push(`${key}: ${v}`);
  }
  return parts;
}

/** A history row's summary: the event's data, and its meta's erased or clear ip, actor and caller (who appended it). */
export function summary(event) {
  const parts = summaryParts(event.data);
  const meta = event.meta || {};
  if (meta.actor) parts.push(parts.length ? " · " : "", `by ${meta.actor}`);
  if (meta.caller) parts.push(parts.length ? " · " : "", `via ${meta.caller}`);
  if (meta.ip !== undefined) parts.push(" · ip: ", isCommitment(meta.ip) ? erased(meta.ip._sd) : String(meta.ip));
  return parts;
}
