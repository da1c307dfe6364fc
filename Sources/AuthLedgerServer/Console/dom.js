// DOM building with text only: data from the API is put in with textContent (through
// text nodes), never parsed as HTML.

/** A new element: `attrs` set as attributes (a `class` too), children appended (strings as text nodes). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) append(e, c);
  return e;
}

/** Appends a child: a Node as it is, anything else as text; arrays flattened; null skipped. */
export function append(parent, child) {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) { for (const c of child) append(parent, c); return; }
  parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
}

/** Replaces every child of `parent`. */
export function fill(parent, ...children) {
  parent.replaceChildren();
  for (const c of children) append(parent, c);
}

/** The element with this id. */
export const $ = (id) => document.getElementById(id);

/** Whether `v` is a commitment {"_sd": D} (an erased personal value). */
export function isCommitment(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v) && typeof v._sd === "string" && Object.keys(v).length === 1;
}

/** An erased value: the word *erased* and its commitment. */
export function erased(commitment) {
  return el("span", { class: "erased-value" }, el("em", { class: "erased" }, "erased"),
    commitment ? [" ", el("code", { title: "commitment (SHA-256 of salt and value)" }, "_sd:" + commitment)] : null);
}

/** A status line: a word that says the outcome (`ok` true/false styles it) and the rest. */
export function outcome(ok, word, rest) {
  return [el("span", { class: ok ? "ok" : "bad" }, word), rest ? " " + rest : ""];
}
