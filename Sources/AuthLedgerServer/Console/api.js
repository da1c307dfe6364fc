// The HTTP API, with the signed-in token in the Authorization header (same origin only:
// every path here is absolute on this server). The token lives in sessionStorage, never
// in a URL.

const TOKEN_KEY = "authledger.token";

/** The token of this tab's session, or null. */
export function savedToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** Keeps (or, with null, forgets) the token for this tab's session. */
export function saveToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** An answer that is not 2xx: its status, the API's error code and message. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

/** Encodes one path segment (a user key or a device id may hold any character). */
export const seg = (s) => encodeURIComponent(s);

/** GET `path` (absolute, this origin); `as`: "json" (default) or "text". Throws ApiError. */
export async function get(path, { as = "json", token = savedToken(), signal } = {}) {
  if (!path.startsWith("/")) throw new Error("API paths are absolute on this origin");
  const headers = {};
  if (token) headers.Authorization = "Bearer " + token;
  const res = await fetch(path, { headers, signal, credentials: "omit", cache: "no-store" });
  const text = await res.text();
  if (!res.ok) {
    let code, message;
    try { ({ error: code, message } = JSON.parse(text)); } catch { message = text.slice(0, 200); }
    throw new ApiError(res.status, code, message);
  }
  return { body: as === "json" ? JSON.parse(text) : text, headers: res.headers };
}

/** The JSON body of GET `path`. */
export async function getJSON(path, opts) {
  return (await get(path, opts)).body;
}
