// RFC 8785 JSON Canonicalization Scheme (JCS): object keys sorted by their UTF-16 code
// units, no white space, strings escaped as ECMAScript's JSON.stringify does, numbers in
// ECMAScript's shortest form (what JSON.stringify writes for a finite number).

/** The canonical JSON text of `value` (plain JSON data: objects, arrays, strings, numbers, booleans, null). */
export function canonicalize(value) {
  if (value === null || typeof value === "boolean" || typeof value === "string") {
    return JSON.stringify(value);
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error("JCS: a number must be finite");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return "[" + value.map(canonicalize).join(",") + "]";
  }
  if (typeof value === "object") {
    // Default sort compares UTF-16 code units, as RFC 8785 section 3.2.3 asks.
    const keys = Object.keys(value).sort();
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonicalize(value[k])).join(",") + "}";
  }
  throw new Error("JCS: not JSON data: " + typeof value);
}

/** The UTF-8 bytes of the canonical JSON of `value`. */
export function canonicalBytes(value) {
  return new TextEncoder().encode(canonicalize(value));
}
