// Server-Sent Events read with fetch, so the Authorization header goes along (an
// EventSource cannot send it); after a break a stream reconnects with Last-Event-ID (the
// server resumes right after it: the feed with no gap and no duplicate, a watch without
// repeating its snapshot). The Live region follows /v1/events; the user view watches the
// shown user's answers (/v1/watch).
import { savedToken } from "./api.js";

/**
 * The frames of a Server-Sent Events body, as they come: `{id, event, data}` (strings; `id`
 * and `event` undefined when the frame has none) for each frame that has data. Comments
 * (`:` lines, heartbeats) are skipped.
 */
export async function* sseFrames(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "", frame = {};
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        if (line === "") {
          if (frame.data !== undefined) yield frame;
          frame = {};
        } else if (!line.startsWith(":")) {
          const c = line.indexOf(":");
          const field = c < 0 ? line : line.slice(0, c);
          const value = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
          if (field === "data") frame.data = frame.data === undefined ? value : frame.data + "\n" + value;
          else if (field === "id" || field === "event") frame[field] = value;
        }
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Reads `path` as Server-Sent Events until `signal` aborts, reconnecting after a break:
 * `onFrame(id, event, data)` for each event (data parsed as JSON, null if it is not),
 * `onState(last)` on each (re)connection (`last`: the Last-Event-ID sent, or null),
 * `onBreak(message)` when the stream broke.
 */
export async function stream(path, { onFrame, onState, onBreak, signal }) {
  let last = null;
  while (!signal.aborted) {
    try {
      const headers = { Authorization: "Bearer " + savedToken(), Accept: "text/event-stream" };
      if (last !== null) headers["Last-Event-ID"] = String(last);
      const res = await fetch(path, { headers, signal, cache: "no-store", credentials: "omit" });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      onState(last);
      for await (const frame of sseFrames(res.body)) {
        const id = Number(frame.id);
        if (Number.isSafeInteger(id)) last = id;
        let data = null;
        try { data = JSON.parse(frame.data); } catch { /* shown without details */ }
        onFrame(id, frame.event || "message", data);
      }
      onBreak("The stream ended; reconnecting…");
    } catch (e) {
      if (signal.aborted) return;
      onBreak(`Disconnected (${e.message}); reconnecting…`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * Follows the feed from the head until `signal` aborts: `onEvent(seq, type, event)` for
 * each event, `onState(text)` for the connection's state.
 */
export function follow({ onEvent, onState, signal }) {
  return stream("/v1/events", {
    signal, onFrame: onEvent, onBreak: onState,
    onState: (last) => onState(last === null ? "Connected: new events appear below." : `Reconnected after seq ${last}.`),
  });
}

/**
 * Watches `user`'s devices (revoked ones included) and pending challenges until `signal`
 * aborts: `onAnswer(projection, answer, position)` for each snapshot and change.
 */
export function watchUser(user, { onAnswer, signal }) {
  const u = encodeURIComponent(user);
  return stream(`/v1/watch?devices=${u}&pending=${u}&includeRevoked=true`, {
    signal, onState: () => {}, onBreak: () => {},
    onFrame: (id, event, data) => {
      if ((event === "snapshot" || event === "changed") && data && data.user === user) onAnswer(data.projection, data.answer, id);
    },
  });
}
