// Each view's URL: the hash holds the view's parameters (a user's: user, at, from, type,
// since, until, page; the front page's: older, prefix, after) as a query string; never the token. A link with "#token=…" (the one
// `authledger serve --dev` prints) signs in: the page moves the token to sessionStorage
// and takes it out of the address bar before anything else runs.

const KEYS = ["user", "at", "from", "type", "since", "until", "page", "older", "prefix", "after"];

/** The token of a sign-in link, removed from the address bar; null when there is none. */
export function takeTokenFromFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token === null) return null;
  params.delete("token");
  const rest = params.toString();
  history.replaceState(null, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  return token;
}

/** The view's parameters from the address bar. */
export function readRoute() {
  const params = new URLSearchParams(location.hash.slice(1));
  const out = {};
  for (const k of KEYS) if (params.has(k)) out[k] = params.get(k);
  return out;
}

/** Puts the view's parameters in the address bar (a new history entry when `push`). */
export function writeRoute(view, { push = false } = {}) {
  const params = new URLSearchParams();
  for (const k of KEYS) if (view[k] !== undefined && view[k] !== null && view[k] !== "") params.set(k, String(view[k]));
  const hash = params.toString();
  const url = location.pathname + location.search + (hash ? "#" + hash : "");
  if (url === location.pathname + location.search + location.hash) return;
  if (push) history.pushState(null, "", url); else history.replaceState(null, "", url);
}
